package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

// serving is `hearth serve` running in-process on a real socket.
type serving struct {
	dataDir string
	http    string
	// tokenFile and login are what it prints: the HTTP side's token file
	// and a one-time sign-in link.
	tokenFile, login string
	sigs             chan os.Signal
	hups             chan os.Signal
	done             chan int
	stderr           *watchWriter
}

// serve starts `hearth serve` with args on a fresh data directory (or
// env's), and returns once it listens: when it prints its addresses.
func serve(t testing.TB, env map[string]string, args ...string) *serving {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	if env["HEARTH_DATA_DIR"] == "" {
		env["HEARTH_DATA_DIR"] = filepath.Join(t.TempDir(), "data")
	}
	s := &serving{dataDir: env["HEARTH_DATA_DIR"], sigs: make(chan os.Signal, 2), hups: make(chan os.Signal, 1), done: make(chan int, 1), stderr: newWatchWriter("")}
	pr, pw := io.Pipe()
	m := &Main{
		Stdin: strings.NewReader(""), Stdout: pw, Stderr: s.stderr,
		Getenv:  func(k string) string { return env[k] },
		Signals: func() (<-chan os.Signal, func()) { return s.sigs, func() {} },
		Reloads: func() (<-chan os.Signal, func()) { return s.hups, func() {} },
	}
	go func() {
		code := m.Run(context.Background(), append([]string{"serve", "--http", "127.0.0.1:0"}, args...))
		pw.Close()
		s.done <- code
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if http, ok := strings.CutPrefix(line, "dashboard  http://"); ok {
			s.http = strings.TrimSuffix(http, "/")
		}
		if f, ok := strings.CutPrefix(line, "token      "); ok {
			s.tokenFile, _, _ = strings.Cut(f, " ")
		}
		if link, ok := strings.CutPrefix(line, "sign in    "); ok {
			s.login = link
			break
		}
	}
	if s.http == "" {
		t.Fatalf("hearth serve did not start: %s", s.stderr)
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop sends SIGTERM and waits for the daemon to exit.
func (s *serving) stop(t testing.TB) int {
	t.Helper()
	select {
	case s.sigs <- os.Interrupt:
	default:
	}
	select {
	case code := <-s.done:
		s.done <- code // stop is idempotent
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("hearth serve did not stop: %s", s.stderr)
		return -1
	}
}

func TestServeThenTheCLIGoesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}

	// The code tour runs in the daemon: the data directory is the
	// daemon's (Badger lets one process have it), so this could not open
	// it itself.
	code, out, errOut := run(t, env, "run", "../../examples/code-tour", "-q")
	if code != 0 || !strings.Contains(out, "in the daemon") || !strings.Contains(out, "48 succeeded") || !strings.Contains(out, "reused warm") {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	id := regexp.MustCompile(`run (code-tour-\S+)`).FindStringSubmatch(out)[1]

	code, out, _ = run(t, env, "sessions", "list", "--json")
	var sessions []hearth.SessionInfo
	if code != 0 || json.Unmarshal([]byte(out), &sessions) != nil || len(sessions) == 0 || sessions[0].Status != "live" {
		t.Fatalf("sessions list: %d %s", code, out)
	}
	code, out, _ = run(t, env, "runs", "show", id)
	if code != 0 || !strings.Contains(out, "completed") || !strings.Contains(out, "48/48 tasks succeeded") {
		t.Errorf("runs show: %d %s", code, out)
	}
	code, out, _ = run(t, env, "place", "gotour", "--dir", "net/http", "--tech", "go")
	if code != 0 || !strings.Contains(out, "would reuse gotour-") {
		t.Errorf("place: %d %s", code, out)
	}
	code, out, _ = run(t, env, "submit", "gotour", "summary net/http", "--dir", "net/http", "--tech", "go", "--json")
	var o hearth.Outcome
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || o.Decision.Action != hearth.ActionReused {
		t.Errorf("submit: %d %s", code, out)
	}
	code, _, errOut = run(t, env, "runs", "cancel", id, "--json")
	if code != 1 || !strings.Contains(errOut, "it cannot become cancelled") {
		t.Errorf("cancel a completed run: %d %s", code, errOut)
	}

	// SIGTERM: a clean stop. Then the CLI opens the data directory itself.
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "hearth.sock")); !os.IsNotExist(err) {
		t.Errorf("the socket outlived the daemon: %v", err)
	}
	code, out, _ = run(t, env, "sessions", "list")
	if code != 0 || !strings.Contains(out, "dormant*") {
		t.Errorf("sessions list without a daemon: %d %s", code, out)
	}
}

