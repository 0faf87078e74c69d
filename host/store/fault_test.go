package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// fixture writes a data directory with sessions and events and closes it,
// so that its tables are on disk.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 50 {
		rec := record.Session{ID: fmt.Sprintf("gotour-%04d", i), Agent: "gotour", Status: record.SessionDormant, Created: time.Unix(1e9, 0), LastActivity: time.Unix(1e9, 0),
			Files: []string{fmt.Sprintf("pkg%d/a.go", i)}, Dirs: []string{fmt.Sprintf("pkg%d/", i)}}
		if err := s.PutSession(ctx, rec); err != nil {
			t.Fatal(err)
		}
		// Past the value threshold: the events are in the value log.
		if _, p := s.Append(hearth.Event{Kind: hearth.EventTaskSucceeded, Agent: "gotour", Session: rec.ID, Message: strings.Repeat("x", 1500)}); p.Wait(ctx) != nil {
			t.Fatal("append")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// snapshot is every file of dir with its size and hash, for asserting
// that nothing in a directory changed.
func snapshot(t *testing.T, dir string) map[string]string {
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
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, h := range before {
		if after[name] != h {
			t.Errorf("%s changed (or went): %s -> %q", name, h, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}

func largest(t *testing.T, dir, ext string) string {
	t.Helper()
	var best string
	var size int64
	files, _ := filepath.Glob(filepath.Join(dir, "*"+ext))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > size {
			best, size = f, fi.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", ext, dir)
	}
	return best
}

// TestReadOnlyWritesNothing: a read-only open reads what is there and
// writes nothing, not even an owner record, and refuses writes.
func TestReadOnlyWritesNothing(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	before := snapshot(t, dir)
	s, err := Open(dir, Read, Options{})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := s.Sessions(context.Background())
	if err != nil || len(infos) != 50 {
		t.Errorf("read %d sessions (err %v), want 50", len(infos), err)
	}
	if _, p := s.Append(hearth.Event{Kind: hearth.EventTaskStarted}); !errors.Is(p.Wait(context.Background()), ErrReadOnly) {
		t.Error("a write to a read-only store did not fail with ErrReadOnly")
	}
	if err := s.PutSession(context.Background(), record.Session{ID: "x"}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("PutSession: %v, want ErrReadOnly", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, before, snapshot(t, dir))
}

// TestDamagedDirectoriesAreRefused: a missing, cut or garbled MANIFEST, a
// missing, truncated, bit-flipped or unlisted table, a value log cut
// short are each refused by a Read and by a Write open, with an error that names the file and says nothing
// was changed, and nothing is: never a panic, never a wiped table.
func TestDamagedDirectoriesAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string) string // returns the file it names
	}{
		{"missing MANIFEST", func(t *testing.T, dir string) string {
			if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
				t.Fatal(err)
			}
			return "MANIFEST"
		}},
		{"missing table", func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return filepath.Base(p)
		}},
		{"truncated table", func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
			return filepath.Base(p)
		}},
		{"bit-flipped table", func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/3] ^= 0x10
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return filepath.Base(p)
		}},
		{"MANIFEST cut one byte short", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "MANIFEST")
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
			return "MANIFEST"
		}},
		{"table the MANIFEST does not list", func(t *testing.T, dir string) string {
			// Another store's: its records are in no table here.
			other := t.TempDir()
			s := MustOpen(t, other)
			if err := s.PutSession(context.Background(), record.Session{ID: "elsewhere", Agent: "gotour", Status: record.SessionDormant}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			b, err := os.ReadFile(largest(t, other, ".sst"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "999999.sst"), b, 0o600); err != nil {
				t.Fatal(err)
			}
			return "999999.sst"
		}},
		{"value log cut short", func(t *testing.T, dir string) string {
			p := largest(t, dir, ".vlog")
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
			return filepath.Base(p)
		}},
		{"garbled MANIFEST", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("not a manifest"), 0o600); err != nil {
				t.Fatal(err)
			}
			return "MANIFEST"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t)
			file := tc.damage(t, dir)
			before := snapshot(t, dir)
			for _, mode := range []Mode{Read, Write} {
				s, err := Open(dir, mode, Options{GCInterval: -1})
				if err == nil {
					s.Close()
					t.Fatalf("%v: the damaged directory opened", mode)
				}
				var de *DirError
				if !errors.As(err, &de) || de.File != file || !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "nothing in it was changed") {
					t.Errorf("%v: %v; want a DirError naming %s", mode, err, file)
				}
			}
			sameFiles(t, before, snapshot(t, dir))
		})
	}
}

