package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/hosttest"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/procwait"
	"github.com/hearth-dev/hearth/internal/scratch"
	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/sdk"
)

func TestSubmitRunsOnARealPlugin(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	ctx := context.Background()

	first, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Name: "first", Prompt: "echo:hello;read:src/a.go;pid"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Decision.Action != hearth.ActionSpawned {
		t.Errorf("first task: got decision %+v, want a spawn", first.Decision)
	}
	if !strings.HasPrefix(first.Result.Output, "hello ") || first.ToolUses != 1 {
		t.Errorf("first task: got result %+v and %d tool uses, want output \"hello <pid>\" and one tool use", first.Result, first.ToolUses)
	}
	if len(first.Artifact.ModifiedFiles) != 1 || first.Artifact.ModifiedFiles[0] != "src/a.go" {
		t.Errorf("artifact: got %+v, want src/a.go", first.Artifact)
	}

	second, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Decision.Action != hearth.ActionReused || second.Session != first.Session {
		t.Errorf("second task: got session %s (%+v), want warm session %s reused", second.Session, second.Decision, first.Session)
	}
	pid := strings.Fields(first.Result.Output)[1]
	if second.Result.Output != pid {
		t.Errorf("second task ran in process %s, want %s", second.Result.Output, pid)
	}
}

func TestUnknownAgent(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	_, err := h.Submit(context.Background(), hearth.Task{Agent: "nope"})
	if !errors.Is(err, hearth.ErrUnknownAgent) || !strings.Contains(err.Error(), "configured agents: scripted") {
		t.Errorf("got %v, want ErrUnknownAgent listing the configured agents", err)
	}
	if _, err := h.Place(context.Background(), "nobody", sdk.Hints{}); !errors.Is(err, hearth.ErrUnknownAgent) {
		t.Errorf("Place for an unknown agent: got %v", err)
	}
}

// TestFailingPlugins covers every way a plugin can fail to start: each is
// an error naming agent and session, with a hint, and no process is left.
func TestFailingPlugins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		agent func() *config.Agent
		is    error
		want  []string
	}{
		{"hangs before the handshake", func() *config.Agent {
			a := testAgent("hanger", "hang")
			a.StartTimeout = 500 * time.Millisecond
			return a
		}, hearth.ErrStartTimeout, []string{`agent "hanger"`, "no handshake within 500ms", "raise start_timeout"}},
		{"writes garbage to stdout", func() *config.Agent { return testAgent("chatty", "garbage") },
			hearth.ErrHandshake, []string{`wrote "hello from a program that is not a plugin" to stdout`, "log to stderr instead"}},
		{"speaks another protocol version", func() *config.Agent { return testAgent("old", "wrong-version") },
			hearth.ErrProtocolVersion, []string{"speaks agent protocol version 99, this host speaks versions 1 and 2", "rebuild the agent"}},
		{"exits at start", func() *config.Agent { return testAgent("quitter", "exit") },
			hearth.ErrPluginExited, []string{"boom: cannot read settings.toml", "must call plugin.Serve"}},
		{"is missing", func() *config.Agent {
			a := testAgent("ghost", "agent")
			a.Command = []string{filepath.Join(t.TempDir(), "no-such-agent")}
			return a
		}, hearth.ErrPluginStart, []string{"no-such-agent", "check the agent's command"}},
		{"does not match its checksum", func() *config.Agent {
			a := testAgent("pinned", "agent")
			a.SHA256 = strings.Repeat("0", 64)
			return a
		}, hearth.ErrChecksumMismatch, []string{"the config pins 0000", "update sha256 in the config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.agent()
			h := newTestHost(t, a)
			sub := subscribe(h, 16)
			defer sub.Close()
			_, err := h.Submit(context.Background(), hearth.Task{Agent: a.Name, Prompt: "echo:x"})
			if !errors.Is(err, tt.is) {
				t.Fatalf("got %v, want %v", err, tt.is)
			}
			var pe *hearth.PluginError
			if !errors.As(err, &pe) || pe.Agent != a.Name || !strings.HasPrefix(pe.Session, a.Name+"-") {
				t.Fatalf("got %#v, want a *PluginError naming agent %q and its session", err, a.Name)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if n := h.agents()[0].Live; n != 0 {
				t.Errorf("live sessions: got %d, want 0", n)
			}
		})
	}
}

