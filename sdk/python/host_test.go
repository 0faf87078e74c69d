package python

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/hosttest"
	"github.com/hearth-dev/hearth/sdk"
)

func TestPythonAgentRunsTasksOnAWarmSession(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	h := newHost(t, agentHCL(python, sdkDir(t), "", ""), testWriter{t})
	ctx := context.Background()

	first, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:hello;read:src/a.py;pid", Hints: hintsFor("src/a.py")})
	if err != nil {
		t.Fatal(err)
	}
	if first.Decision.Action != hearth.ActionSpawned {
		t.Errorf("first task: got decision %+v, want a spawn", first.Decision)
	}
	if !strings.HasPrefix(first.Result.Output, "hello ") || first.ToolUses != 1 {
		t.Errorf("first task: got result %+v and %d tool uses, want output \"hello <pid>\" and one tool use", first.Result, first.ToolUses)
	}
	if got := first.Artifact.ModifiedFiles; len(got) != 1 || got[0] != "src/a.py" {
		t.Errorf("artifact: got %+v, want src/a.py", first.Artifact)
	}
	second, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid;seen", Hints: hintsFor("src/a.py")})
	if err != nil {
		t.Fatal(err)
	}
	if second.Decision.Action != hearth.ActionReused || second.Session != first.Session {
		t.Errorf("second task: got session %s (%+v), want warm session %s reused", second.Session, second.Decision, first.Session)
	}
	pid := strings.Fields(first.Result.Output)[1]
	if second.Result.Output != pid+" src/a.py" {
		t.Errorf("second task: got %q, want %q (the same process, which remembers what it read)", second.Result.Output, pid+" src/a.py")
	}
}

func hintsFor(files ...string) sdk.Hints {
	return sdk.Hints{Files: files}
}

func TestGuardDeniesAPythonToolUse(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secrets", "key.txt"), []byte("hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := agentHCL(python, sdkDir(t), "", "") + `
guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('secrets/**')"
  message   = "secrets stay secret"
}
`
	src = strings.Replace(src, `workspace     = "`+os.TempDir()+`"`, `workspace     = "`+ws+`"`, 1)
	h := newHost(t, src, testWriter{t})
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "tool:notes.txt;tool:secrets/key.txt;read:secrets/key.txt"})
	if err != nil {
		t.Fatal(err)
	}
	want := `plain notes Denied: Read secrets/key.txt was denied by guard "no-secrets": secrets stay secret denied secrets/key.txt: secrets stay secret`
	if out.Result.Output != want {
		t.Errorf("got output\n%q\nwant\n%q", out.Result.Output, want)
	}
	if out.ToolUses != 3 {
		t.Errorf("got %d tool uses reported, want 3 (one read, two denials)", out.ToolUses)
	}
}

// TestPythonAgentInARun: a Python task of a run reads and writes the run's
// state and checkpoints it (RunCallbacks), and the next task reads what the
// first wrote; a write outside its sections fails the task for good.
func TestPythonAgentInARun(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	dir := t.TempDir()
	src := agentHCL(python, sdkDir(t), "", "") + `
pipeline "stateful" {
  agent = "scripted"
  state {
    initial = {
      inputs = { n = 1 }
    }
    owner "scripted" {
      writes = ["out"]
    }
  }
  task "writer" {
    prompt = "get:inputs;set:out={\"seen\": 1};checkpoint:mid"
  }
  task "reader" {
    prompt     = "get:out"
    depends_on = ["writer"]
  }
}

pipeline "trespass" {
  agent = "scripted"
  state {
    owner "scripted" {
      writes = ["out"]
    }
  }
  task "writer" {
    prompt = "set:inputs=2"
  }
}
`
	file := filepath.Join(dir, "hearth.hcl")
	cfg, err := config.Parse([]byte(src), file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = filepath.Join(dir, "data")
	h, err := engine.New(engine.Options{Config: cfg, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	ctx := context.Background()
	w, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: cfg.Pipeline("stateful")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	outs, err := h.RunOutputs(ctx, w.ID())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range outs {
		got[o.Task] = o.Output
	}
	if !strings.HasPrefix(got["writer"], `{"n": 1} checkpoint=`) || got["reader"] != `{"seen": 1}` {
		t.Errorf("got outputs %q, want the writer to read inputs and checkpoint, the reader to read what it wrote", got)
	}

	w2, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: cfg.Pipeline("trespass")})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	info, err := w2.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), `"inputs"`) {
		t.Fatalf("a write outside the agent's sections: got %v, want the run failed naming the section", err)
	}
	d, err := h.Run(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range d.TaskList {
		if task.Attempt != 1 {
			t.Errorf("task %s ran %d times, want once: a write outside the agent's sections is not retried", task.Name, task.Attempt)
		}
	}
}

// TestPythonLogLinesReachTheHost: what the agent logs through cb.logger
// is filed in the host's log as a structured entry, with its session, task
// and fields, at its level.
func TestPythonLogLinesReachTheHost(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	log := &logWatch{want: "looked everywhere", seen: make(chan string, 1)}
	h := newHost(t, agentHCL(python, sdkDir(t), "", ""), log)
	out, err := h.Submit(context.Background(), hearth.Task{ID: "logged", Agent: "scripted", Prompt: "log:looked everywhere"})
	if err != nil {
		t.Fatal(err)
	}
	// The host reads the plugin's stderr on its own: the line may come
	// after the result.
	var line string
	select {
	case line = <-log.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's log line did not reach the host's log within 10s")
	}
	for _, w := range []string{"[WARN]", "session=" + out.Session, "task=logged", "step=log"} {
		if !strings.Contains(line, w) {
			t.Errorf("host log line %q does not contain %q", line, w)
		}
	}
}

