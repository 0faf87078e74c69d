package claude

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
)

func follow(t testing.TB, b []byte) (*runState, *conformance.Recorder, error) {
	rec := conformance.NewRecorder(nil)
	a := New(Settings{MaxTurns: 10, APIKeyEnv: "THE_KEY", APIKey: "k"})
	var cause error
	st := &runState{a: a, cb: rec.For("t"), ctx: context.Background(), cancel: func(err error) { cause = err }, msgs: map[string]bool{}}
	err := st.read(bytes.NewReader(b))
	if cause != nil {
		err = cause
	}
	return st, rec, err
}

// TestRecordedStreams reads what the real Claude Code wrote (recorded
// against internal/fakeapi, in testdata) as a run does.
func TestRecordedStreams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file     string
		subtype  string
		toolUses int
		auth     bool
	}{
		{"denied-and-failed.jsonl", "success", 3, false},
		{"resumed.jsonl", "success", 1, false},
		{"max-turns.jsonl", "error_max_turns", 2, false},
		{"auth-retries.jsonl", "", 0, true},
	} {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			st, rec, err := follow(t, b)
			if c.auth {
				if !errors.Is(err, ErrAuth) || !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "THE_KEY") {
					t.Errorf("error %v, want a permanent refused key naming THE_KEY", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.result == nil || st.result.Subtype != c.subtype {
				t.Fatalf("result %+v, want subtype %s", st.result, c.subtype)
			}
			if st.toolUses != c.toolUses {
				t.Errorf("%d tool uses, want %d", st.toolUses, c.toolUses)
			}
			if st.result.Usage.CacheRead+st.result.Usage.CacheWrite == 0 || st.result.cost(0) <= 0 {
				t.Errorf("usage %+v, cost %v: want Claude Code's", st.result.Usage, st.result.cost(0))
			}
			if len(rec.Progress("t")) == 0 {
				t.Error("no progress from the assistant's messages")
			}
		})
	}
}

// TestCostSinceLastResult: a resumed session's result reports the
// session's total; the task's cost is what it added.
func TestCostSinceLastResult(t *testing.T) {
	t.Parallel()
	l, err := parseLine([]byte(`{"type":"result","total_cost_usd":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.cost(0.3); got < 0.1999 || got > 0.2001 {
		t.Errorf("cost %v, want 0.2 (0.5 less the 0.3 before)", got)
	}
	l, _ = parseLine([]byte(`{"type":"result","total_cost_usd":0.5,"model_usage_since_last_result":{"a":{"costUSD":0.04},"b":{"costUSD":0.01}}}`))
	if got := l.cost(0.3); got < 0.0499 || got > 0.0501 {
		t.Errorf("cost %v, want 0.05 (the models' since the last result)", got)
	}
}

// FuzzStream: whatever claude writes, reading it never panics, and a
// result is only ever a result line.
func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("{\"type\":\"system\",\"subtype\":\"api_retry\",\"error_status\":429}\nnot json\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, _, _ := follow(t, b)
		if st.result != nil && st.result.Type != "result" {
			t.Fatalf("result of type %q", st.result.Type)
		}
	})
}

// TestImportStateRefuses: state that could lead claude astray (a session
// ID that is not a UUID, a transcript path out of the config directory)
// is refused, never written or run.
func TestImportStateRefuses(t *testing.T) {
	t.Parallel()
	for _, st := range []string{
		`{"version":1,"session_id":"--dangerously-skip-permissions"}`,
		`{"version":1,"session_id":"11111111-2222-3333-4444-555555555555","transcript":{"path":"../../x/11111111-2222-3333-4444-555555555555.jsonl","gzip":""}}`,
		`{"version":1,"session_id":"11111111-2222-3333-4444-555555555555","transcript":{"path":"projects/p/other.jsonl","gzip":""}}`,
		`{"version":2}`,
		`not json`,
	} {
		a := New(Settings{APIKeyEnv: "K", APIKey: "k"})
		if err := a.ImportState(context.Background(), []byte(st)); err == nil {
			t.Errorf("state %s imported", st)
		}
	}
}
