package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dirHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadCommandsNeverWrite reproduces issue 14's first finding: with
// MANIFEST missing, every read command refuses the directory, names what
// is missing and exits non-zero, and afterwards every file is as it was
// (it used to print "no runs" and shrink the tables). On a whole
// directory the read commands write nothing either.
func TestReadCommandsNeverWrite(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := map[string]string{"HEARTH_DATA_DIR": data}
	if code, out, stderr := run(t, env, "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	reads := [][]string{{"runs", "list"}, {"sessions", "list"}, {"sessions", "list", "--json"}}

	before := dirHashes(t, data)
	for _, args := range reads {
		if code, out, stderr := run(t, env, args...); code != 0 {
			t.Fatalf("hearth %s on a whole directory: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
	after := dirHashes(t, data)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("reading changed %s", p)
		}
	}

	if err := os.Remove(filepath.Join(data, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	before = dirHashes(t, data)
	for _, args := range reads {
		code, out, stderr := run(t, env, args...)
		if code == 0 || !strings.Contains(stderr, "MANIFEST is missing") || !strings.Contains(stderr, "nothing in it was changed") {
			t.Errorf("hearth %s without MANIFEST: exit %d\nstdout: %s\nstderr: %s\nwant a refusal naming MANIFEST", strings.Join(args, " "), code, out, stderr)
		}
	}
	after = dirHashes(t, data)
	if len(after) != len(before) {
		t.Errorf("files: %d before, %d after", len(before), len(after))
	}
	for p, h := range before {
		if after[p] != h {
			t.Errorf("a refused read changed %s", p)
		}
	}
}

// TestVerifyBackupRestore: verify passes a whole directory and fails (exit
// 1, naming the file) a damaged one; a backup restored into a new
// directory reads the same sessions and verifies clean.
func TestVerifyBackupRestore(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	env := map[string]string{"HEARTH_DATA_DIR": data}
	if code, out, stderr := run(t, env, "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(t, env, "verify"); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("verify of a whole directory: exit %d\n%s%s", code, out, stderr)
	}
	backup := filepath.Join(t.TempDir(), "hearth.backup")
	if code, out, stderr := run(t, env, "backup", backup); code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, stderr)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	renv := map[string]string{"HEARTH_DATA_DIR": restored}
	if code, out, stderr := run(t, renv, "restore", backup); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, stderr)
	}
	_, orig, _ := run(t, env, "sessions", "list", "--json")
	code, again, stderr := run(t, renv, "sessions", "list", "--json")
	if code != 0 || orig != again || !strings.Contains(again, "gotour-") {
		t.Errorf("sessions after restore (exit %d, %s):\n%s\nwant as before:\n%s", code, stderr, again, orig)
	}
	if code, out, stderr := run(t, renv, "restore", backup); code == 0 || !strings.Contains(stderr, "not empty") {
		t.Errorf("a second restore into the same directory: exit %d\n%s%s\nwant a refusal: it is not empty", code, out, stderr)
	}

	ssts, _ := filepath.Glob(filepath.Join(restored, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table in the restored directory")
	}
	b, _ := os.ReadFile(ssts[0])
	b[len(b)/3] ^= 0x10
	if err := os.WriteFile(ssts[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, renv, "verify")
	if code != 1 || !strings.Contains(out, filepath.Base(ssts[0])) || !strings.Contains(out, "docs/recovery.md") {
		t.Errorf("verify of a damaged table: exit %d\n%s%s\nwant exit 1 naming %s", code, out, stderr, filepath.Base(ssts[0]))
	}
}

// TestBackupThroughTheDaemon: with a daemon serving the data directory,
// hearth backup is taken through it, while it serves; the backup restores
// into a new directory that reads the daemon's sessions.
func TestBackupThroughTheDaemon(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}
	if code, out, stderr := run(t, env, "submit", "gotour", "summary errors", "--dir", "errors"); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, stderr)
	}
	backup := filepath.Join(t.TempDir(), "live.backup")
	code, out, stderr := run(t, env, "backup", backup)
	if code != 0 || !strings.Contains(stderr, "of the daemon on") {
		t.Fatalf("backup through the daemon: exit %d\n%s%s", code, out, stderr)
	}
	renv := map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "restored")}
	if code, out, stderr := run(t, renv, "restore", backup); code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run(t, renv, "sessions", "list")
	if code != 0 || !strings.Contains(out, "gotour-") {
		t.Errorf("the restored directory: exit %d\n%s%s\nwant the daemon's gotour session", code, out, stderr)
	}
}