// TestCrashedDirectoryIsRecoveredThenRead: a directory left with
// unreplayed writes (the process was killed) is refused read-only with
// ErrNeedsRecovery, without Badger being asked; Recover replays it, and
// then it reads, with the writes in it.
func TestCrashedDirectoryIsRecoveredThenRead(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	// A memtable log beside a clean directory is what a kill leaves: copy
	// the one a store writes while open.
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSession(context.Background(), record.Session{ID: "after-crash", Agent: "gotour", Status: record.SessionDormant}); err != nil {
		t.Fatal(err)
	}
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	if len(mems) == 0 {
		t.Fatal("an open store has no memtable log")
	}
	crashed := t.TempDir()
	for _, name := range slices.Collect(func(yield func(string) bool) {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if !yield(e.Name()) {
				return
			}
		}
	}) {
		if name == "LOCK" || name == "OWNER" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	if _, err := Open(crashed, Read, Options{}); !errors.Is(err, ErrNeedsRecovery) {
		t.Fatalf("read-only open of a crashed directory: %v, want ErrNeedsRecovery", err)
	}
	if err := Recover(crashed, Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(crashed, Read, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	infos, err := r.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(infos, func(i hearth.SessionInfo) bool { return i.ID == "after-crash" }) {
		t.Errorf("the replayed write is missing: %d sessions", len(infos))
	}
}

// allEvents reads every session's events, or the first error.
func allEvents(t *testing.T, dir string) ([]string, error) {
	t.Helper()
	s, err := Open(dir, Read, Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []string
	for i := range 50 {
		evs, err := s.Events(fmt.Sprintf("gotour-%04d", i), 0, 0)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			out = append(out, e.Session+" "+e.Message)
		}
	}
	return out, nil
}

// TestFlippedValuesAreErrorsNotData reproduces issue 14's second finding:
// single-bit flips across the value log either leave what is read the
// same or make the read fail with a DamageError that names the record;
// never different data. hearth verify finds every flip that changes a
// read.
func TestFlippedValuesAreErrorsNotData(t *testing.T) {
	t.Parallel()
	clean := fixture(t)
	want, err := allEvents(t, clean)
	if err != nil || len(want) != 50 {
		t.Fatalf("the intact copy reads %d events (err %v)", len(want), err)
	}
	vlog := filepath.Base(largest(t, clean, ".vlog"))
	orig, err := os.ReadFile(filepath.Join(clean, vlog))
	if err != nil {
		t.Fatal(err)
	}
	damagedReads := 0
	for i := 1; i <= 20; i++ {
		off := 20 + (len(orig)-21)*i/21
		dir := t.TempDir()
		es, _ := os.ReadDir(clean)
		for _, e := range es {
			b, err := os.ReadFile(filepath.Join(clean, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if e.Name() == vlog {
				b[off] ^= 1 << (i % 8)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got, err := allEvents(t, dir)
		rep, verr := VerifyDir(context.Background(), dir)
		if verr != nil {
			t.Fatalf("flip at %d: verify: %v", off, verr)
		}
		switch {
		case err != nil:
			damagedReads++
			var de *DamageError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), "hearth verify") || !strings.Contains(de.What, "events") {
				t.Errorf("flip at %d: %v; want a DamageError naming the events", off, err)
			}
			if rep.OK() {
				t.Errorf("flip at %d: a read failed but verify found nothing", off)
			}
		case !slices.Equal(got, want):
			t.Errorf("flip at %d: different data read with no error", off)
		}
	}
	if damagedReads == 0 {
		t.Error("no flip in the value log was noticed: the test damaged nothing that is read")
	}
}

func TestVerifyFindsDamagedTablesAndFiles(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	rep, err := VerifyDir(context.Background(), dir)
	if err != nil || !rep.OK() || rep.Records == 0 {
		t.Fatalf("an intact directory: %+v, %v", rep, err)
	}
	p := largest(t, dir, ".sst")
	b, _ := os.ReadFile(p)
	b[len(b)/3] ^= 0x10
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err = VerifyDir(context.Background(), dir)
	if err != nil || rep.OK() || rep.Damage[0].File != filepath.Base(p) {
		t.Fatalf("a flipped table: %+v, %v; want damage naming %s", rep, err, filepath.Base(p))
	}
}

// TestStuckWritesFailInsteadOfHanging: a commit that does not finish (as
// Badger's do while it retries a flush on an unwritable directory) fails
// its writes after the stall timeout, and every write submitted while it
// is stuck fails at once; when it ends, writes work again. The seam is the
// commit function: a real stuck disk cannot be made here without root
// tricks the machine may not allow.
func TestStuckWritesFailInsteadOfHanging(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Write, Options{GCInterval: -1, StallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := make(chan struct{})
	real := s.commit
	stuck := true
	s.commit = func(g []*write) (int, error) {
		if stuck {
			stuck = false
			<-release
		}
		return real(g)
	}
	ctx := context.Background()
	_, first := s.Append(hearth.Event{Kind: hearth.EventTaskStarted, Session: "s"})
	if err := first.Wait(ctx); !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "has not finished after 50ms") {
		t.Fatalf("a stuck write: %v, want a StallError", err)
	}
	_, during := s.Append(hearth.Event{Kind: hearth.EventTaskStarted, Session: "s"})
	if err := during.Wait(ctx); !errors.Is(err, ErrStalled) {
		t.Errorf("a write while stuck: %v, want ErrStalled at once", err)
	}
	close(release)
	for {
		_, after := s.Append(hearth.Event{Kind: hearth.EventTaskStarted, Session: "s"})
		err := after.Wait(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrStalled) {
			t.Fatalf("after the stuck commit ended: %v", err)
		}
	}
}

// TestDataDirectoryIsPrivate: a data directory that existed with loose
// modes (0755, files 0644) is made 0700 with owner-only files on open
// (issue 13).
func TestDataDirectoryIsPrivate(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		os.Chmod(f, 0o644)
	}
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory mode %v, want 0700", fi.Mode().Perm())
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s mode %v, want owner-only", filepath.Base(f), fi.Mode().Perm())
		}
	}
}

// copyDir copies the files of dir into a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() || e.Name() == "LOCK" || e.Name() == "OWNER" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// An open store's logs are mostly zeros it preallocated: they
		// are copied sparse, which reads the same.
		n := len(b)
		for n > 0 && b[n-1] == 0 {
			n--
		}
		p := filepath.Join(out, e.Name())
		if err := os.WriteFile(p, b[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCrashLeftoversAreNotDamage: the tables a crash leaves that the
// MANIFEST does not list, but accounts for, are not damage. A table a
// compaction replaced (the MANIFEST records its deletion; a crash came
// before the file went) and one a flush wrote from a memtable log whose
// entry never made it (everything in it is in the log) open to Write,
// which removes them with every record kept; Read refuses them with
// ErrNeedsRecovery and changes nothing. A table with a record nothing
// else holds is refused by both.
func TestCrashLeftoversAreNotDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("replaced by a compaction", func(t *testing.T) {
		dir := fixture(t)
		s := MustOpen(t, dir)
		if err := s.PutSession(ctx, record.Session{ID: "second", Agent: "gotour", Status: record.SessionDormant}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		before := copyDir(t, dir) // two tables
		// Badger compacts level 0 on close when asked: a compaction
		// whose inputs are deleted after the MANIFEST records it.
		db, err := badger.Open(RawOptions(dir).WithCompactL0OnClose(true))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		olds, _ := filepath.Glob(filepath.Join(before, "*.sst"))
		n := 0
		for _, p := range olds {
			if _, err := os.Stat(filepath.Join(dir, filepath.Base(p))); err == nil {
				continue
			}
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o600); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			t.Fatal("the compaction replaced no table")
		}
		snap := snapshot(t, dir)
		if _, err := Open(dir, Read, Options{}); !errors.Is(err, ErrNeedsRecovery) {
			t.Fatalf("read: %v, want ErrNeedsRecovery", err)
		}
		sameFiles(t, snap, snapshot(t, dir))
		s = MustOpen(t, dir)
		infos, err := s.Sessions(ctx)
		if err != nil || len(infos) != 51 {
			t.Fatalf("after the leftovers went: %d sessions, %v; want 51", len(infos), err)
		}
	})
	t.Run("flushed from a memtable log", func(t *testing.T) {
		dir := fixture(t)
		s := MustOpen(t, dir)
		if err := s.PutSession(ctx, record.Session{ID: "after-crash", Agent: "gotour", Status: record.SessionDormant}); err != nil {
			t.Fatal(err)
		}
		crashed := copyDir(t, dir) // with the memtable log
		s.Close()
		// The same crash, opened to write: its memtable log is flushed
		// into the first new table, the second holds what the open and
		// close wrote since.
		replayed := copyDir(t, crashed)
		s = MustOpen(t, replayed)
		s.Close()
		var fresh []string
		news, _ := filepath.Glob(filepath.Join(replayed, "*.sst"))
		for _, p := range news {
			if _, err := os.Stat(filepath.Join(crashed, filepath.Base(p))); err != nil {
				fresh = append(fresh, p)
			}
		}
		slices.Sort(fresh)
		if len(fresh) < 2 {
			t.Fatalf("replaying wrote %d tables, want the memtable log's and the close's", len(fresh))
		}
		put := func(dst, p string) {
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(p)), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		foreign := copyDir(t, crashed)
		put(crashed, fresh[0])
		put(foreign, fresh[len(fresh)-1])

		s, err := Open(crashed, Write, Options{GCInterval: -1})
		if err != nil {
			t.Fatalf("write open of a crash with its flushed table: %v", err)
		}
		if _, err := s.SessionRecord("after-crash"); err != nil {
			t.Errorf("the replayed write: %v", err)
		}
		s.Close()

		snap := snapshot(t, foreign)
		for _, mode := range []Mode{Read, Write} {
			_, err := Open(foreign, mode, Options{GCInterval: -1})
			var de *DirError
			if !errors.As(err, &de) || de.File != filepath.Base(fresh[len(fresh)-1]) {
				t.Errorf("%v open beside a table with records nothing else holds: %v; want a DirError naming it", mode, err)
			}
		}
		sameFiles(t, snap, snapshot(t, foreign))
	})
}
