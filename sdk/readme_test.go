package sdk_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of the README whose first line names its
// file: "// wordcount.go".
var goBlock = regexp.MustCompile("(?s)```go\n// ([a-z_]+\\.go)\n(.*?)```")

// TestReadmeAgent builds the agent of the README's "Write an agent"
// section, as a new module that points at this repository, and runs the
// tests the README gives it: the section is exercised, not only read.
func TestReadmeAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own; skipped with -short")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Write an agent")
	section, _, _ = strings.Cut(section, "\n## ")
	dir := t.TempDir()
	files := map[string]bool{}
	for _, m := range goBlock.FindAllStringSubmatch(section, -1) {
		files[m[1]] = true
		if err := os.WriteFile(filepath.Join(dir, m[1]), []byte("// "+m[1]+"\n"+m[2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"wordcount.go", "main.go", "wordcount_test.go"} {
		if !files[want] {
			t.Fatalf("the README's \"Write an agent\" section has no Go block for %s (found %v)", want, files)
		}
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	// The module cache already holds every module hearth needs: no
	// network. (The README's `go mod tidy` would also fetch the test
	// dependencies of hearth's dependencies; -mod=mod adds only what the
	// build needs.)
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	for _, args := range [][]string{
		{"mod", "init", "example.com/wordcount"},
		{"mod", "edit", "-replace", "github.com/hearth-dev/hearth=" + repo},
		{"mod", "edit", "-require", "github.com/hearth-dev/hearth@v0.0.0-00010101000000-000000000000"},
		{"vet", "."},
		{"build", "-o", "wordcount", "."},
		{"test", "-count=1", "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			if strings.Contains(out.String(), "module lookup disabled") && os.Getenv("CI") != "true" {
				t.Skipf("the module cache lacks a module the README's agent needs (offline): %s", out.String())
			}
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
}
