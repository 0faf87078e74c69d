package pool

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/matcher"
)

// testSpec is a plugin agent's spec as the tests of this package use it:
// the values a config file without a pool block gives (this package's
// defaults, WithDefaults), a program that is never started, and
// workspace /w.
func testSpec(agent string) Spec {
	mc := matcher.DefaultConfig()
	mc.IdleTimeout = 0 // the pool's, as the engine leaves it unset
	return Spec{
		Agent:     agent,
		Launch:    process.Launch{Argv: []string{"/nonexistent/" + agent}, StartTimeout: 10 * time.Second},
		Workspace: "/w", TaskTimeout: 10 * time.Minute,
		WhenFull: hearth.WhenFullWait, Placement: hearth.PlacementMatcher,
		Matcher: mc,
	}.WithDefaults()
}

// TestSpecWithDefaults: every setting left zero gets the pool's default,
// an external agent's max_sessions its own, a negative max_dormant means
// keep none, the matcher's freshness ends at the pool's idle timeout, and
// a setting given is kept.
func TestSpecWithDefaults(t *testing.T) {
	got := Spec{Agent: "a"}.WithDefaults()
	want := Spec{Agent: "a", MaxSessions: 4, IdleTimeout: 30 * time.Minute, MaxDormant: 64,
		Fingerprint: Limits{MaxFiles: 1000, MaxDirectories: 256, MaxTechnologies: 32},
		Matcher:     matcher.Config{IdleTimeout: 30 * time.Minute}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	if got := (Spec{External: hearth.ExternalClaudeCode}).WithDefaults(); got.MaxSessions != 16 || got.MaxDormant != 64 {
		t.Errorf("external: got max_sessions %d, max_dormant %d, want 16, 64", got.MaxSessions, got.MaxDormant)
	}
	set := Spec{MaxSessions: 2, IdleTimeout: time.Minute, MaxDormant: -1, Fingerprint: Limits{MaxFiles: 5, MaxDirectories: 6, MaxTechnologies: 7}}.WithDefaults()
	if set.MaxSessions != 2 || set.IdleTimeout != time.Minute || set.MaxDormant != 0 || set.Fingerprint != (Limits{5, 6, 7}) || set.Matcher.IdleTimeout != time.Minute {
		t.Errorf("settings given: got %+v", set)
	}
	if m := (Spec{Matcher: matcher.Config{IdleTimeout: time.Hour}}).WithDefaults().Matcher; m.IdleTimeout != time.Hour {
		t.Errorf("a matcher idle timeout given: got %s, want 1h", m.IdleTimeout)
	}
}

// TestSpecCheck: a spec a pool cannot run with is refused by New and
// Update, naming the setting; the engine's mapping from the config file
// is held to it.
func TestSpecCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"complete", func(*Spec) {}, ""},
		{"external needs no program", func(s *Spec) { s.External, s.Launch = "claude-code", process.Launch{} }, ""},
		{"no name", func(s *Spec) { s.Agent = "" }, "no name"},
		{"no program", func(s *Spec) { s.Launch.Argv = nil }, "no program"},
		{"no sessions", func(s *Spec) { s.MaxSessions = 0 }, "max_sessions 0"},
		{"negative dormant", func(s *Spec) { s.MaxDormant = -1 }, "max_dormant -1"},
		{"no idle timeout", func(s *Spec) { s.IdleTimeout = 0 }, "idle_timeout"},
		{"no task timeout", func(s *Spec) { s.TaskTimeout = 0 }, "task_timeout"},
		{"unknown when_full", func(s *Spec) { s.WhenFull = "panic" }, `when_full "panic"`},
		{"unknown placement", func(s *Spec) { s.Placement = "random" }, `placement "random"`},
		{"empty fingerprint", func(s *Spec) { s.Fingerprint.MaxFiles = 0 }, "fingerprint limits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec("coder")
			tc.change(&s)
			err := s.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if tc.want == "" {
				return
			}
			if _, err := New(s, Deps{}); err == nil {
				t.Error("New took it")
			}
		})
	}
}
