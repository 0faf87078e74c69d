package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// The test binary serves the bundled agents, as the hearth binary does,
// and the scripted test agent when HEARTH_TEST_PLUGIN is set.
func TestMain(m *testing.M) {
	plugins.ServeIfRequested()
	if kind := os.Getenv("HEARTH_TEST_PLUGIN"); kind != "" {
		serveTestPlugin(kind)
		os.Exit(0)
	}
	// HEARTH_TEST_MAIN makes the test binary the hearth command, with the
	// arguments it holds (JSON): a real process for tests to kill.
	// Called as "hearth" (a symlink to the test binary), it is the hearth
	// command: what the README's shell scripts run.
	if filepath.Base(os.Args[0]) == "hearth" {
		os.Exit(NewMain().Run(context.Background(), os.Args[1:]))
	}
	if args := os.Getenv("HEARTH_TEST_MAIN"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			panic(err)
		}
		os.Exit(NewMain().Run(context.Background(), argv))
	}
	// Nothing a test starts may outlive it. The one goroutine that starts
	// plugins lives as long as the process, locked to its thread: the
	// parent-death signal is tied to the thread that started the child
	// (golang/go#27505).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}

// run runs the CLI in-process and returns its exit code and output.
func run(t testing.TB, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if env == nil {
		env = map[string]string{}
	}
	if _, ok := env["HEARTH_DATA_DIR"]; !ok {
		env["HEARTH_DATA_DIR"] = t.TempDir()
	}
	m := &Main{
		Stdin:  strings.NewReader(env["STDIN"]),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
		Signals: func() (<-chan os.Signal, func()) {
			return make(chan os.Signal), func() {}
		},
	}
	code := m.Run(context.Background(), args)
	return code, stdout.String(), stderr.String()
}

var (
	srcOnce sync.Once
	srcRoot string
)

func goSrc(t *testing.T) string {
	t.Helper()
	srcOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err == nil {
			srcRoot = filepath.Join(strings.TrimSpace(string(out)), "src")
		}
	})
	if srcRoot == "" {
		t.Fatal("go env GOROOT failed")
	}
	return srcRoot
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	return writeConfigIn(t, t.TempDir(), body)
}

// writeConfigIn writes the config file hearth.hcl in dir, which is then
// its agents' workspace.
func writeConfigIn(t testing.TB, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "hearth.hcl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "version", "--json")
	var v versionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.ProtocolVersion != plugin.ProtocolVersion || v.Go == "" {
		t.Errorf("got %d %q, want JSON naming the protocol version", code, out)
	}
	code, out, _ = run(t, nil, "version")
	if code != 0 || !strings.HasPrefix(out, "hearth ") || !strings.Contains(out, "agent protocol "+strconv.Itoa(plugin.ProtocolVersion)) {
		t.Errorf("got %d %q", code, out)
	}
}

func TestAgentsList(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "agents", "list")
	// The pool's values, its defaults applied (host/pool): 4 sessions, 16
	// for an external agent, idle after 30m.
	for _, want := range []string{`gotour\s+bundled gotour\s+agent's\s+4\s+30m0s`, `workshop\s+bundled workshop`, `claude-code\s+external claude-code \(reports through hooks\)\s+1\s+16\s+30m0s`} {
		if code != 0 || !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("default config: got %d %q, want the bundled agents and Claude Code's (%q)", code, out, want)
		}
	}
	cfg := writeConfig(t, `
agent "mine" {
  command = ["/opt/my-agent"]
  sha256  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
  pool { max_sessions = 2 }
}`)
	code, out, _ = run(t, map[string]string{"HEARTH_CONFIG": cfg}, "agents", "list", "--json")
	var views []agentView
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil {
		t.Fatalf("got %d %q", code, out)
	}
	if len(views) != 5 || views[0].Name != "mine" || views[0].MaxSessions != 2 || views[0].IdleTimeout != "30m0s" || !views[0].Configured ||
		views[1].Name != "claude" || views[1].Configured || views[2].Name != "gotour" || views[2].Configured ||
		views[3].Name != "model" || views[3].Configured || views[4].Name != "workshop" || views[4].Configured {
		t.Errorf("got %+v, want the configured agent, then the unused bundled ones", views)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := writeConfig(t, `agent "tour" { bundled = "gotour" }`)
	code, out, _ := run(t, nil, "config", "validate", good)
	if code != 0 || !strings.Contains(out, "is valid: 1 agent, 0 guards, 0 pipelines") {
		t.Errorf("valid file: got %d %q", code, out)
	}
	bad := writeConfig(t, "agent \"tour\" {\n  bundled = \"gotour\"\n  capasity = 2\n}\n")
	code, _, errOut := run(t, nil, "config", "validate", bad)
	for _, w := range []string{":3:3: Unsupported argument", "line 3", `capasity = 2`, `Did you mean "capacity"?`} {
		if !strings.Contains(errOut, w) {
			t.Errorf("invalid file: stderr %q\ndoes not contain %q", errOut, w)
		}
	}
	if code != exitUsage {
		t.Errorf("invalid file: exit %d, want %d", code, exitUsage)
	}
	if code, _, errOut := run(t, nil, "config", "validate", filepath.Join(t.TempDir(), "none.hcl")); code != exitUsage || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: got %d %q", code, errOut)
	}
}

