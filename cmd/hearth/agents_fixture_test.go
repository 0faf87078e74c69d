package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/pythontest"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// serveTestPlugin serves the test agent HEARTH_TEST_PLUGIN names: the
// scripted agent (package testagent), or one of the agents below that
// keep or break the contract on the tasks `hearth agents test` makes.
func serveTestPlugin(kind string) {
	switch kind {
	case "hints":
		plugin.Serve(&hintReader{})
	case "ignores-denials":
		plugin.Serve(&hintReader{ignoreDenials: true})
	case "no-tools":
		plugin.Serve(&hintReader{noTools: true})
	case "crash-at-start":
		fmt.Fprintln(os.Stderr, "boom: the agent's settings file is missing")
		os.Exit(3)
	case "crash-in-task":
		plugin.Serve(&hintReader{crash: true})
	default:
		plugin.Serve(testagent.New("scripted", 1))
	}
}

// hintReader reads the files its task names through sdk.Tools, as the
// README's word counter does, and answers with their sizes. Its flags
// break the contract: ignoreDenials reads a denied file anyway and
// reports it as done; noTools answers without reading anything; crash
// dies in its first task.
type hintReader struct{ ignoreDenials, noTools, crash bool }

func (*hintReader) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "reader", Version: "0.1.0"}, nil
}

func (a *hintReader) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if a.crash {
		// A panic outside the SDK's recovery: the runtime reports it on
		// the process's stderr and exits with status 2.
		go panic("reader: out of patience")
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	}
	if a.noTools {
		return sdk.Result{Output: "hello"}, nil
	}
	tools := sdk.NewTools(cb, "")
	var out []string
	for _, f := range t.Hints.Files {
		if a.ignoreDenials {
			call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{f}}
			if _, err := cb.CheckToolUse(ctx, call); err != nil {
				return sdk.Result{}, err
			}
			b, err := os.ReadFile(f)
			if err := cb.ReportToolUse(ctx, sdk.ToolUse{CallID: call.CallID, Tool: "Read", Kind: sdk.KindRead, Paths: []string{f}, Outcome: sdk.OutcomeOK}); err != nil {
				return sdk.Result{}, err
			}
			out = append(out, fmt.Sprintf("%s: %d bytes (%v)", f, len(b), err))
			continue
		}
		b, err := tools.Read(ctx, f)
		if errors.Is(err, sdk.ErrDenied) {
			out = append(out, f+": denied")
			continue
		}
		if err != nil {
			return sdk.Result{}, err
		}
		out = append(out, fmt.Sprintf("%s: %d bytes", f, len(b)))
	}
	return sdk.Result{Output: strings.Join(out, "\n")}, nil
}

// agentsTest runs `hearth agents test` on the test agent kind with no
// hints, and returns its exit code and output.
func agentsTest(t *testing.T, kind string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"agents", "test", "--workdir", t.TempDir(), "--env", "HEARTH_TEST_PLUGIN=" + kind, "--env", "GORACE=atexit_sleep_ms=0"}, extra...)
	code, out, errOut := run(t, nil, append(args, "--", os.Args[0])...)
	return code, out + errOut
}

