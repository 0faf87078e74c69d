package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
)

// trackedSetup is what examples/claude-code/README.md has a user set up,
// in a temporary home: the example's config where its hooks read it, a
// project whose .claude/settings.json holds the example's hooks (the
// command hooks, or HTTP ones), and `hearth` on PATH (this test binary,
// which is the hearth command when called so).
type trackedSetup struct {
	home, project, cfg, bin string
	api                     *fakeapi.Server
}

const trackedKey = "sk-ant-tracked-test"

func newTracked(t *testing.T, policy string) *trackedSetup {
	t.Helper()
	ts := &trackedSetup{home: t.TempDir(), project: t.TempDir(), bin: t.TempDir(), api: fakeapi.New(trackedKey)}
	t.Cleanup(ts.api.Close)
	var err error
	if ts.project, err = filepath.EvalSymlinks(ts.project); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/claude-code/hearth.hcl")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `when_unreachable = "allow"`, `when_unreachable = "`+policy+`"`, 1)
	ts.cfg = filepath.Join(ts.home, ".config", "hearth", "hearth.hcl")
	files := map[string]string{
		ts.cfg: cfg,
		filepath.Join(ts.project, "src/cart/cart.go"):     "package cart\n\n// Total sums a cart.\nfunc Total(xs []int) int { return 0 }\n",
		filepath.Join(ts.project, "src/pricing/rules.go"): "package pricing\n\n// Rules price things.\nvar Rules = 1\n",
		filepath.Join(ts.project, ".env"):                 "STRIPE_KEY=sk_live_tracked_never_read\n",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(os.Args[0], filepath.Join(ts.bin, "hearth")); err != nil {
		t.Fatal(err)
	}
	return ts
}

// hooks installs the example's settings file (settings.json or
// settings-http.json) as the project's, with the daemon's HTTP address.
func (ts *trackedSetup) hooks(t *testing.T, file, httpAddr string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../examples/claude-code", file))
	if err != nil {
		t.Fatal(err)
	}
	if httpAddr != "" {
		b = []byte(strings.ReplaceAll(string(b), "127.0.0.1:7411", httpAddr))
	}
	p := filepath.Join(ts.project, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// claude runs the real Claude Code headless in the project, as a person
// would, and returns its output and the session ID it used.
func (ts *trackedSetup) claude(t *testing.T, prompt string, env ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := len(ts.api.Requests())
	cmd := exec.CommandContext(ctx, claudetest.Binary(t), "-p", prompt, "--model", "claude-sonnet-4-5")
	cmd.Dir = ts.project
	cmd.Env = append([]string{
		"HOME=" + ts.home, "PATH=" + ts.bin + ":/usr/local/bin:/usr/bin:/bin",
		"ANTHROPIC_BASE_URL=" + ts.api.URL, "ANTHROPIC_API_KEY=" + trackedKey,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p %q: %v\n%s", prompt, err, out)
	}
	reqs := ts.api.Requests()[n:]
	if len(reqs) == 0 {
		t.Fatalf("claude -p %q made no model request:\n%s", prompt, out)
	}
	return string(out), reqs[0].Header.Get("X-Claude-Code-Session-Id")
}

// leaked reports whether the project's secret reached the model.
func (ts *trackedSetup) leaked() bool {
	for _, r := range ts.api.Requests() {
		if strings.Contains(r.String(), "sk_live_tracked_never_read") {
			return true
		}
	}
	return false
}

// sent reports whether any model request holds s.
func (ts *trackedSetup) sent(s string) bool {
	for _, r := range ts.api.Requests() {
		if strings.Contains(r.String(), s) {
			return true
		}
	}
	return false
}

// TestTrackedClaudeCode follows examples/claude-code with the real
// Claude Code CLI: its command hooks deny the .env read (the secret never
// reaches the model), the session's fingerprint holds what Claude Code
// read, listed and searched through Bash and what a failed command
// named, and `hearth place` with a relative directory, run in the
// project, says to resume it there.
func TestTrackedClaudeCode(t *testing.T) {
	ts := newTracked(t, "allow")
	s := serve(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(ts.home, ".hearth")}, "--config", ts.cfg)
	ts.hooks(t, "settings.json", "")

	out, id := ts.claude(t, "Explain src/cart/cart.go list:src/pricing search:src:Total shell:grep_-q_nomatch_src/pricing/rules.go read:.env")
	if ts.leaked() {
		t.Fatal("the .env file reached the model")
	}
	if !strings.Contains(out, ".env files hold secrets") {
		t.Errorf("claude's answer does not carry the guard's denial:\n%s", out)
	}
	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}
	code, show, errOut := run(t, env, "sessions", "show", id)
	if code != 0 {
		t.Fatalf("sessions show %s: %d %s", id, code, errOut)
	}
	for _, want := range []string{
		"src/cart/cart.go",          // Read
		"src/pricing/rules.go",      // a failed grep (PostToolUseFailure) still named it
		ts.project + "/src/pricing", // ls, through Bash
		"no-env-files deny",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, show)
		}
	}

	// Placed from the project, with a relative directory.
	t.Chdir(ts.project)
	code, place, _ := run(t, env, "--config", ts.cfg, "place", "claude-code", "--dir", "src/cart")
	if code != 0 || !strings.Contains(place, "resume it with: cd "+ts.project+" && claude --resume "+id) {
		t.Errorf("place --dir src/cart: %d\n%s", code, place)
	}
}