// TestConfigValidateFlagsPathsRules (issue 25, finding 7): a
// pre_tool_use guard on paths sees what a call names, not what a Grep's
// glob reaches below it; validate says so, and names the touches form.
// A guard written with touches is not flagged.
func TestConfigValidateFlagsPathsRules(t *testing.T) {
	t.Parallel()
	f := writeConfig(t, `agent "tour" { bundled = "gotour" }
guard "no-env" {
  hook      = "pre_tool_use"
  condition = "any(paths, glob(#, '**/.env'))"
}
guard "no-key" {
  hook      = "pre_tool_use"
  condition = "touches('**/*.pem')"
}
`)
	code, out, errOut := run(t, nil, "config", "validate", f)
	if code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("got %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, `warning: guard "no-env" reads paths`) || !strings.Contains(errOut, `touches("**/.env")`) || strings.Contains(errOut, "no-key") {
		t.Errorf("stderr %q: want a warning for no-env naming touches, none for no-key", errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"frobnicate"},
		{"submit", "gotour"},
		{"version", "--nope"},
		{"submit", "nobody", "hello"},
	} {
		code, _, errOut := run(t, nil, args...)
		if code != exitUsage || !strings.HasPrefix(errOut, "hearth: ") {
			t.Errorf("%v: got exit %d %q, want %d with a message", args, code, errOut, exitUsage)
		}
	}
}

func TestSubmit(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `agent "gotour" {
  bundled   = "gotour"
  workspace = "`+goSrc(t)+`"
}`)
	env := map[string]string{"HEARTH_CONFIG": cfg}
	code, out, errOut := run(t, env, "submit", "gotour", "summary net/http", "--dir", "net/http", "--tech", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"ran on gotour-", "spawned", "package http (net/http)", "learned:", "decision: net/http is package http"} {
		if !strings.Contains(out, w) {
			t.Errorf("output %q\ndoes not contain %q", out, w)
		}
	}
	code, out, _ = run(t, env, "submit", "gotour", "symbol strings Builder", "--json")
	var o struct {
		Session string `json:"session"`
		Result  struct {
			Output string `json:"output"`
		} `json:"result"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || !strings.Contains(o.Result.Output, "Builder struct") || o.Session == "" {
		t.Errorf("--json: got %d %q", code, out)
	}
	code, _, errOut = run(t, env, "submit", "gotour", "summary no/such/pkg")
	if code != exitWork || !strings.Contains(errOut, "no package no/such/pkg") {
		t.Errorf("failing task: got %d %q, want exit 1 naming the problem", code, errOut)
	}
}

func TestSubmitInterrupted(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}`)
	// The plugin's files are in its workspace, the config's directory: a
	// confined plugin reaches nothing else.
	release := filepath.Join(filepath.Dir(cfg), "release")
	sigs := make(chan os.Signal, 1)
	dataDir := t.TempDir()
	var stdout bytes.Buffer
	stderr := newWatchWriter("shutting down")
	m := &Main{
		Stdout: &stdout, Stderr: stderr,
		Getenv:  func(k string) string { return map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": dataDir}[k] },
		Signals: func() (<-chan os.Signal, func()) { return sigs, func() {} },
	}
	// The plugin opening the FIFO tells the test the task is running.
	started := filepath.Join(filepath.Dir(cfg), "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() {
		done <- m.Run(context.Background(), []string{"submit", "scripted", "touch:" + started + ";wait:" + release + ";echo:finished"})
	}()
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	// SIGTERM arrives while the task waits for the release file; the task
	// gets its grace period and finishes once released.
	sigs <- syscall.SIGTERM
	<-stderr.seen
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code := <-done
	if code != exitWork || !strings.Contains(stderr.String(), "interrupted by terminated") || !strings.Contains(stdout.String(), "finished") {
		t.Errorf("got exit %d, stdout %q, stderr %q; want the task finished within the grace period and exit 1", code, stdout.String(), stderr.String())
	}
}

