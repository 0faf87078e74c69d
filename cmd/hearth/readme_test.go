package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
)

// hclBlock is a fenced HCL block.
var hclBlock = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// TestReadmeConfigurePipeline runs the pipeline of the README's
// "Configure" section as written: its second task depends on the first,
// and gets the first's artifact beside its prompt, which gotour parses as
// written.
func TestReadmeConfigurePipeline(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## Configure\n")
	section, _, _ = strings.Cut(section, "\n## ")
	m := hclBlock.FindStringSubmatch(section)
	if m == nil || !strings.Contains(m[1], "depends_on") {
		t.Fatalf("the README's Configure section has no HCL block with a chained pipeline:\n%s", section)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hearth.hcl"), []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	env := exampleEnv(t)
	var res exampleRun
	exampleJSON(t, env, 0, &res, "run", dir, "--json")
	if res.Run.Status != hearth.RunCompleted || res.Run.Succeeded != len(res.Run.TaskList) {
		t.Fatalf("run %s: %s (%s), %d of %d tasks succeeded; want all", res.Run.ID, res.Run.Status, res.Run.Reason, res.Run.Succeeded, len(res.Run.TaskList))
	}
	s := showRun(t, env, res.Run.ID)
	if out := current(t, s, "server").Output; !strings.Contains(out, "Server struct") {
		t.Errorf("server's answer:\n%s\nwant the declaration of net/http's Server", out)
	}
}

// TestReadmeModelBlock: the README's model agent block is a valid config
// once the variable it names holds a key, and lists as the ask agent.
func TestReadmeModelBlock(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n### A real model\n")
	section, _, _ = strings.Cut(section, "\n## ")
	m := hclBlock.FindStringSubmatch(section)
	if m == nil || !strings.Contains(m[1], `bundled = "model"`) {
		t.Fatalf("the README's model section has no HCL block of the model agent:\n%s", section)
	}
	cfg := writeConfig(t, m[1])
	// Loading checks that the key's variable is set in the process.
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
	env := map[string]string{"HEARTH_CONFIG": cfg}
	if code, out, errOut := run(t, env, "config", "validate", cfg); code != 0 {
		t.Fatalf("config validate of the README's model block: exit %d\n%s%s", code, out, errOut)
	}
	var views []agentView
	runJSON(t, env, &views, "agents", "list", "--json")
	if vs := configured(views); len(vs) != 1 || vs[0].Name != "ask" || vs[0].Bundled != "model" {
		t.Errorf("agents list: %+v; want the ask agent on the bundled model", vs)
	}
}