func TestChecksumPinning(t *testing.T) {
	t.Parallel()
	sum := sha256.New()
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(sum, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	a := testAgent("pinned", "agent")
	a.SHA256 = hex.EncodeToString(sum.Sum(nil))
	h := newTestHost(t, a)
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "pinned", Prompt: "echo:ok"}); err != nil {
		t.Fatalf("with the right checksum: %v", err)
	}
}

func TestCrashMidTask(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	ctx := context.Background()
	out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid"})
	if err != nil {
		t.Fatal(err)
	}
	pid := hosttest.Atoi(t, out.Result.Output)

	_, err = h.Submit(ctx, hearth.Task{ID: "doomed", Agent: "scripted", Prompt: "crash"})
	if !errors.Is(err, hearth.ErrPluginExited) {
		t.Fatalf("got %v, want ErrPluginExited", err)
	}
	for _, w := range []string{`agent "scripted" (session ` + out.Session, "run task doomed", "exit status 2", "the agent crashed"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
	if !procwait.Gone(pid, 5*time.Second) {
		t.Errorf("crashed plugin %d is still running", pid)
	}
	// The host carries on with a fresh session.
	again, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:again"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Decision.Action != hearth.ActionSpawned || again.Session == out.Session {
		t.Errorf("after the crash: got %+v on %s, want a new session", again.Decision, again.Session)
	}
}

func TestTaskPastItsDeadlineStopsTheSession(t *testing.T) {
	t.Parallel()
	a := testAgent("scripted", "agent")
	a.TaskTimeout = 2 * time.Second
	h := newTestHost(t, a)
	ctx := context.Background()
	out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid"})
	if err != nil {
		t.Fatal(err)
	}
	pid := hosttest.Atoi(t, out.Result.Output)
	_, err = h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "hang"})
	if !errors.Is(err, hearth.ErrPluginHung) || !strings.Contains(err.Error(), "did not finish within its 2s task_timeout") {
		t.Fatalf("got %v, want ErrPluginHung naming the task_timeout", err)
	}
	if !procwait.Gone(pid, 5*time.Second) {
		t.Errorf("hung plugin %d is still running", pid)
	}
}

func TestCallerCancellationKeepsTheSession(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	sub := subscribe(h, 64)
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "progress:0.5;sleep:1h"})
		errc <- err
	}()
	waitEvent(t, sub, hearth.EventTaskProgress)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:still here"})
	if err != nil || out.Decision.Action != hearth.ActionReused {
		t.Errorf("after a cancelled task: got %v, %+v; want the same session reused", err, out)
	}
}

func TestHealthCheckStopsAFrozenPlugin(t *testing.T) {
	t.Parallel()
	a := testAgent("scripted", "agent")
	a.HealthInterval = 100 * time.Millisecond
	h := newTestHost(t, a)
	sub := subscribe(h, 64)
	defer sub.Close()
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "pid"})
	if err != nil {
		t.Fatal(err)
	}
	pid := hosttest.Atoi(t, out.Result.Output)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e := waitEvent(t, sub, hearth.EventSessionLost)
	if e.Session != out.Session || !strings.Contains(e.Err, "health check") {
		t.Errorf("got %+v, want session %s lost to a failed health check", e, out.Session)
	}
	if !procwait.Gone(pid, 5*time.Second) {
		t.Errorf("frozen plugin %d is still running", pid)
	}
}

func TestStoppingAPluginTakesItsProcessGroup(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "pid;child"})
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(out.Result.Output)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range pids {
		if !procwait.Gone(hosttest.Atoi(t, p), 5*time.Second) {
			t.Errorf("process %s survived Close", p)
		}
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted"}); !errors.Is(err, hearth.ErrClosed) {
		t.Errorf("Submit after Close: got %v, want ErrClosed", err)
	}
}

