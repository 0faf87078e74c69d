package python

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// need returns the path of program, skipping the test without it, or
// failing it under CI=true, where .ci/run installs it from package pkg.
func need(t *testing.T, program, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		testenv.Missing(t, program+" is missing", "apt-get install "+pkg)
	}
	return p
}

// TestPythonUnitTests runs the Python SDK's own tests (tests/), which run
// agents in-process over the real protocol with hearth_agent.testing.
func TestPythonUnitTests(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	cmd := exec.Command(python, "-m", "unittest", "discover", "-s", "tests", "-t", ".")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python unittest: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("OK")) {
		t.Fatalf("python unittest did not say OK:\n%s", out)
	}
}

// TestMypyStrict type-checks the package, its tests and the test agent
// with mypy --strict (pyproject.toml's settings).
func TestMypyStrict(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	if err := exec.Command(python, "-c", "import mypy").Run(); err != nil {
		testenv.Missing(t, "mypy is missing", "apt-get install python3-mypy")
	}
	cmd := exec.Command(python, "-m", "mypy", "--cache-dir", t.TempDir(), "hearth_agent", "tests", "testdata")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mypy --strict: %v\n%s", err, out)
	}
}

// TestGeneratedCodeIsCurrent regenerates the protobuf messages into a
// temporary directory and compares them with the committed ones: a change
// to agent.proto must come with regenerated Python code (./generate.sh).
func TestGeneratedCodeIsCurrent(t *testing.T) {
	t.Parallel()
	need(t, "protoc", "protobuf-compiler")
	out := t.TempDir()
	// generate.sh reads agent.proto where the Go SDK keeps it: a change
	// there without regenerated Python shows up below.
	if b, err := exec.Command("sh", "generate.sh", out).CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, b)
	}
	gen, err := filepath.Glob(filepath.Join(out, "*"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("generate.sh wrote nothing (%v)", err)
	}
	for _, f := range gen {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("hearth_agent", "_pb", filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("hearth_agent/_pb/%s is not what generate.sh makes; run sdk/python/generate.sh and commit the result", filepath.Base(f))
		}
	}
}