// watchWriter is a goroutine-safe buffer that closes seen once what was
// written contains want, and lets a test wait for any text.
type watchWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	want    string
	seen    chan struct{}
	once    sync.Once
	changed chan struct{}
}

func newWatchWriter(want string) *watchWriter {
	return &watchWriter{want: want, seen: make(chan struct{}), changed: make(chan struct{})}
}

func (w *watchWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(b)
	if w.want != "" && strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	close(w.changed)
	w.changed = make(chan struct{})
	return n, err
}

// wait returns once text has been written, or fails the test after 30s.
func (w *watchWriter) wait(t testing.TB, text string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		found, changed := strings.Contains(w.buf.String(), text), w.changed
		w.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%q was not written; got %q", text, w.String())
		}
	}
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestRunCodeTourAndSessions(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HEARTH_DATA_DIR": t.TempDir()}
	code, out, errOut := run(t, env, "run", "../../examples/code-tour", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"pipeline code-tour: 48 tasks, 2 at a time", "[48/48]", "48 tasks in", "48 succeeded", "reused warm", "spawned"} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not contain %q:\n%s", w, out)
		}
	}

	code, out, _ = run(t, env, "sessions", "list", "--json")
	var sessions []struct {
		ID       string   `json:"id"`
		Status   string   `json:"status"`
		Tasks    int      `json:"tasks"`
		HasState bool     `json:"has_state"`
		Dirs     []string `json:"directories"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sessions) != nil || len(sessions) == 0 {
		t.Fatalf("sessions list: %d %q", code, out)
	}
	tasks := 0
	for _, s := range sessions {
		tasks += s.Tasks
		if s.Status != "dormant" || !s.HasState || len(s.Dirs) == 0 {
			t.Errorf("session %+v: want dormant, with state and a fingerprint, after the run", s)
		}
	}
	if tasks != 48 {
		t.Errorf("sessions ran %d tasks in all, want 48", tasks)
	}

	code, out, _ = run(t, env, "sessions", "show", sessions[0].ID)
	for _, w := range []string{"session " + sessions[0].ID, "status      dormant: the host shut down", "fingerprint", "technologies go", "decisions that involved it", "recent events"} {
		if !strings.Contains(out, w) {
			t.Errorf("sessions show: output does not contain %q:\n%s", w, out)
		}
	}
	if code != 0 {
		t.Errorf("sessions show: exit %d", code)
	}

	// A second run starts from the dormant sessions: no spawns.
	code, out, _ = run(t, env, "run", "../../examples/code-tour", "--json")
	var result struct {
		Summary struct {
			Spawned    int `json:"spawned"`
			Rehydrated int `json:"rehydrated"`
			Succeeded  int `json:"succeeded"`
		} `json:"summary"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &result) != nil {
		t.Fatalf("second run: %d %q", code, out)
	}
	if result.Summary.Succeeded != 48 || result.Summary.Spawned != 0 || result.Summary.Rehydrated == 0 {
		t.Errorf("second run: got %+v, want every session rehydrated and none spawned", result.Summary)
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	two := writeConfig(t, `agent "g" { bundled = "gotour" }
pipeline "a" {
  agent = "g"
  task "x" { prompt = "summary errors" }
}
pipeline "b" {
  agent = "g"
  task "y" { prompt = "summary errors" }
}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "run needs a config with a pipeline"},
		{[]string{"run", dir}, "holds no hearth.hcl"},
		{[]string{"run", two}, "has 2 pipelines; name one: a, b"},
		{[]string{"run", two, "c"}, `has no pipeline "c"; its pipelines: a, b`},
	} {
		code, _, errOut := run(t, nil, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: got %d %q, want exit 2 with %q", tt.args, code, errOut, tt.want)
		}
	}
}

func TestSessionsWithoutDataDir(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "none")}, "sessions", "list")
	if code != exitUsage || !strings.Contains(errOut, "no data directory at") {
		t.Errorf("got %d %q", code, errOut)
	}
	code, _, errOut = run(t, nil, "sessions", "show", "nope-12345678")
	if code == 0 || !strings.Contains(errOut, `no such session "nope-12345678"`) {
		t.Errorf("unknown session: got %d %q", code, errOut)
	}
}

// TestSessionsAfterACrash: a session whose record says live belonged to a
// host that died; the CLI, which could open the directory, shows it as
// the next host will find it: dormant.
func TestSessionsAfterACrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := store.Open(dir, store.Write, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutSession(context.Background(), record.Session{ID: "gotour-0000abcd", Agent: "gotour", Status: record.SessionLive, PID: 4242, HasState: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, map[string]string{"HEARTH_DATA_DIR": dir}, "sessions", "show", "gotour-0000abcd", "--json")
	var d struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
		PID    int    `json:"pid"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Status != "dormant" || d.Reason != "the host stopped without retiring it" || d.PID != 0 {
		t.Errorf("got %d %q", code, out)
	}
}

func TestGuardCheckStudyPlanner(t *testing.T) {
	t.Parallel()
	cfg := "../../examples/study-planner/hearth.hcl"
	for file, fired := range map[string]string{
		"collecting-missing-midterm.json":        "courses-have-midterms",
		"collecting-complete.json":               "",
		"ingesting-partial-without-warning.json": "files-ingested",
		"ingesting-partial-with-warning.json":    "",
		"planning-gap.json":                      "every-day-planned",
		"planning-complete.json":                 "",
	} {
		t.Run(file, func(t *testing.T) {
			code, out, errOut := run(t, nil, "--config", cfg, "guard", "check", "--hook", "transition",
				"--input", "../../examples/study-planner/transitions/"+file, "--json")
			var v guardCheckView
			if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			if got := strings.Join(v.Fired, ","); got != fired {
				t.Errorf("fired %q, want %q", got, fired)
			}
			if len(v.Guards) != 3 {
				t.Errorf("got %d guards, want all 3 reported", len(v.Guards))
			}
		})
	}
}

func TestGuardCheck(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `guard "dates" {
  hook      = "transition"
  condition = "len(dates(state.from, state.to)) > 3"
  message   = "too long"
}`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "STDIN": `{"from":"a","to":"b","state":{"from":"2026-01-01","to":"soon"}}`}
	code, out, _ := run(t, env, "guard", "check", "--hook", "transition", "--input", "-")
	if code != exitWork || !strings.Contains(out, `ERROR    dates`) || !strings.Contains(out, `want a date as "YYYY-MM-DD", got "soon"`) {
		t.Errorf("a condition failing on the input: got %d %q, want exit 1 and the error", code, out)
	}
	env["STDIN"] = `{"from":"a","to":"b","state":{"from":"2026-01-01","to":"2026-01-02"}}`
	code, out, _ = run(t, env, "guard", "check", "--hook", "transition", "--input", "-")
	if code != 0 || !strings.Contains(out, "passed   dates") || !strings.Contains(out, "no guard fired: transition would go ahead") {
		t.Errorf("got %d %q", code, out)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"guard", "check", "--hook", "transition"}, "needs --hook"},
		{[]string{"guard", "check", "--hook", "lunch", "--input", "-"}, `unknown hook "lunch"`},
		{[]string{"guard", "check", "--hook", "transition", "--input", "/nonexistent.json"}, "read the input"},
	} {
		code, _, errOut := run(t, map[string]string{"HEARTH_CONFIG": cfg}, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: got %d %q, want exit 2 with %q", tt.args, code, errOut, tt.want)
		}
	}
	code, _, errOut := run(t, nil, "guard", "check", "--hook", "transition", "--input", "-")
	if code != exitUsage || !strings.Contains(errOut, "needs --config") {
		t.Errorf("without a config: got %d %q", code, errOut)
	}
}

