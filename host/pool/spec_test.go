package pool

import (
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/matcher"
)

// testSpec is a plugin agent's spec as the tests of this package use it:
// the values a config file without a pool block gives (package config's
// defaults), a program that is never started, and workspace /w.
func testSpec(agent string) Spec {
	mc := matcher.DefaultConfig()
	mc.IdleTimeout = 30 * time.Minute
	return Spec{
		Agent:     agent,
		Launch:    process.Launch{Argv: []string{"/nonexistent/" + agent}, StartTimeout: 10 * time.Second},
		Workspace: "/w", TaskTimeout: 10 * time.Minute,
		MaxSessions: 4, IdleTimeout: 30 * time.Minute, MaxDormant: 64,
		WhenFull: hearth.WhenFullWait, Placement: hearth.PlacementMatcher,
		Fingerprint: Limits{MaxFiles: 1000, MaxDirectories: 256, MaxTechnologies: 32},
		Matcher:     mc,
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
