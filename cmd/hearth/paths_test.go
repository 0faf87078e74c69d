package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDirFollowsTheConfigFile: with no data_dir in the file, state
// lands in the user's state directory, in a directory of the config
// file's own (outside its agents' workspace, where a confined plugin
// could not reach it, and beside nothing of the current directory), so
// that one agent's sessions never split across directories; --data-dir
// is read against the current directory; an error says which data
// directory it was and what it was resolved against.
func TestDataDirFollowsTheConfigFile(t *testing.T) {
	confDir, elsewhere, state := t.TempDir(), t.TempDir(), t.TempDir()
	conf := filepath.Join(confDir, "hearth.hcl")
	if err := os.WriteFile(conf, []byte("agent \"gotour\" {\n  bundled = \"gotour\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	noFlag := map[string]string{"HEARTH_DATA_DIR": "", "XDG_STATE_HOME": state}
	if code, out, stderr := run(t, noFlag, "--config", conf, "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	made, _ := filepath.Glob(filepath.Join(state, "hearth", filepath.Base(confDir)+"-*"))
	if len(made) != 1 {
		t.Errorf("data directories in the state directory: %v, want one named after %s", made, confDir)
	}
	for _, d := range []string{confDir, elsewhere} {
		if entries, _ := os.ReadDir(d); len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "hearth.hcl" {
			t.Errorf("%s holds %v: the data directory must be in neither the workspace nor the current directory", d, entries)
		}
	}
	// From a third directory, the same file finds the same sessions.
	t.Chdir(t.TempDir())
	code, out, stderr := run(t, noFlag, "--config", conf, "sessions", "list")
	if code != 0 || !strings.Contains(out, "gotour-") {
		t.Errorf("sessions list from elsewhere: exit %d\n%s%s\nwant the session the submit started", code, out, stderr)
	}

	// --data-dir is the shell's: read against the current directory.
	cwd, _ := os.Getwd()
	if code, out, stderr := run(t, noFlag, "--config", conf, "--data-dir", "mine", "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit --data-dir mine: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(cwd, "mine")); err != nil {
		t.Errorf("--data-dir mine did not land in the current directory: %v", err)
	}

	// A data directory that cannot be opened: the message names it and
	// what it was resolved against.
	if err := os.WriteFile(filepath.Join(confDir, "blocker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(confDir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("data_dir = \"blocker/state\"\nagent \"gotour\" {\n  bundled = \"gotour\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, noFlag, "--config", bad, "submit", "gotour", "summary errors")
	want := "the data directory " + filepath.Join(confDir, "blocker", "state") + " is data_dir in " + bad
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant it to say %q", code, stderr, want)
	}
}

// TestSuggestedCommandsNameTheDataDir: a command run with --data-dir
// suggests next commands that name it (a flag is not in the shell's
// environment for the next command, as HEARTH_DATA_DIR is), and the
// suggested command works from another directory.
func TestSuggestedCommandsNameTheDataDir(t *testing.T) {
	confDir, state := t.TempDir(), t.TempDir()
	conf := filepath.Join(confDir, "tour.hcl")
	src := "agent \"gotour\" {\n  bundled = \"gotour\"\n}\npipeline \"one\" {\n  agent = \"gotour\"\n  task \"errors\" {\n    prompt = \"summary errors\"\n    directories = [\"errors\"]\n  }\n}\n"
	if err := os.WriteFile(conf, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(confDir)
	env := map[string]string{"HEARTH_DATA_DIR": "", "XDG_STATE_HOME": state}
	code, out, stderr := run(t, env, "--data-dir", "a", "run", conf, "-q")
	if code != 0 {
		t.Fatalf("run --data-dir a: exit %d\n%s%s", code, out, stderr)
	}
	var suggested string
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "see it with: "); ok {
			suggested = s
		}
	}
	abs := filepath.Join(confDir, "a")
	fields := strings.Fields(suggested)
	if len(fields) != 6 || fields[0] != "hearth" || fields[1] != "--data-dir" || fields[2] != abs || fields[3] != "runs" || fields[4] != "show" || !strings.HasPrefix(fields[5], "one-") {
		t.Fatalf("run suggests %q, want hearth --data-dir %s runs show RUN\n%s", suggested, abs, out)
	}
	t.Chdir(t.TempDir())
	if code, out, stderr := run(t, env, fields[1:]...); code != 0 || !strings.Contains(out, fields[5]) || !strings.Contains(out, "errors") {
		t.Errorf("the suggested %q from elsewhere: exit %d\n%s%s", suggested, code, out, stderr)
	}
}