// TestAgentsTestFixture: with no hints, `hearth agents test` gives the
// agent files of its own to read, one directory behind a guard, so that
// every check runs: an agent that reads what its tasks name passes; one
// that ignores denials fails both checks of denials; one that uses no
// tool fails the checks that could not run, saying so; and the fixture
// is gone afterwards.
func TestAgentsTestFixture(t *testing.T) {
	t.Parallel()
	workdir := t.TempDir()
	code, out, errOut := run(t, nil, "agents", "test", "--workdir", workdir, "--env", "HEARTH_TEST_PLUGIN=hints", "--env", "GORACE=atexit_sleep_ms=0", "--", os.Args[0])
	if code != 0 {
		t.Fatalf("an honest reader: exit %d\n%s%s", code, out, errOut)
	}
	for _, w := range []string{"no --file or --dir: the tasks read files of", "PASS  asks first", "PASS  denied tool uses", "PASS  guarded path", "PASS  cancelled context", "n/a   state: the agent exports no state", "10 passed, 0 failed, 1 not applicable"} {
		if !strings.Contains(out, w) {
			t.Errorf("an honest reader: output does not contain %q:\n%s", w, out)
		}
	}
	if entries, _ := os.ReadDir(workdir); len(entries) != 0 {
		t.Errorf("the fixture was left behind: %v", entries)
	}

	code, out = agentsTest(t, "ignores-denials")
	if code != 1 || !strings.Contains(out, "FAIL  denied tool uses") || !strings.Contains(out, "FAIL  guarded path") ||
		!strings.Contains(out, filepath.Join("private", "keys.md")+"] was denied but reported as done") {
		t.Errorf("an agent that ignores denials: exit %d\n%s\nwant both checks of denials failed", code, out)
	}

	code, out = agentsTest(t, "no-tools")
	for _, w := range []string{"FAIL  asks first", "could not run: no task used a tool", "FAIL  denied tool uses", "FAIL  guarded path", "FAIL  cancelled context"} {
		if code != 1 || !strings.Contains(out, w) {
			t.Errorf("an agent that uses no tool: exit %d, output does not contain %q:\n%s", code, w, out)
		}
	}
}

// TestAgentsTestExplainsADeadProgram: a program that dies at start or in
// a task is explained by its exit status and the end of its stderr, not
// by go-plugin's guesses or a lost connection; a Python agent's traceback
// is shown whole.
func TestAgentsTestExplainsADeadProgram(t *testing.T) {
	t.Parallel()
	code, out := agentsTest(t, "crash-at-start")
	if code != exitWork || !strings.Contains(out, "the program exited with status 3") || !strings.Contains(out, "boom: the agent's settings file is missing") ||
		strings.Contains(out, "architecture") {
		t.Errorf("a program that dies at start: exit %d\n%s\nwant its exit status and its stderr", code, out)
	}
	code, out = agentsTest(t, "crash-in-task")
	if code != exitWork || !strings.Contains(out, "the program exited with status 2") || !strings.Contains(out, "panic: reader: out of patience") {
		t.Errorf("a program that dies in a task: exit %d\n%s\nwant its exit status and its stderr", code, out)
	}

	python := pythontest.Need(t)
	script := filepath.Join(t.TempDir(), "broken.py")
	src := "import hearth_agent\n\ndef settings():\n    return load_settings()\n\nsettings()\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sdkDir, _ := filepath.Abs("../../sdk/python")
	code, out2, errOut := run(t, nil, "agents", "test", "--env", "PYTHONPATH="+sdkDir, "--", python, script)
	out = out2 + errOut
	for _, w := range []string{"the program exited with status 1", "Traceback (most recent call last):", `broken.py", line 6, in <module>`, `line 4, in settings`, "NameError: name 'load_settings' is not defined"} {
		if code != exitWork || !strings.Contains(out, w) {
			t.Errorf("a Python agent that fails at start: exit %d, output does not contain %q:\n%s", code, w, out)
		}
	}
}

// TestAgentsTestPassesAnAsyncioAgent: a Python agent written with asyncio
// (hearth_agent.aio) keeps the contract over the real protocol, on the
// tasks of the fixture, every check running.
func TestAgentsTestPassesAnAsyncioAgent(t *testing.T) {
	t.Parallel()
	python := pythontest.Need(t)
	script, err := filepath.Abs("../../sdk/python/testdata/async_reader.py")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, "agents", "test", "--workdir", t.TempDir(), "--", python, script)
	if code != 0 || !strings.Contains(out, `agent "async-reader"`) || !strings.Contains(out, "11 passed, 0 failed") {
		t.Errorf("exit %d\n%s%s\nwant the asyncio agent passing all 11 checks", code, out, errOut)
	}
}
