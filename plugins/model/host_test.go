package model_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// hostConfig is a config with one model agent, "ask", served by this test
// binary as a real plugin subprocess and talking to f, and a guard that
// keeps it out of secrets.
func hostConfig(t *testing.T, f *fakeapi.Server, provider, ws, extra string) *config.Config {
	t.Helper()
	t.Setenv("FAKE_MODEL_KEY", testKey)
	base := f.URL + "/"
	if provider == "openai" {
		base = f.URL + "/v1/"
	}
	src := fmt.Sprintf(`
agent "ask" {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  model {
    provider    = %q
    model       = "test-model"
    base_url    = %q
    api_key_env = "FAKE_MODEL_KEY"
    %s
    prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*')"
  message   = "secrets are off limits"
}
`, os.Args[0], envServe, ws, provider, base, extra)
	cfg, err := config.Parse([]byte(src), filepath.Join(t.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// syncBuffer is a log the host and its plugins write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startHost(t testing.TB, cfg *config.Config, dir string, log *syncBuffer) *engine.Engine {
	t.Helper()
	c := *cfg
	c.DataDir = dir
	h, err := engine.New(engine.Options{Config: &c, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: log})})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func submit(t *testing.T, h *engine.Engine, prompt, dir string) *hearth.Outcome {
	t.Helper()
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "ask", Prompt: prompt, Hints: sdk.Hints{Directories: []string{dir}}})
	if err != nil {
		t.Fatalf("%s: %v", prompt, err)
	}
	return out
}

// TestUnderHost runs the model agent as hearth runs it: a plugin
// subprocess configured by a model block, placed by the matcher, guarded,
// persisted and rehydrated by a second host on the same data directory.
func TestUnderHost(t *testing.T) {
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws, dir := fake(t), workspace(t), t.TempDir()
		cfg := hostConfig(t, f, provider, ws, "")
		if a := cfg.Agent("ask"); !slices.Contains(a.PassEnv, "FAKE_MODEL_KEY") {
			t.Fatalf("the model block did not pass the key's variable: pass_env %q", a.PassEnv)
		}
		var log syncBuffer
		h := startHost(t, cfg, dir, &log)

		q1 := submit(t, h, "What does alpha do? ask:pkg/alpha", "pkg/alpha")
		q2 := submit(t, h, "Which function returns 42? ask:pkg/alpha", "pkg/alpha")
		if q1.Decision.Action != hearth.ActionSpawned || q2.Decision.Action != hearth.ActionReused || q2.Session != q1.Session {
			t.Fatalf("placements %s, %s; want the second question on the first one's session", q1.Decision.Action, q2.Decision.Action)
		}
		if q1.Result.Metrics["tool_calls"] != 3 || q2.Result.Metrics["tool_calls"] != 0 {
			t.Errorf("tool calls %v then %v, want 3 then 0", q1.Result.Metrics["tool_calls"], q2.Result.Metrics["tool_calls"])
		}
		if q2.Result.Metrics["cached_input_tokens"] == 0 || q2.Result.Cost >= q1.Result.Cost {
			t.Errorf("the warm question cost %v (cached %v), the first %v: want it cheaper, from the cache",
				q2.Result.Cost, q2.Result.Metrics["cached_input_tokens"], q1.Result.Cost)
		}
		// The session's fingerprint is what the model read.
		sessions, err := h.Sessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) != 1 || !slices.Contains(sessions[0].Files, "pkg/alpha/util.go") {
			t.Errorf("sessions %+v, want one that read pkg/alpha/util.go", sessions)
		}

		// The guard's denial reaches the model as the tool's error.
		q3 := submit(t, h, "What is the token? read:secrets/.env", "pkg/alpha")
		if !strings.Contains(q3.Result.Output, "secrets are off limits") {
			t.Errorf("output %q does not carry the guard's reason", q3.Result.Output)
		}
		if strings.Contains(f.Requests()[len(f.Requests())-1].String(), "do-not-read") {
			t.Error("the denied file reached the model")
		}
		if err := h.Close(context.Background()); err != nil {
			t.Fatal(err)
		}

		// A new host on the same data directory rehydrates the dormant
		// session into the same conversation.
		n := len(f.Requests())
		h2 := startHost(t, cfg, dir, &log)
		q4 := submit(t, h2, "Is util.go tested? ask:pkg/alpha", "pkg/alpha")
		if q4.Decision.Action != hearth.ActionRehydrated || q4.Session != q1.Session {
			t.Errorf("placement %s on %s, want rehydrated %s", q4.Decision.Action, q4.Session, q1.Session)
		}
		if q4.Result.Metrics["tool_calls"] != 0 {
			t.Errorf("the rehydrated conversation read again: %v tool calls", q4.Result.Metrics["tool_calls"])
		}
		if reqs := f.Requests()[n:]; len(reqs) != 1 || !strings.Contains(reqs[0].String(), "What does alpha do?") {
			t.Errorf("the rehydrated session's request does not continue the conversation")
		}
		if err := h2.Close(context.Background()); err != nil {
			t.Fatal(err)
		}

		// The key is in the environment of the plugin only: not in the
		// config, the store, or the logs.
		if strings.Contains(fmt.Sprintf("%+v", *cfg.Agent("ask")), testKey) {
			t.Error("the config holds the key")
		}
		if strings.Contains(log.String(), testKey) {
			t.Error("the log holds the key")
		}
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(testKey)) {
				t.Errorf("%s holds the key", p)
			}
			return nil
		})
	})
}

// TestCompactionIsAnEvent: under a host, a compaction is the task's
// progress, which the host records as an event.
func TestCompactionIsAnEvent(t *testing.T) {
	f, ws := fake(t), workspace(t)
	big := strings.Repeat("// filler line to make the file large enough.\n", 130)
	for _, p := range []string{"pkg/alpha/big.go", "pkg/beta/big.go"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := hostConfig(t, f, "anthropic", ws, "context_window = 5000\n    max_output_tokens = 500")
	var log syncBuffer
	h := startHost(t, cfg, t.TempDir(), &log)
	defer h.Close(context.Background())
	sub, err := h.Subscribe(context.Background(), hearth.EventFilter{Buffer: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// One session for all: the hints say alpha, which it knows.
	var sessions []string
	for _, q := range []string{"ask:pkg/alpha", "ask:pkg/beta", "ask:pkg/alpha"} {
		sessions = append(sessions, submit(t, h, q, "pkg/alpha").Session)
	}
	if sessions[0] != sessions[1] || sessions[1] != sessions[2] {
		t.Fatalf("the tasks ran on sessions %v, want one", sessions)
	}
	for {
		select {
		case e := <-sub.Events():
			if e.Kind == hearth.EventTaskProgress && strings.HasPrefix(e.Message, "compacted the conversation") {
				return
			}
		default:
			t.Fatal("no task.progress event says the conversation was compacted")
		}
	}
}