// TestStoppingAPluginTakesWhatLeftItsGroup (issue 25): a child the
// plugin started in a session of its own is out of its process group,
// which the stop kills; the plugin's cgroup still holds it, and the stop
// kills that too.
func TestStoppingAPluginTakesWhatLeftItsGroup(t *testing.T) {
	t.Parallel()
	if err := process.Cgroups(); err != nil {
		testenv.Missing(t, "no cgroup for plugins: "+err.Error(), "run as root on a system with cgroup v2, as CI does")
	}
	h := newTestHost(t, testAgent("scripted", "agent"))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "setsidchild"})
	if err != nil {
		t.Fatal(err)
	}
	pid := hosttest.Atoi(t, strings.TrimSpace(out.Result.Output))
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !procwait.Gone(pid, 5*time.Second) {
		t.Errorf("the plugin's child in a session of its own, %d, survived Close", pid)
	}
}

func TestKill9OfTheHostLeavesNoPlugin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"with the death signal", nil},
		// Without Pdeathsig, the SDK's parent watch must end the plugin,
		// and its process group with it.
		{"with the parent watch alone", []string{"HEARTH_TEST_NO_PDEATHSIG=1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, sc := startHost(t, "kill9", tt.env...)
			hosttest.CheckKill9(t, cmd, sc, "plugin")
		})
	}
}

func TestSIGTERMWithATaskInFlight(t *testing.T) {
	t.Parallel()
	hosttest.CheckSIGTERM(t, func(t *testing.T, release, grace string) (*exec.Cmd, *bufio.Scanner) {
		return startHost(t, "sigterm", "HEARTH_TEST_RELEASE="+release, "HEARTH_TEST_GRACE="+grace)
	})
}

// waitEvent returns the next event of kind, failing the test if none comes.
func waitEvent(t *testing.T, sub *subscription, kind hearth.EventKind) hearth.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				t.Fatalf("subscription closed before a %s event", kind)
			}
			if e.Kind == kind {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event within 30s", kind)
		}
	}
}

// TestLostSessionsCountAgainstMaxDormant reproduces issue 14's ninth
// finding: sessions lost to plugin crashes stayed in the store past
// max_dormant until a session next retired.
func TestLostSessionsCountAgainstMaxDormant(t *testing.T) {
	t.Parallel()
	a := testAgent("scripted", "agent")
	a.Pool.MaxDormant = 2
	h := newTestHost(t, a)
	sub := subscribe(h, 64)
	defer sub.Close()
	ctx := context.Background()
	for range 5 {
		if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "crash"}); !errors.Is(err, hearth.ErrPluginExited) {
			t.Fatalf("got %v, want ErrPluginExited", err)
		}
	}
	// A session is marked lost by the process watcher, after the task's
	// error is returned; its session.lost event comes once its eviction
	// is done.
	for lost := 0; lost < 5; {
		if e := next(t, sub); e.Kind == hearth.EventSessionLost {
			lost++
		}
	}
	recs, err := h.store.SessionRecords()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 2 {
		t.Errorf("%d lost sessions kept, want at most max_dormant = 2", len(recs))
	}
}

// TestPluginsGetAnExplicitEnvironment reproduces issue 13's sixth finding:
// an agent printed HEARTH_TOKEN and AWS_SECRET_ACCESS_KEY from the
// daemon's environment. A plugin gets the variables its block passes
// (pass_env, by default what programs need) and its env, nothing else.
func TestPluginsGetAnExplicitEnvironment(t *testing.T) {
	t.Setenv("HEARTH_TOKEN", "s3cret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-s3cret")
	t.Setenv("TZ", "UTC")
	h := newTestHost(t, testAgent("scripted", "agent"))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "getenv:HEARTH_TOKEN;getenv:AWS_SECRET_ACCESS_KEY;getenv:TZ;getenv:GORACE"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "HEARTH_TOKEN unset AWS_SECRET_ACCESS_KEY unset TZ=UTC GORACE=atexit_sleep_ms=0"; out.Result.Output != want {
		t.Errorf("the plugin's environment: %q, want %q (secrets unset, the default pass_env and the block's env set)", out.Result.Output, want)
	}

	a := testAgent("passing", "agent")
	a.PassEnv = []string{"AWS_SECRET_ACCESS_KEY"}
	h2 := newTestHost(t, a)
	out, err = h2.Submit(context.Background(), hearth.Task{Agent: "passing", Prompt: "getenv:AWS_SECRET_ACCESS_KEY;getenv:TZ"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "AWS_SECRET_ACCESS_KEY=aws-s3cret TZ unset"; out.Result.Output != want {
		t.Errorf("with pass_env: %q, want %q (what it names, and only that)", out.Result.Output, want)
	}
}

// TestPermanentStartFailuresAreNotRetried: a pinned program that does not
// match, or a missing one, fails its run's task at once (issue 13: a
// mismatch was retried three times as if transient).
func TestPermanentStartFailuresAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tune func(*config.Agent)
		is   error
	}{
		{"mismatch", func(a *config.Agent) { a.SHA256 = strings.Repeat("0", 64) }, hearth.ErrChecksumMismatch},
		{"missing", func(a *config.Agent) { a.Command = []string{"/nonexistent/agent"} }, hearth.ErrProgramMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAgent("scripted", "agent")
			tc.tune(a)
			h := newTestHost(t, a)
			info, err := startRun(t, h, pipe("start", []string{"only", "echo:x"}), hearth.RunOptions{})
			if err == nil || info.Status != hearth.RunFailed {
				t.Fatalf("run = %+v, %v; want failed", info, err)
			}
			d, err := h.Run(context.Background(), info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if task := d.TaskList[0]; task.Attempt != 1 || task.Failures != 1 {
				t.Errorf("task = %+v; want one attempt, not retried", task)
			}
		})
	}
}

