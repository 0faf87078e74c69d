package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

// stepsConfig is a three-task pipeline of the scripted agent: second
// opens the FIFO started (which tells the test it runs) and waits for the
// file release; third prints the state section direction. The config is
// written beside started: its directory is the plugin's workspace, all a
// confined plugin reaches.
func stepsConfig(t *testing.T, started, release string) string {
	t.Helper()
	return writeConfigIn(t, filepath.Dir(started), `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}

pipeline "steps" {
  agent = "scripted"
  state {
    initial = { direction = "south" }
  }
  task "first" {
    prompt = "echo:first;cost:0.25"
  }
  task "second" {
    prompt     = "touch:`+started+`;wait:`+release+`;echo:second;cost:0.5"
    depends_on = ["first"]
  }
  task "third" {
    prompt     = "get:direction"
    depends_on = ["second"]
  }
}
`)
}

// signalled opens the FIFO path in the background and reports when a
// task has opened it for writing (the scripted agent's touch step).
func signalled(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	c := make(chan struct{})
	go func() {
		_, _ = os.ReadFile(path)
		close(c)
	}()
	return c
}

// interruptedRun starts hearth run steps, presses Ctrl-C twice once the
// second task runs (the second press stops it without waiting for its
// grace period), and returns the run's ID and what the command printed.
func interruptedRun(t *testing.T, env map[string]string, started string) (string, string) {
	t.Helper()
	sigs := make(chan os.Signal, 2)
	stdout, stderr := newWatchWriter(""), newWatchWriter("")
	m := &Main{
		Stdout: stdout, Stderr: stderr,
		Getenv:  func(k string) string { return env[k] },
		Signals: func() (<-chan os.Signal, func()) { return sigs, func() {} },
	}
	running := signalled(t, started)
	done := make(chan int)
	go func() { done <- m.Run(context.Background(), []string{"run", "steps", "-q"}) }()
	<-running
	sigs <- syscall.SIGINT
	stderr.wait(t, "signal again to stop now")
	sigs <- syscall.SIGINT
	if code := <-done; code != exitWork {
		t.Fatalf("interrupted run: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitWork, stdout, stderr)
	}
	out := stdout.String() + stderr.String()
	i := strings.Index(out, "hearth runs resume ")
	if i < 0 {
		t.Fatalf("an interrupted run does not say how to resume it:\n%s", out)
	}
	return strings.Fields(out[i+len("hearth runs resume "):])[0], out
}

func runJSON(t *testing.T, env map[string]string, v any, args ...string) {
	t.Helper()
	code, out, errOut := run(t, env, args...)
	if code != 0 {
		t.Fatalf("hearth %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("hearth %s: %v in %q", strings.Join(args, " "), err, out)
	}
}

type runResult struct {
	Run     hearth.RunDetail `json:"run"`
	Summary runSummary       `json:"summary"`
}

// outputOf is task's current output in a run's JSON, as runs show
// --json --outputs prints it.
func outputOf(t *testing.T, env map[string]string, id, task string) string {
	t.Helper()
	var show struct {
		Outputs []hearth.TaskOutput `json:"outputs"`
	}
	runJSON(t, env, &show, "runs", "show", id, "--json")
	for _, o := range show.Outputs {
		if o.Task == task && o.Current {
			return o.Output
		}
	}
	t.Fatalf("run %s: task %s has no current output in %+v", id, task, show.Outputs)
	return ""
}

// TestRunsInterruptCancelResumeFork drives the runs commands as a person
// would: a run interrupted with Ctrl-C is paused and says how to resume;
// one is cancelled and deleted; the other is resumed without running its
// finished task again, then forked from its first checkpoint with a new
// direction, which leaves it untouched.
func TestRunsInterruptCancelResumeFork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HEARTH_CONFIG": stepsConfig(t, started, release), "HEARTH_DATA_DIR": t.TempDir()}

	cancelled, _ := interruptedRun(t, env, started)
	id, out := interruptedRun(t, env, started)
	if !strings.Contains(out, "paused") {
		t.Errorf("the interrupted run's summary does not say it is paused:\n%s", out)
	}

	var list []hearth.RunInfo
	runJSON(t, env, &list, "runs", "list", "--json")
	if len(list) != 2 {
		t.Fatalf("runs list: %+v; want the two runs", list)
	}
	for _, r := range list {
		if r.Status != hearth.RunPaused || r.Succeeded != 1 || r.Cost != 0.25 {
			t.Errorf("run %s: %s, %d succeeded, cost %v; want paused after first (cost 0.25)", r.ID, r.Status, r.Succeeded, r.Cost)
		}
	}

	if code, out, errOut := run(t, env, "runs", "cancel", cancelled); code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("runs cancel: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut := run(t, env, "runs", "resume", cancelled)
	if code == 0 || !strings.Contains(errOut, "cancelled") {
		t.Errorf("resuming a cancelled run: exit %d, %q; want an error saying it is cancelled", code, errOut)
	}
	if code, out, errOut := run(t, env, "runs", "delete", cancelled); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("runs delete: exit %d: %s%s", code, out, errOut)
	}
	runJSON(t, env, &list, "runs", "list", "--json")
	if len(list) != 1 || list[0].ID != id {
		t.Errorf("after the delete, runs list: %+v; want only %s", list, id)
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	running := signalled(t, started)
	var resumed runResult
	runJSON(t, env, &resumed, "runs", "resume", id[:len(id)-2], "--json")
	<-running
	if resumed.Run.Status != hearth.RunCompleted || resumed.Summary.Ran != 2 || resumed.Run.Cost != 0.75 {
		t.Errorf("resumed: %s, ran %d, cost %v; want completed, running second and third only, cost 0.75", resumed.Run.Status, resumed.Summary.Ran, resumed.Run.Cost)
	}
	if got := outputOf(t, env, id, "third"); got != `"south"` {
		t.Errorf("third's output %q; want the initial direction", got)
	}

	var cps struct {
		Checkpoints []hearth.CheckpointInfo `json:"checkpoints"`
	}
	runJSON(t, env, &cps, "runs", "show", id, "--json")
	var at uint64
	for _, c := range cps.Checkpoints {
		if c.Task == "first" {
			at = c.Seq
		}
	}
	if at == 0 {
		t.Fatalf("no checkpoint after first in %+v", cps.Checkpoints)
	}
	running = signalled(t, started)
	var fork runResult
	runJSON(t, env, &fork, "runs", "fork", id, "--at", strconv.FormatUint(at, 10), "--set", `direction="north"`, "--json")
	<-running
	if fork.Run.Status != hearth.RunCompleted || fork.Run.ForkedFrom != id || fork.Run.ForkedAt != at || fork.Summary.Ran != 2 {
		t.Errorf("fork: %+v, ran %d; want a completed fork of %s at %d that ran second and third", fork.Run.RunInfo, fork.Summary.Ran, id, at)
	}
	if got := outputOf(t, env, fork.Run.ID, "third"); got != `"north"` {
		t.Errorf("the fork's third output %q; want the new direction", got)
	}
	if got := outputOf(t, env, id, "third"); got != `"south"` {
		t.Errorf("after the fork, the origin's third output %q; want it untouched", got)
	}

	// Finished runs cannot be cancelled; the error says so.
	if code, _, errOut := run(t, env, "runs", "cancel", id); code == 0 || !strings.Contains(errOut, "completed") {
		t.Errorf("cancelling a completed run: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, env, "runs", "show", "nosuchrun"); code == 0 || !strings.Contains(errOut, "nosuchrun") {
		t.Errorf("runs show of an unknown run: exit %d, %q", code, errOut)
	}
}

// TestRunSaysItWaitsForItsStage: `hearth run`, piped, says when a task
// starts waiting for its stage to open (stage "deploy" { not_before }),
// then runs it once the stage opens, instead of going silent meanwhile.
func TestRunSaysItWaitsForItsStage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opens := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	cfg := writeConfigIn(t, dir, `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}

pipeline "release" {
  agent = "scripted"
  stage "deploy" {
    not_before = "`+opens+`"
  }
  task "build" {
    prompt = "echo:built"
  }
  task "ship" {
    prompt     = "echo:shipped"
    stage      = "deploy"
    depends_on = ["build"]
  }
}
`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": t.TempDir()}
	code, out, errOut := run(t, env, "run", "release", "-q")
	if code != 0 {
		t.Fatalf("hearth run: exit %d\n%s%s", code, out, errOut)
	}
	wait := strings.Index(out, "ship: waits for stage deploy, which opens at ")
	shipped := strings.Index(out, "] ship ")
	if wait < 0 || shipped < wait {
		t.Fatalf("hearth run does not say that ship waits for stage deploy before it runs it:\n%s", out)
	}
	if strings.Count(out, "waits for stage") != 1 {
		t.Errorf("the wait is said more than once:\n%s", out)
	}
}
