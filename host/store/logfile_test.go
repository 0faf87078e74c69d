package store

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWalkLogReadsBadgersLogs: on a value log Badger wrote and closed,
// walkLog finds every entry whole, to the last byte, as Badger's replay
// does; cut anywhere inside the entries, it stops at or before the cut.
func TestWalkLogReadsBadgersLogs(t *testing.T) {
	dir := fixture(t)
	b, err := os.ReadFile(largest(t, dir, ".vlog"))
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	if end := walkLog(b, func(byte, []byte, []byte) { entries++ }); end != len(b) || entries < 50 {
		t.Fatalf("walkLog: %d entries ending at %d of %d bytes; want at least the fixture's 50 events, whole to the end", entries, end, len(b))
	}
	for _, cut := range []int{logHeaderSize + 1, len(b) / 2, len(b) - 1} {
		if end := walkLog(b[:cut], nil); end > cut || end == len(b) {
			t.Errorf("cut at %d: walkLog ends at %d", cut, end)
		}
	}
}

// TestWriteOpenRefusesToCutPointedValues: a byte flipped inside the
// newest value log, before values the tables point to, is refused by a
// Write open, naming the value log (Badger would cut the log there and
// lose what follows), and nothing changes. A Read open, which cuts
// nothing, opens it: the damaged value is a DamageError when read.
func TestWriteOpenRefusesToCutPointedValues(t *testing.T) {
	dir := fixture(t)
	p := largest(t, dir, ".vlog")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err = Open(dir, Write, Options{GCInterval: -1})
	var de *DirError
	if !errors.As(err, &de) || de.File != filepath.Base(p) || !strings.Contains(err.Error(), "would cut them off") {
		t.Fatalf("write open: %v; want a DirError naming %s", err, filepath.Base(p))
	}
	sameFiles(t, before, snapshot(t, dir))
	s, err := Open(dir, Read, Options{})
	if err != nil {
		t.Fatalf("read open: %v", err)
	}
	s.Close()
	sameFiles(t, before, snapshot(t, dir))
}

// FuzzWalkLog: on any bytes the walk ends within the file, past the
// header, and where it ends is a place it would end again: the entries
// it accepted are whole on their own.
func FuzzWalkLog(f *testing.F) {
	entry := append(make([]byte, logHeaderSize), 0, 0, 3, 2, 0, 'k', 'e', 'y', 'v', 'v')
	sum := crc32.Checksum(entry[logHeaderSize:], castagnoli)
	entry = binary.BigEndian.AppendUint32(entry, sum)
	f.Add(entry)
	f.Add(append(slices.Clone(entry), entry[logHeaderSize:]...))
	f.Add(make([]byte, 64))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		end := walkLog(b, nil)
		if end > len(b) || end < min(len(b), logHeaderSize) {
			t.Fatalf("end %d of %d bytes", end, len(b))
		}
		if again := walkLog(b[:end], nil); again != end {
			t.Fatalf("the walk ends at %d, but at %d on the first %d bytes", end, again, end)
		}
	})
}
