package python

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// TestReadmeAgentSearchesItsWorkspace runs the README's agent as written,
// confined, in the layout a new user has (a config beside the workspace,
// no data_dir): its search of "." (the workspace root) works, where a
// data directory inside the workspace made the kernel refuse it.
func TestReadmeAgentSearchesItsWorkspace(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	if st := process.Landlock(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## An agent\n\n```python\n(.*?)```").FindSubmatch(readme)
	if m == nil || !strings.Contains(string(m[1]), `tools.search(".", task.prompt)`) {
		t.Fatalf("the README's agent is not where this test looks, or no longer searches the workspace root")
	}
	ws := t.TempDir()
	for name, content := range map[string]string{"finder.py": string(m[1]), "notes.md": "TODO: one\n", "src/app.py": "# TODO: two\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(ws, "hearth.hcl")
	src := `agent "finder" {
  command    = ["` + python + `", "finder.py"]
  read_paths = ["` + sdkDir(t) + `"]
  env        = { PYTHONPATH = "` + sdkDir(t) + `" }
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, config.Options{StateHome: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := engine.New(engine.Options{Config: cfg, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "finder", Prompt: "TODO"})
	if err != nil {
		t.Fatalf("the README's agent: %v", err)
	}
	if out.Result.Output != "2 matches" {
		t.Errorf("the README's agent: output %q; want 2 matches in its workspace", out.Result.Output)
	}
}