func TestConfigSample(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, nil, "config", "sample")
	if code != 0 || !strings.Contains(out, `agent "gotour"`) || !strings.Contains(out, "guard \"no-secrets\"") {
		t.Errorf("got %d %q", code, out)
	}
}

// TestReloadOnSIGHUP: a running host reloads its config on SIGHUP; a bad
// file is refused with its diagnostics and the old config keeps running;
// a good one takes effect for the task already running.
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	agent := `agent "scripted" {
  command = ["` + os.Args[0] + `"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}
`
	cfgPath := writeConfig(t, agent)
	// In the plugin's workspace, the config's directory.
	release := filepath.Join(filepath.Dir(cfgPath), "release")
	started := filepath.Join(filepath.Dir(cfgPath), "started")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	hups := make(chan os.Signal, 1)
	stderr := newWatchWriter("")
	var stdout bytes.Buffer
	dataDir := t.TempDir()
	m := &Main{
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: stderr,
		Getenv: func(k string) string {
			return map[string]string{"HEARTH_CONFIG": cfgPath, "HEARTH_DATA_DIR": dataDir}[k]
		},
		Signals: func() (<-chan os.Signal, func()) { return make(chan os.Signal), func() {} },
		Reloads: func() (<-chan os.Signal, func()) { return hups, func() {} },
	}
	done := make(chan int)
	go func() {
		done <- m.Run(context.Background(), []string{"submit", "scripted", "touch:" + started + ";wait:" + release + ";read:app/.env"})
	}()
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	// A bad file: refused, with its position; the old config stays.
	if err := os.WriteFile(cfgPath, []byte(agent+"guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"pahts != nil\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hups <- syscall.SIGHUP
	stderr.wait(t, "reload refused, the running config stays")
	stderr.wait(t, "unknown name pahts (did you mean paths?)")
	// A good file: in force at once, for the task already running.
	if err := os.WriteFile(cfgPath, []byte(agent+"guard \"no-secrets\" {\n  hook = \"pre_tool_use\"\n  condition = \"any(paths, glob(#, '**/.env'))\"\n  message = \"not now\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hups <- syscall.SIGHUP
	stderr.wait(t, "config reloaded")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "denied app/.env: not now") {
		t.Errorf("output %q: want the reloaded guard to have denied the read", stdout.String())
	}
}

func TestConfigValidateChecksPrograms(t *testing.T) {
	t.Parallel()
	missing := writeConfig(t, `agent "ghost" { command = ["/nonexistent/agent"] }`)
	code, _, errOut := run(t, nil, "config", "validate", missing)
	if code != exitUsage || !strings.Contains(errOut, `agent "ghost": plugin program not found`) {
		t.Errorf("a missing program: exit %d, %q", code, errOut)
	}
	pinned := writeConfig(t, "agent \"sh\" {\n  command = [\"/bin/sh\"]\n  sha256 = \""+strings.Repeat("0", 64)+"\"\n}\n")
	code, _, errOut = run(t, nil, "config", "validate", pinned)
	if code != exitUsage || !strings.Contains(errOut, "does not match its pinned sha256") || !strings.Contains(errOut, "the config pins 0000") {
		t.Errorf("a pin that does not match: exit %d, %q", code, errOut)
	}
	fine := writeConfig(t, `agent "sh" { command = ["/bin/sh"] }`)
	if code, out, errOut := run(t, nil, "config", "validate", fine); code != 0 {
		t.Errorf("a program that exists: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSessionsShowSaysWhyATaskFailed: a failed task's event in `sessions
// show` carries its error, not only "task-... failed".
func TestSessionsShowSaysWhyATaskFailed(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HEARTH_DATA_DIR": t.TempDir()}
	if code, out, errOut := run(t, env, "submit", "gotour", "summary no/such/pkg", "--dir", "no/such/pkg"); code == 0 {
		t.Fatalf("a question about a package that does not exist succeeded:\n%s%s", out, errOut)
	}
	code, out, _ := run(t, env, "sessions", "list", "--json")
	var sessions []struct {
		ID string `json:"id"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sessions) != nil || len(sessions) != 1 {
		t.Fatalf("sessions list: %d %q", code, out)
	}
	code, out, _ = run(t, env, "sessions", "show", sessions[0].ID)
	var failed string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "task.failed") {
			failed = l
		}
	}
	if code != 0 || !strings.Contains(failed, "failed: ") || !strings.Contains(failed, "no/such/pkg") {
		t.Errorf("sessions show: exit %d, the failed task's line %q does not say why:\n%s", code, failed, out)
	}
}