// TestTrackedClaudeCodeDaemonDown: with the daemon down, the example's
// command hooks fail as its config says. Fail closed: the .env read is
// denied and never reaches the model. Fail open: a read goes ahead, and
// the model is told hearth did not check it (the only place a headless
// run shows it).
func TestTrackedClaudeCodeDaemonDown(t *testing.T) {
	t.Parallel()
	t.Run("deny", func(t *testing.T) {
		ts := newTracked(t, "deny")
		ts.hooks(t, "settings.json", "")
		out, _ := ts.claude(t, "What is in read:.env")
		if ts.leaked() {
			t.Fatalf("with the daemon down and when_unreachable = deny, the .env file reached the model:\n%s", out)
		}
		if !strings.Contains(out, "when_unreachable = deny") {
			t.Errorf("claude's answer does not say why the read was denied:\n%s", out)
		}
	})
	t.Run("allow", func(t *testing.T) {
		ts := newTracked(t, "allow")
		ts.hooks(t, "settings.json", "")
		ts.claude(t, "Explain src/cart/cart.go")
		if !ts.sent("hearth's guards did not check this tool use") {
			t.Error("the model was not told that hearth could not check the read")
		}
	})
}

// TestTrackedClaudeCodeHTTPWithoutToken: the example's HTTP hooks, sent
// without the daemon's token (401), fail closed (onFailure: "block"): the
// .env read never reaches the model, where before 2.1.295 the guards
// were silently off.
func TestTrackedClaudeCodeHTTPWithoutToken(t *testing.T) {
	t.Parallel()
	ts := newTracked(t, "allow")
	s := serve(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(ts.home, ".hearth")}, "--config", ts.cfg)
	ts.hooks(t, "settings-http.json", s.http)
	out, _ := ts.claude(t, "What is in read:.env")
	if ts.leaked() {
		t.Fatalf("an HTTP hook refused for its token let the .env read through:\n%s", out)
	}
	tok, err := os.ReadFile(s.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	// With the token, the guard itself denies it.
	out, _ = ts.claude(t, "What is in read:.env", "HEARTH_TOKEN="+strings.TrimSpace(string(tok)))
	if ts.leaked() || !strings.Contains(out, ".env files hold secrets") {
		t.Errorf("with the token: leaked %v, answer:\n%s", ts.leaked(), out)
	}
}

// TestTrackedClaudeCodeHearthHook: the example's hearth-hook settings
// (the command hook that starts in a millisecond) deny the .env read
// through the daemon, and, with the daemon down and --when-unreachable
// deny, deny it on their own.
func TestTrackedClaudeCodeHearthHook(t *testing.T) {
	t.Parallel()
	ts := newTracked(t, "allow")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(ts.bin, "hearth-hook"), "../hearth-hook").CombinedOutput(); err != nil {
		t.Fatalf("build hearth-hook: %v\n%s", err, out)
	}
	s := serve(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(ts.home, ".hearth")}, "--config", ts.cfg)
	ts.hooks(t, "settings-hearth-hook.json", s.http)
	out, id := ts.claude(t, "Explain src/cart/cart.go and read:.env")
	if ts.leaked() || !strings.Contains(out, ".env files hold secrets") {
		t.Errorf("leaked %v; answer:\n%s", ts.leaked(), out)
	}
	code, show, _ := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir}, "sessions", "show", id)
	if code != 0 || !strings.Contains(show, ts.project+"/src/cart/cart.go") {
		t.Errorf("sessions show %s: %d\n%s", id, code, show)
	}
	s.stop(t)
	b, err := os.ReadFile(filepath.Join(ts.project, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	deny := strings.ReplaceAll(string(b), "--when-unreachable allow", "--when-unreachable deny")
	if err := os.WriteFile(filepath.Join(ts.project, ".claude", "settings.json"), []byte(deny), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = ts.claude(t, "What is in read:.env")
	if ts.leaked() || !strings.Contains(out, "when_unreachable = deny") {
		t.Errorf("daemon down, failing closed: leaked %v; answer:\n%s", ts.leaked(), out)
	}
}
