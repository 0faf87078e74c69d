package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/pythontest"
)

// TestAgentsTestPassesConformingAgents: `hearth agents test` passes a Go
// agent (the test agent this binary serves) and the Python SDK's scripted
// agent, printing every check.
func TestAgentsTestPassesConformingAgents(t *testing.T) {
	t.Parallel()
	t.Run("Go", func(t *testing.T) {
		code, out, errOut := run(t, nil, "agents", "test", "--env", "HEARTH_TEST_PLUGIN=1", "--env", "GORACE=atexit_sleep_ms=0",
			"--task", "read:src/a.go;echo:done", "--dir", "src", "--guard", "src/a.go", "--", os.Args[0])
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		for _, w := range []string{`agent "scripted"`, "PASS  Describe", "PASS  denied tool uses", "PASS  guarded path", "PASS  shutdown", "PASS  host crash", "11 passed, 0 failed"} {
			if !strings.Contains(out, w) {
				t.Errorf("output does not contain %q:\n%s", w, out)
			}
		}
	})
	t.Run("gotour", func(t *testing.T) {
		// The bundled agent, served by this binary as hearth serves it.
		code, out, errOut := run(t, nil, "agents", "test", "--env", "HEARTH_SERVE_AGENT=gotour", "--env", "GORACE=atexit_sleep_ms=0",
			"--task", "summary strings", "--task", "symbol strings Builder.String", "--dir", "strings", "--guard", "strings/builder.go", "--", os.Args[0])
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		if !strings.Contains(out, `agent "gotour"`) || !strings.Contains(out, "11 passed, 0 failed") {
			t.Errorf("got\n%s\nwant gotour passing all 11 checks", out)
		}
	})
	t.Run("Python", func(t *testing.T) {
		python := pythontest.Need(t)
		script, err := filepath.Abs("../../sdk/python/testdata/scripted.py")
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, nil, "agents", "test", "--json", "--task", "read:src/a.py;echo:done", "--task", "progress:0.5;tool:missing.txt", "--dir", "src", "--guard", "src/a.py", "--", python, script)
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		var v conformanceView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--json output does not parse: %v\n%s", err, out)
		}
		if v.Agent != "scripted" || !v.Passed || !v.ExportsState || len(v.Checks) != 11 {
			t.Errorf("got %+v, want the scripted agent passing all 11 checks, exporting state", v)
		}
	})
}

// TestAgentsTestFailsBrokenPythonAgents: each way a Python agent can break
// the contract fails the check that names it, and the command exits 1.
func TestAgentsTestFailsBrokenPythonAgents(t *testing.T) {
	t.Parallel()
	python := pythontest.Need(t)
	script, err := filepath.Abs("../../sdk/python/testdata/scripted.py")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, mode, task, check, want string
	}{
		{"ignores a denial", "", "ignoredenial:.env", "denied tool uses", "was denied but reported as done"},
		{"reports a use it never asked about", "", "unasked:.env", "asks first", "was reported without a CheckToolUse before it"},
		{"reports without an outcome", "", "nooutcome", "tasks", `tool use "Read" has no outcome`},
		{"ignores shutdown", "ignoreshutdown", "echo:hi", "shutdown", "did not exit within 2s of the host's request to shut down"},
		{"outlives its host", "noparentwatch", "echo:hi", "host crash", "outlived its host by more than 1s"},
		{"holds a cancelled task's question", "ignorecancel", "read:src/a.py", "cancelled context", "did not give up its tool question within 5s of its task's cancellation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, nil, "agents", "test", "--json", "--env", "HEARTH_TEST_MODE="+tt.mode, "--task", tt.task, "--dir", "src", "--", python, script)
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
			}
			var v conformanceView
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("--json output does not parse: %v\n%s", err, out)
			}
			for _, c := range v.Checks {
				if c.Name == tt.check {
					if c.Passed || !strings.Contains(strings.Join(c.Errors, "\n"), tt.want) {
						t.Errorf("check %q: got %+v, want it failed with %q", tt.check, c, tt.want)
					}
					return
				}
			}
			t.Errorf("no check %q in %+v", tt.check, v)
		})
	}
}

func TestAgentsTestNeedsAProgram(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, nil, "agents", "test", "--task", "x")
	if code != exitUsage || !strings.Contains(errOut, "name the agent program after --") {
		t.Errorf("got exit %d, %q; want a usage error naming the fix", code, errOut)
	}
}
