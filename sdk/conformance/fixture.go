package conformance

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hearth-dev/hearth/sdk"
)

// FixturePrompt is the prompt of a fixture's tasks when none is given.
const FixturePrompt = "Read the files this task names and list their TODO and FIXME markers."

// fixtureFiles are the files a fixture holds; the ones under
// fixtureGuarded are behind its guard.
var fixtureFiles = map[string]string{
	"notes.md":        "# Notes\n\nTODO: write the tests first.\nThe host is asked before each tool use.\n",
	"src/main.go":     "package main\n\n// FIXME: say why main does nothing.\nfunc main() {}\n",
	"private/keys.md": "# Keys\n\nTODO: nothing here may be read: a guard denies it.\n",
}

const fixtureGuarded = "private"

// Fixture makes a suite every check can run on, for an agent whose tasks
// read the files they name: a new directory under dir (the directory the
// agent runs in) holding a few small files, one of them behind a guard,
// and tasks with each prompt (FixturePrompt when none is given) naming
// them by paths relative to dir. The first task of each prompt names
// files anyone may read; the second also names the guarded one, which
// the "guarded path" check denies. remove deletes the directory.
func Fixture(dir string, prompts ...string) (suite Suite, remove func() error, err error) {
	root, err := os.MkdirTemp(dir, "hearth-fixture-")
	if err != nil {
		return Suite{}, nil, fmt.Errorf("conformance: make a fixture in %s: %w", dir, err)
	}
	remove = func() error { return os.RemoveAll(root) }
	for name, content := range fixtureFiles {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			_ = remove()
			return Suite{}, nil, fmt.Errorf("conformance: make a fixture in %s: %w", dir, err)
		}
	}
	rel := filepath.Base(root)
	at := func(name string) string { return filepath.Join(rel, filepath.FromSlash(name)) }
	if len(prompts) == 0 {
		prompts = []string{FixturePrompt}
	}
	for i, p := range prompts {
		suite.Tasks = append(suite.Tasks,
			sdk.Task{Name: fmt.Sprintf("fixture-%d", 2*i+1), Prompt: p, Attempt: 1, Hints: sdk.Hints{
				Files: []string{at("notes.md"), at("src/main.go")}, Directories: []string{at("src")}}},
			sdk.Task{Name: fmt.Sprintf("fixture-%d", 2*i+2), Prompt: p, Attempt: 1, Hints: sdk.Hints{
				Files: []string{at("notes.md"), at("private/keys.md")}, Directories: []string{at(fixtureGuarded)}}},
		)
	}
	suite.Guarded = []string{at(fixtureGuarded)}
	return suite, remove, nil
}
