package process

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinnedCopyRunsTheHashedBytes reproduces issue 13's fifth finding:
// the program was hashed at its path, then the path was executed, so a
// swap in between ran an impostor. The private copy is made while
// hashing; whatever happens at the path afterwards, the copy is what runs,
// and it cannot be written to.
func TestPinnedCopyRunsTheHashedBytes(t *testing.T) {
	dir := t.TempDir()
	agent, impostor := filepath.Join(dir, "agent"), filepath.Join(dir, "impostor")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\necho the real agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(impostor, []byte("#!/bin/sh\necho an impostor\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(agent)
	sum := sha256.Sum256(b)
	pinned, err := pinnedCopy(agent, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()

	// The swap, between the check and the start.
	if err := os.Rename(impostor, agent); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(agent)
	cmd.ExtraFiles = []*os.File{pinned}
	cmd.Path = "/proc/self/fd/3"
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "the real agent" {
		t.Errorf("ran %q, want the real agent", got)
	}
	if _, err := pinned.WriteAt([]byte("#!/bin/sh\necho changed\n"), 0); err == nil {
		t.Error("the sealed copy took a write")
	}

	// The impostor now at the path does not match the pin.
	_, err = pinnedCopy(agent, hex.EncodeToString(sum[:]))
	var mismatch *mismatchError
	if !errors.As(err, &mismatch) {
		t.Errorf("pinning the impostor: %v, want a mismatch", err)
	}
}