// TestAPluginsTemporaryDirectoryGoesWithIt: every plugin, confined or
// not, gets a TMPDIR of its own (go-plugin's directory for its sockets),
// and it is removed with what is in it when the plugin stops (the Claude Code agent's state directories piled up in
// /tmp from unconfined plugins before).
func TestAPluginsTemporaryDirectoryGoesWithIt(t *testing.T) {
	t.Parallel()
	on := testAgent("on", "agent")
	off := testAgent("off", "agent")
	off.Confinement = config.ConfinementOff
	h := newTestHost(t, on, off)
	ctx := context.Background()
	dirs := map[string]string{}
	for _, agent := range []string{"on", "off"} {
		out, err := h.Submit(ctx, hearth.Task{Agent: agent, Prompt: "getenv:TMPDIR"})
		if err != nil {
			t.Fatal(err)
		}
		dir, ok := strings.CutPrefix(out.Result.Output, "TMPDIR=")
		if !ok || dir == "" || filepath.Clean(dir) == filepath.Clean(os.TempDir()) {
			t.Fatalf("%s: the plugin's TMPDIR is %q, want a directory of its own", agent, out.Result.Output)
		}
		// The directory holds the plugin's sockets, so it is not empty
		// when it has to go.
		if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
			t.Fatalf("%s: its TMPDIR %s while it runs: %d entries, %v", agent, dir, len(ents), err)
		}
		dirs[agent] = dir
	}
	if dirs["on"] == dirs["off"] {
		t.Fatalf("two plugins share the TMPDIR %s", dirs["on"])
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for agent, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: its TMPDIR %s outlived the plugin (%v)", agent, dir, err)
		}
	}
}

// TestAHostSweepsWhatDeadHostsLeft: a host, as it starts, removes in the
// background the directory a host that is gone left in the temporary
// directory (its lock is free), and leaves a live host's alone.
func TestAHostSweepsWhatDeadHostsLeft(t *testing.T) {
	// Not parallel: TMPDIR is the process's.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := filepath.Join(tmp, scratch.Prefix+"dead")
	if err := os.MkdirAll(filepath.Join(dead, "plugin-dir1", "transcript"), 0o700); err != nil {
		t.Fatal(err)
	}
	live, err := scratch.Dir() // this process's, locked
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pr.Close()
	swept := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "removed what hosts that are gone left") {
				swept <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	h, err := New(Options{
		Config: &config.Config{DataDir: t.TempDir(), Matcher: config.DefaultMatcher()},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: pw}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	select {
	case line := <-swept:
		if !strings.Contains(line, dead) {
			t.Errorf("the sweep's line %q does not name %s", line, dead)
		}
	case <-time.After(time.Minute): // a hang guard, not a timing
		t.Fatal("the host did not sweep within a minute")
	}
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead host's %s is still there (%v)", dead, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live host's own %s: %v", live, err)
	}
}