// hookAnswer reads what `hearth hook` printed for Claude Code: the
// PreToolUse decision and its reason, and the message for the person.
func hookAnswer(t *testing.T, out string) (decision, reason, notice string) {
	t.Helper()
	if out == "" {
		return "", "", ""
	}
	var a struct {
		HookSpecificOutput struct {
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
		SystemMessage string `json:"systemMessage"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("the hook printed %q, not Claude Code's JSON: %v", out, err)
	}
	return a.HookSpecificOutput.PermissionDecision, a.HookSpecificOutput.PermissionDecisionReason, a.SystemMessage
}

// TestHookWithoutADaemon: when hearth cannot check a tool use, the
// person is told in Claude Code's window (systemMessage, exit 0), and the
// configured policy decides: go ahead, or deny. Issue 13: the warning
// went to stderr only, which Claude Code shows in verbose mode alone.
func TestHookWithoutADaemon(t *testing.T) {
	t.Parallel()
	pre := `{"session_id":"s1","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/.env"}}`
	// Fail open: the tool use goes ahead, and the person sees why.
	code, out, errOut := run(t, map[string]string{"STDIN": pre}, "hook")
	decision, _, notice := hookAnswer(t, out)
	if code != 0 || decision != "" || !strings.Contains(notice, "goes ahead unchecked") || !strings.Contains(notice, "no hearth daemon is running") ||
		!strings.Contains(notice, "start one with hearth serve") || !strings.Contains(errOut, "failing open") {
		t.Errorf("fail open: %d %q %q", code, out, errOut)
	}
	// Fail closed, by flag or by config.
	cfg := writeConfig(t, "hooks {\n  when_unreachable = \"deny\"\n}\n")
	for name, env := range map[string]map[string]string{
		"flag":   {"STDIN": pre, "ARGS": "--when-unreachable=deny"},
		"config": {"STDIN": pre, "HEARTH_CONFIG": cfg},
	} {
		args := []string{"hook"}
		if a := env["ARGS"]; a != "" {
			args = append(args, a)
		}
		code, out, _ := run(t, env, args...)
		decision, reason, notice := hookAnswer(t, out)
		if code != 0 || decision != "deny" || !strings.Contains(reason, "hearth could not check this tool use (no hearth daemon is running") ||
			!strings.Contains(notice, "hearth denied a tool use it could not check") {
			t.Errorf("fail closed (%s): %d %q", name, code, out)
		}
	}
	// Failing closed only refuses tool uses: a Stop goes through, and
	// the person learns that the session is not followed.
	code, out, _ = run(t, map[string]string{"STDIN": `{"session_id":"s1","hook_event_name":"Stop"}`, "HEARTH_CONFIG": cfg}, "hook")
	if decision, _, notice := hookAnswer(t, out); code != 0 || decision != "" || !strings.Contains(notice, "hearth is not following this session (Stop)") {
		t.Errorf("Stop, failing closed: %d %q", code, out)
	}
	// A PostToolUse says nothing more: its PreToolUse did.
	code, out, _ = run(t, map[string]string{"STDIN": `{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Read"}`}, "hook")
	if code != 0 || out != "" {
		t.Errorf("PostToolUse without a daemon: %d %q", code, out)
	}
	// A payload that is not Claude Code's is one hearth cannot check:
	// the person sees why, and the policy decides.
	code, out, _ = run(t, map[string]string{"STDIN": "{"}, "hook")
	if decision, _, notice := hookAnswer(t, out); code != 0 || decision != "" || !strings.Contains(notice, "bad Claude Code hook payload: invalid JSON at line 1, column 2") {
		t.Errorf("bad payload: %d %q", code, out)
	}
	code, out, _ = run(t, map[string]string{"STDIN": "{", "HEARTH_CONFIG": cfg}, "hook")
	if decision, _, _ := hookAnswer(t, out); code != 0 || decision != "deny" {
		t.Errorf("bad payload, failing closed: %d %q", code, out)
	}
}

// TestHookBrokenConfigFailsClosed: a config that says when_unreachable =
// "deny" but does not load (an agent's program gone, a syntax error
// further down) fails closed; issue 13 found it quietly failing open.
func TestHookBrokenConfigFailsClosed(t *testing.T) {
	t.Parallel()
	pre := `{"session_id":"s1","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/.env"}}`
	for _, tc := range []struct {
		name, config, want string
	}{
		{"an unknown bundled agent", "agent \"x\" {\n  bundled = \"nope\"\n}\nhooks {\n  when_unreachable = \"deny\"\n}\n", "deny"},
		{"broken syntax", "hooks {\n  when_unreachable = \"deny\"\n}\nagent \"x\" {\n  command = [\n", "deny"},
		{"a policy that is not allow", "hooks {\n  when_unreachable = \"maybe\"\n}\n", "deny"},
		{"no policy", "agent \"x\" {\n  bundled = \"nope\"\n}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, map[string]string{"STDIN": pre, "HEARTH_CONFIG": writeConfig(t, tc.config)}, "hook")
			decision, _, notice := hookAnswer(t, out)
			if code != 0 || decision != tc.want || !strings.Contains(notice, "the config cannot be read") || !strings.Contains(errOut, "the config cannot be read") {
				t.Errorf("%d %q %q; want decision %q and the config's error shown", code, out, errOut, tc.want)
			}
		})
	}
}

// TestHookNeverBlocksOnItsOwnFailures: Claude Code reads exit code 2 as
// "block". Whatever goes wrong on hearth's side (a daemon without an
// external agent, a payload too big), the hook answers with exit 0: the
// tool use goes ahead with a message for the person or, failing closed,
// is denied; it never exits 2.
func TestHookNeverBlocksOnItsOwnFailures(t *testing.T) {
	t.Parallel()
	// A daemon that follows no Claude Code sessions.
	s := serve(t, nil, "--config", "../../examples/code-tour/hearth.hcl")
	env := func(stdin string, extra ...string) map[string]string {
		e := map[string]string{"HEARTH_DATA_DIR": s.dataDir, "STDIN": stdin}
		for i := 0; i+1 < len(extra); i += 2 {
			e[extra[i]] = extra[i+1]
		}
		return e
	}
	prompt := `{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
	pre := `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`
	code, out, _ := run(t, env(prompt), "hook")
	if _, _, notice := hookAnswer(t, out); code != 0 || !strings.Contains(notice, "the config declares no external agent") {
		t.Errorf("prompt, daemon without Claude Code: %d %q; want exit 0 and a message saying why", code, out)
	}
	code, out, _ = run(t, env(pre), "hook", "--when-unreachable", "deny")
	if decision, _, _ := hookAnswer(t, out); code != 0 || decision != "deny" {
		t.Errorf("tool call failing closed on a daemon error: %d %q; want a denial", code, out)
	}
	// Too big is unreadable like any other payload: the policy decides.
	big := `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/w/.env","content":"` + strings.Repeat("x", 16<<20) + `"}}`
	code, out, _ = run(t, env(big), "hook", "--when-unreachable", "deny")
	if decision, reason, _ := hookAnswer(t, out); code != 0 || decision != "deny" || !strings.Contains(reason, "MiB") {
		t.Errorf("an oversized tool call failing closed: %d %.200q; want a denial", code, out)
	}
	code, out, _ = run(t, env(big), "hook")
	if decision, _, notice := hookAnswer(t, out); code != 0 || decision != "" || !strings.Contains(notice, "MiB") {
		t.Errorf("an oversized tool call failing open: %d %.200q; want exit 0 and a message", code, out)
	}
}

// TestDaemonKilledLeavesNoPluginAndNoLock runs `hearth serve` as a real
// process, has it start a plugin, kills it with SIGKILL, and checks that
// the plugin died with it and that the CLI then reads the data directory
// itself, past the socket the daemon left.
func TestDaemonKilledLeavesNoPluginAndNoLock(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	args, _ := json.Marshal([]string{"--data-dir", dataDir, "serve", "--no-http"})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HEARTH_TEST_MAIN="+string(args), "GORACE=atexit_sleep_ms=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "api        unix://") {
	}
	go io.Copy(io.Discard, stdout)

	env := map[string]string{"HEARTH_DATA_DIR": dataDir}
	if code, out, errOut := run(t, env, "submit", "gotour", "summary strings", "--dir", "strings"); code != 0 {
		t.Fatalf("submit: %d %s %s", code, out, errOut)
	}
	// The session saves its agent's state in the background after each
	// task; nothing announces it but the session's record, so ask.
	var sessions []hearth.SessionInfo
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code, out, _ := run(t, env, "sessions", "list", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &sessions) != nil || len(sessions) != 1 || sessions[0].PID == 0 {
			t.Fatalf("sessions: %d %s", code, out)
		}
		if sessions[0].HasState {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session's state was never saved: %+v", sessions[0])
		}
	}
	plugin := sessions[0].PID

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The kernel's parent-death signal ends the plugin: within a second.
	deadline := time.Now().Add(time.Second)
	for alive(plugin) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d outlived its daemon", plugin)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The socket is left behind, refusing connections: the CLI opens the
	// data directory itself. A read command replays nothing: it names
	// hearth recover, which does; then the session reads dormant.
	if _, err := os.Stat(filepath.Join(dataDir, "hearth.sock")); err != nil {
		t.Fatalf("the killed daemon's socket: %v", err)
	}
	code, out, errOut := run(t, env, "sessions", "list")
	if code == 0 || !strings.Contains(errOut, "hearth recover") {
		t.Errorf("a read after the kill: %d %s %s; want a refusal naming hearth recover", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "recover"); code != 0 {
		t.Fatalf("recover: %d %s %s", code, out, errOut)
	}
	code, out, errOut = run(t, env, "sessions", "list")
	if code != 0 || !strings.Contains(out, "dormant*") {
		t.Errorf("after the kill: %d %s %s", code, out, errOut)
	}
	// A new daemon takes the socket over.
	s := serve(t, env)
	if code, out, _ := run(t, env, "place", "gotour", "--dir", "strings"); code != 0 || !strings.Contains(out, "would rehydrate dormant") {
		t.Errorf("place on the new daemon: %d %s", code, out)
	}
	s.stop(t)
}

