package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDirFollowsTheConfigFile: with no data_dir in the file, as with
// a relative one, state lands beside the config file whatever the current
// directory, so that one agent's sessions never split across directories;
// --data-dir is read against the current directory; an error says which
// data directory it was and what it was resolved against.
func TestDataDirFollowsTheConfigFile(t *testing.T) {
	confDir, elsewhere := t.TempDir(), t.TempDir()
	conf := filepath.Join(confDir, "hearth.hcl")
	if err := os.WriteFile(conf, []byte("agent \"gotour\" {\n  bundled = \"gotour\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	noFlag := map[string]string{"HEARTH_DATA_DIR": ""}
	if code, out, stderr := run(t, noFlag, "--config", conf, "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(confDir, ".hearth")); err != nil {
		t.Errorf("no data directory beside the config file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, ".hearth")); err == nil {
		t.Errorf("a data directory appeared in the current directory")
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