// logWatch is the host's log output: it hands the first line containing
// want to seen.
type logWatch struct {
	want string
	seen chan string
	once sync.Once
}

func (w *logWatch) Write(p []byte) (int, error) {
	for _, l := range strings.Split(string(p), "\n") {
		if strings.Contains(l, w.want) {
			w.once.Do(func() { w.seen <- l })
		}
	}
	return len(p), nil
}

// TestPythonPluginFailures: every way a Python plugin can fail is an error
// of the right kind, naming the agent, with a hint; no process is left.
func TestPythonPluginFailures(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	tests := []struct {
		name, mode, prompt, extra string
		is                        error
		want                      []string
	}{
		{"hangs before the handshake", "hang", "echo:x", `  start_timeout = "1s"`, hearth.ErrStartTimeout, []string{`agent "scripted"`, "no handshake within 1s"}},
		{"writes garbage to stdout", "garbage", "echo:x", "", hearth.ErrHandshake, []string{`wrote "hello from a program that is not a plugin" to stdout`}},
		{"speaks another protocol version", "wrongversion", "echo:x", "", hearth.ErrProtocolVersion, []string{"speaks agent protocol version 99, this host speaks versions 1 and 2"}},
		{"exits at start", "exit", "echo:x", "", hearth.ErrPluginExited, []string{"boom: cannot read settings.toml"}},
		{"crashes mid-task", "", "crash", "", hearth.ErrPluginExited, []string{`agent "scripted"`, "exit status 2"}},
		{"hangs past its deadline", "", "hang", `  task_timeout = "2s"`, hearth.ErrPluginHung, []string{"did not finish within its 2s task_timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := agentHCL(python, sdkDir(t), tt.mode, tt.extra)
			if strings.Contains(tt.extra, "start_timeout") {
				src = strings.Replace(src, `  start_timeout = "20s"`+"\n", "", 1)
			}
			h := newHost(t, src, testWriter{t})
			_, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: tt.prompt})
			if !errors.Is(err, tt.is) {
				t.Fatalf("got %v, want %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if n := status(t, h).Agents[0].Live; n != 0 {
				t.Errorf("live sessions: got %d, want 0", n)
			}
		})
	}
}

// TestPythonTaskErrorsKeepTheirKind: an agent's exceptions and refused
// reports reach the host as the Go SDK's errors would.
func TestPythonTaskErrorsKeepTheirKind(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	h := newHost(t, agentHCL(python, sdkDir(t), "", ""), testWriter{t})
	tests := []struct{ prompt, want string }{
		{"permanent:bad input", "bad input"},
		{"fail:flaky", "RuntimeError: flaky"},
		{"nooutcome", `tool use "Read" has no outcome`},
	}
	for _, tt := range tests {
		_, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: tt.prompt})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.prompt, err, tt.want)
		}
	}
	// The session survives its tasks' failures.
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:still here"})
	if err != nil || out.Result.Output != "still here" {
		t.Errorf("after the failures: got %v, %v", out, err)
	}
}

// TestCancellationReachesPythonCode: a caller's cancellation reaches the
// agent's code (cb.cancelled, cb.wait), and the session goes on.
func TestCancellationReachesPythonCode(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	fifo := filepath.Join(t.TempDir(), "cancelled")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, agentHCL(python, sdkDir(t), "", "", "HEARTH_TEST_CANCELLED="+fifo), testWriter{t})
	sub, err := h.Subscribe(context.Background(), hearth.EventFilter{Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "progress:0.5;cancelled"})
		errc <- err
	}()
running:
	for {
		select {
		case e := <-sub.Events():
			if e.Kind == hearth.EventTaskProgress {
				break running
			}
		case err := <-errc:
			t.Fatalf("the task ended before it reported progress: %v", err)
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// The agent writes to the FIFO once its code saw the cancellation;
	// opening it blocks until then.
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	select {
	case s := <-got:
		if s != "cancelled=True" {
			t.Errorf("the agent wrote %q, want cancelled=True", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's code did not see the cancellation within 10s")
	}
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:still here"})
	if err != nil || out.Result.Output != "still here" {
		t.Errorf("after the cancellation: got %v, %v", out, err)
	}
}

func TestHostKill9LeavesNoPythonProcess(t *testing.T) {
	t.Parallel()
	cmd, sc := startHost(t, "kill9")
	hosttest.CheckKill9(t, cmd, sc, "Python plugin")
}

func TestSIGTERMWithAPythonTaskInFlight(t *testing.T) {
	t.Parallel()
	hosttest.CheckSIGTERM(t, func(t *testing.T, release, grace string) (*exec.Cmd, *bufio.Scanner) {
		return startHost(t, "sigterm", "HEARTH_PY_TEST_RELEASE="+release, "HEARTH_PY_TEST_GRACE="+grace)
	})
}
