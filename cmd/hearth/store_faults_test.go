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
