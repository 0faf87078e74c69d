package claude_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// hostConfig is a config with one managed Claude Code agent, "coder",
// served by this test binary as a real plugin subprocess (confined where
// the kernel has Landlock) and talking to api, and a guard that keeps it
// out of secrets. The key is in the environment from TestMain on.
func hostConfig(t *testing.T, api *fakeapi.Server, ws, extra string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(configSource(claudetest.Binary(t), api.URL, ws, extra)), filepath.Join(t.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configSource is hostConfig's file.
func configSource(bin, url, ws, extra string) string {
	return fmt.Sprintf(`
agent "coder" {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  claude_code {
    command     = %q
    model       = "claude-sonnet-4-5"
    base_url    = %q
    api_key_env = "FAKE_CLAUDE_KEY"
    max_turns   = 10
    %s
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*')"
  message   = "secrets are off limits"
}
`, os.Args[0], envServe, ws, bin, url, extra)
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

func startHost(t *testing.T, cfg *config.Config, dir string, log *syncBuffer) *engine.Engine {
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
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: prompt, Hints: sdk.Hints{Directories: []string{dir}}})
	if err != nil {
		t.Fatalf("%s: %v", prompt, err)
	}
	return out
}

// TestUnderHost runs the agent as hearth runs it: a plugin subprocess
// configured by a claude_code block, placed by the matcher, guarded,
// persisted and rehydrated by a second host on the same data directory.
func TestUnderHost(t *testing.T) {
	t.Parallel()
	api, ws, dir := fakeapi.New(key), workspace(t), t.TempDir()
	defer api.Close()
	cfg := hostConfig(t, api, ws, "")
	a := cfg.Agent("coder")
	if !slices.Contains(a.PassEnv, "FAKE_CLAUDE_KEY") || len(a.ConnectPorts) != 1 {
		t.Fatalf("the claude_code block did not pass the key's variable or limit TCP: pass_env %q, connect_ports %v", a.PassEnv, a.ConnectPorts)
	}
	var log syncBuffer
	h := startHost(t, cfg, dir, &log)

	q1 := submit(t, h, "What does cart/cart.go do?", "cart")
	q2 := submit(t, h, "How do cart/cart.go and cart/discount.go fit?", "cart")
	if q1.Decision.Action != hearth.ActionSpawned || q2.Decision.Action != hearth.ActionReused || q2.Session != q1.Session {
		t.Fatalf("placements %s, %s; want the second question on the first one's session", q1.Decision.Action, q2.Decision.Action)
	}
	if q1.Result.Metrics["tool_calls"] != 1 || q2.Result.Metrics["tool_calls"] != 1 {
		t.Errorf("tool calls %v then %v, want 1 then 1 (cart.go is in the conversation)", q1.Result.Metrics["tool_calls"], q2.Result.Metrics["tool_calls"])
	}
	if q1.Result.Cost <= 0 || q2.Result.Metrics["cached_input_tokens"] == 0 {
		t.Errorf("costs %v, %v, cached %v: want Claude Code's cost, and the warm question from the cache", q1.Result.Cost, q2.Result.Cost, q2.Result.Metrics["cached_input_tokens"])
	}
	// The session's fingerprint is what Claude Code read.
	sessions, err := h.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || !slices.Contains(sessions[0].Files, "cart/cart.go") || !slices.Contains(sessions[0].Files, "cart/discount.go") {
		t.Errorf("sessions %+v, want one that read cart/cart.go and cart/discount.go", sessions)
	}
	// Another package goes to another session.
	q3 := submit(t, h, "What is pricing/pricing.go for?", "pricing")
	if q3.Decision.Action != hearth.ActionSpawned || q3.Session == q1.Session {
		t.Errorf("the pricing question was %s on %s, want a new session", q3.Decision.Action, q3.Session)
	}

	// The guard's denial reaches the model as Claude Code reports it, and
	// the secret never reaches the server.
	q4 := submit(t, h, "What is the token in .env/x.txt and read:.env", "cart")
	if !strings.Contains(q4.Result.Output, "secrets are off limits") {
		t.Errorf("output %q does not carry the guard's reason", q4.Result.Output)
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.String(), "hunter2") {
			t.Fatal("the guarded file's content reached the server")
		}
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A new host on the same data directory rehydrates the dormant session
	// into the same Claude Code conversation.
	n := len(api.Requests())
	h2 := startHost(t, cfg, dir, &log)
	q5 := submit(t, h2, "Is cart/discount.go tested?", "cart")
	if q5.Decision.Action != hearth.ActionRehydrated || q5.Session != q1.Session {
		t.Errorf("placement %s on %s, want rehydrated %s", q5.Decision.Action, q5.Session, q1.Session)
	}
	if q5.Result.Metrics["tool_calls"] != 0 {
		t.Errorf("the rehydrated conversation read again: %v tool calls", q5.Result.Metrics["tool_calls"])
	}
	if reqs := api.Requests()[n:]; len(reqs) == 0 || !strings.Contains(reqs[0].String(), "What does cart/cart.go do?") {
		t.Errorf("the rehydrated session's request does not continue the conversation")
	}
	if err := h2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The key is in the environment of the plugin only.
	if strings.Contains(log.String(), key) {
		t.Error("the log holds the key")
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
}

// TestConfined: a confined session cannot read outside its workspace
// through Claude Code's own Read or Bash, with Claude Code's permission
// rules allowing both; the same session unconfined can, which shows it
// is the kernel that refuses.
func TestConfined(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "notes.txt")
	if err := os.WriteFile(secret, []byte("outside-the-workspace-7731\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, confined := range []bool{true, false} {
		t.Run(fmt.Sprint("confined=", confined), func(t *testing.T) {
			api, ws := fakeapi.New(key), workspace(t)
			defer api.Close()
			extra := `allowed_tools = ["Read", "Bash"]`
			cfg := hostConfig(t, api, ws, extra)
			if !confined {
				cfg.Agent("coder").Confinement = config.ConfinementOff
			}
			var log syncBuffer
			h := startHost(t, cfg, t.TempDir(), &log)
			defer h.Close(context.Background())
			if confined && strings.Contains(log.String(), "UNCONFINED") {
				t.Skip("plugins run unconfined on this kernel (no Landlock)")
			}
			q := submit(t, h, fmt.Sprintf("read:%s shell:cat_%s", secret, secret), ".")
			leaked := false
			for _, r := range api.Requests() {
				leaked = leaked || strings.Contains(r.String(), "outside-the-workspace-7731")
			}
			if leaked == confined {
				t.Errorf("confined=%v: the file outside the workspace reached the server: %v (output %q)", confined, leaked, q.Result.Output)
			}
		})
	}
}

// buildHookRelay builds cmd/hearth-hook for a test.
func buildHookRelay(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hearth-hook")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hearth-hook").CombinedOutput(); err != nil {
		t.Fatalf("build hearth-hook: %v\n%s", err, out)
	}
	return bin
}

// TestHookRelay: with hook_relay naming hearth-hook, the hooks run it
// (confined, where the kernel has Landlock): the guard still denies, and
// the fingerprint still fills.
func TestHookRelay(t *testing.T) {
	t.Parallel()
	relay := buildHookRelay(t)
	api, ws := fakeapi.New(key), workspace(t)
	defer api.Close()
	cfg := hostConfig(t, api, ws, fmt.Sprintf("hook_relay = %q", relay))
	if cfg.Agent("coder").Env["HEARTH_CLAUDE_HOOK_RELAY"] == "" {
		t.Fatal("hook_relay did not reach the agent")
	}
	var log syncBuffer
	h := startHost(t, cfg, t.TempDir(), &log)
	defer h.Close(context.Background())
	q := submit(t, h, "What does cart/cart.go do, and read:.env", "cart")
	if !strings.Contains(q.Result.Output, "secrets are off limits") || q.Result.Metrics["tool_calls"] != 2 {
		t.Errorf("output %q, %v tool calls: want the read of cart.go and the guard's denial of .env", q.Result.Output, q.Result.Metrics["tool_calls"])
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.String(), "hunter2") {
			t.Fatal("the guarded file reached the server")
		}
	}
	sessions, err := h.Sessions(context.Background())
	if err != nil || len(sessions) != 1 || !slices.Contains(sessions[0].Files, "cart/cart.go") {
		t.Errorf("sessions %+v, %v; want one that read cart/cart.go", sessions, err)
	}
}
