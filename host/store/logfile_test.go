package store

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
)

// TestWalkLogReadsBadgersLogs: on a value log Badger wrote and closed,
// walkLog finds every entry whole, to the last byte, as Badger's replay
// does; cut anywhere inside the entries, it stops at or before the cut.
func TestWalkLogReadsBadgersLogs(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// crashedWithLog writes n events, each its own transaction, to a store it
// leaves open, and returns a copy of its directory as a crash (kill -9)
// leaves it: the memtable log holds the events, unreplayed. The copy of
// the log (and of the value log) ends a page after its last entry (the
// rest is zeros, which Badger maps again). log is the log's path in the copy.
func crashedWithLog(t *testing.T, n int) (dir, log string) {
	t.Helper()
	src := t.TempDir()
	s, err := Open(src, Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		if err := appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: strconv.Itoa(i)}).Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() || e.Name() == "LOCK" || e.Name() == "OWNER" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(e.Name()) {
		case ".mem":
			b = b[:min(len(b), walkLog(b, nil)+4096)]
			log = filepath.Join(dir, e.Name())
		case ".vlog":
			// Badger maps the value log being written at twice its
			// size; what follows its entries is zeros, and hashing them
			// at every step of the sweep below is most of its time.
			b = b[:min(len(b), walkLog(b, nil)+4096)]
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if log == "" {
		t.Fatal("an open store has no memtable log")
	}
	return dir, log
}

// logEntries is the offset of every whole entry of the log b, and its
// meta byte.
func logEntries(b []byte) (offs []int, metas []byte) {
	for off := logHeaderSize; ; {
		meta, _, _, n := logEntry(b[off:])
		if n == 0 {
			return offs, metas
		}
		offs, metas = append(offs, off), append(metas, meta)
		off += n
	}
}

// committedEvents is how many events of session s-1 ("e/s-1/" records) the log b holds in
// transactions whose end marker is whole: what a replay of b keeps.
func committedEvents(b []byte) int {
	committed, pending := 0, 0
	for off := logHeaderSize; ; {
		meta, k, _, n := logEntry(b[off:])
		if n == 0 {
			return committed
		}
		switch {
		case meta&bitFinTxn != 0:
			committed, pending = committed+pending, 0
		case strings.HasPrefix(string(k), "e/s-1/"):
			pending++
		}
		off += n
	}
}

// sessionEvents is the messages of session s-1's events in dir, opened
// to read.
func sessionEvents(t *testing.T, dir string) []string {
	t.Helper()
	s, err := Open(dir, Read, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events("s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Message)
	}
	return got
}

// TestMemtableLogDamageIsRefused is the "also open" finding of issue 24:
// damage in the middle of a memtable log was cut off silently on replay,
// with every write after it. Now every flipped byte of every entry but
// the log's last transaction is refused by a write open (Recover),
// naming the log and what to do, and changes nothing; a log cut short,
// anywhere (a crash's torn write), replays the whole transactions before
// the cut. Told to (DiscardAfterLogDamage), Recover replays a damaged log
// up to the damage.
func TestMemtableLogDamageIsRefused(t *testing.T) {
	t.Parallel()
	const n = 12
	dir, log := crashedWithLog(t, n)
	whole, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	offs, metas := logEntries(whole)
	// The offset of the end marker of each transaction: the last one's
	// damage reads as a torn write, and is not this test's.
	var fins []int
	for i, m := range metas {
		if m&bitFinTxn != 0 {
			fins = append(fins, offs[i])
		}
	}
	if len(fins) < n {
		t.Fatalf("the log holds %d transactions, want at least the %d writes", len(fins), n)
	}
	lastTxn := fins[len(fins)-2] + (offs[slices.Index(offs, fins[len(fins)-2])+1] - fins[len(fins)-2])
	end := walkLog(whole, nil)
	set := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(log, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Every byte of every entry before the last transaction, one at a
	// time (every fifth, at a changing place in each entry, unless
	// HEARTH_SWEEP=full: under -race each try costs).
	stride := 5
	if os.Getenv("HEARTH_SWEEP") == "full" {
		stride = 1
	}
	refused := 0
	for at := logHeaderSize; at < lastTxn; at += stride {
		b := slices.Clone(whole)
		b[at] ^= 0x04
		set(b)
		before := snapshot(t, dir)
		err := Recover(dir, Options{GCInterval: -1, MinFreeSpace: -1})
		var de *DirError
		if !errors.As(err, &de) || de.File != filepath.Base(log) || !strings.Contains(err.Error(), "--discard-after-damage") {
			t.Fatalf("byte %d of %d flipped: recover: %v; want a DirError naming %s and the way to discard", at, end, err, filepath.Base(log))
		}
		sameFiles(t, before, snapshot(t, dir))
		refused++
	}
	t.Logf("%d flipped bytes before the last transaction, each refused", refused)

	// Cut anywhere: what is whole before the cut is replayed.
	for _, cut := range []int{logHeaderSize, offs[1] + 3, fins[n/2] + 2, end - 1} {
		d := copyDir(t, dir)
		p := filepath.Join(d, filepath.Base(log))
		if err := os.WriteFile(p, whole[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Recover(d, Options{GCInterval: -1, MinFreeSpace: -1}); err != nil {
			t.Fatalf("log cut at %d: recover: %v", cut, err)
		}
		if got, want := sessionEvents(t, d), committedEvents(whole[:cut]); len(got) != want {
			t.Errorf("log cut at %d: %d events replayed, want the %d of the transactions whole before the cut", cut, len(got), want)
		}
	}

	// Damage in the middle, discarded on request.
	b := slices.Clone(whole)
	b[fins[n/2]-1] ^= 0x04
	set(b)
	if err := Recover(dir, Options{GCInterval: -1, MinFreeSpace: -1, DiscardAfterLogDamage: true}); err != nil {
		t.Fatalf("recover, discarding after the damage: %v", err)
	}
	if got := sessionEvents(t, dir); len(got) == 0 || len(got) >= n {
		t.Errorf("recover, discarding after the damage: %d events, want those before it", len(got))
	}
}