// alive reports whether a process runs: it exists and is not a zombie
// (this machine's PID 1 may not reap the plugins it inherits).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestServeReloadsOnSIGHUP changes the daemon's config file under it:
// SIGHUP brings in a new guard at once; a file with an error is refused
// and the running config stays.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "agent \"claude-code\" {\n  external = \"claude-code\"\n}\n")
	s := serve(t, map[string]string{"HEARTH_CONFIG": cfg})
	pre := `{"session_id":"s1","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /w"}}`
	if code, out, _ := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir, "STDIN": pre}, "hook"); code != 0 || out != "" {
		t.Fatalf("before the reload: %d %q", code, out)
	}
	guarded := "agent \"claude-code\" {\n  external = \"claude-code\"\n}\nguard \"no-rm\" {\n  hook      = \"pre_tool_use\"\n  condition = \"tool == 'Bash' && input.command contains 'rm -rf'\"\n  message   = \"no rm -rf\"\n}\n"
	if err := os.WriteFile(cfg, []byte(guarded), 0o644); err != nil {
		t.Fatal(err)
	}
	s.hups <- syscall.SIGHUP
	s.stderr.wait(t, "config reloaded")
	if code, out, _ := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir, "STDIN": pre}, "hook"); code != 0 || !strings.Contains(out, "no rm -rf") {
		t.Errorf("after the reload: %d %q; want the new guard's denial", code, out)
	}
	if err := os.WriteFile(cfg, []byte("guard \"broken\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool ==\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.hups <- syscall.SIGHUP
	s.stderr.wait(t, "reload refused, the running config stays")
	if code, out, _ := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir, "STDIN": pre}, "hook"); code != 0 || !strings.Contains(out, "no rm -rf") {
		t.Errorf("after a refused reload: %d %q; want the guard still in force", code, out)
	}
}
