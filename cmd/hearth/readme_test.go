package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host"
)

// hclBlock is a fenced HCL block.
var hclBlock = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// TestReadmeConfigurePipeline runs the pipeline of the README's
// "Configure" section as written: its second task depends on the first,
// and gets the first's artifact beside its prompt, which gotour parses as
// written.
func TestReadmeConfigurePipeline(t *testing.T) {
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
	if res.Run.Status != host.RunCompleted || res.Run.Succeeded != len(res.Run.TaskList) {
		t.Fatalf("run %s: %s (%s), %d of %d tasks succeeded; want all", res.Run.ID, res.Run.Status, res.Run.Reason, res.Run.Succeeded, len(res.Run.TaskList))
	}
	s := showRun(t, env, res.Run.ID)
	if out := current(t, s, "server").Output; !strings.Contains(out, "Server struct") {
		t.Errorf("server's answer:\n%s\nwant the declaration of net/http's Server", out)
	}
}
