package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// TestBackupRestoreRoundTrip: a backup taken while the store serves,
// restored into an empty directory, reads the same records and files; a
// restore into a directory that is not empty, or of a damaged backup, is
// refused and leaves nothing behind.
func TestBackupRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	sha, _, err := s.PutFile(strings.NewReader("the brief"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := s.Backup(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot are not in it.
	if _, p := s.Append(hearth.Event{Kind: hearth.EventTaskStarted, Session: "gotour-0000", Message: "after"}); p.Wait(context.Background()) != nil {
		t.Fatal("append")
	}
	s.Close()
	if st.Records == 0 || st.Files != 1 {
		t.Fatalf("backup stats %+v", st)
	}
	// What the snapshot held: a fresh fixture has the same records (the
	// event written after the backup is not among them).
	want, err := allEvents(t, fixture(t))
	if err != nil {
		t.Fatal(err)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	rst, err := Restore(context.Background(), bytes.NewReader(buf.Bytes()), restored, RestoreOptions{MinFreeSpace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rst.Records != st.Records || rst.Files != 1 {
		t.Errorf("restored %+v, backed up %+v", rst, st)
	}
	got, err := allEvents(t, restored)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("restored events differ (err %v): %d vs %d", err, len(got), len(want))
	}
	if b, err := os.ReadFile(filepath.Join(restored, "files", sha[:2], sha)); err != nil || string(b) != "the brief" {
		t.Errorf("stored file: %q, %v", b, err)
	}
	rep, err := VerifyDir(context.Background(), restored)
	if err != nil || !rep.OK() {
		t.Errorf("verify of the restored directory: %+v, %v", rep, err)
	}
	// The restored store takes writes, with event numbers after the old.
	r, err := Open(restored, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	seq, p := r.Append(hearth.Event{Kind: hearth.EventTaskStarted, Session: "gotour-0001"})
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if seq <= 50 {
		t.Errorf("a new event got number %d, not after the restored ones", seq)
	}

	if _, err := Restore(context.Background(), bytes.NewReader(buf.Bytes()), restored, RestoreOptions{MinFreeSpace: -1}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore into a directory that is not empty: %v", err)
	}
	bad := bytes.Clone(buf.Bytes())
	i := bytes.Index(bad, []byte("gotour-0007"))
	bad[i] ^= 0x01
	empty := filepath.Join(t.TempDir(), "bad")
	var re *RestoreError
	if _, err := Restore(context.Background(), bytes.NewReader(bad), empty, RestoreOptions{MinFreeSpace: -1}); !errors.As(err, &re) {
		t.Errorf("restore of a damaged backup: %v, want a RestoreError", err)
	}
	if es, _ := os.ReadDir(empty); len(es) != 0 {
		t.Errorf("a failed restore left %d entries behind", len(es))
	}
}

// FuzzRestore: no backup, however damaged, panics restore or makes it
// allocate without bound; a failed restore leaves nothing behind.
func FuzzRestore(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.PutSession(context.Background(), record.Session{ID: "s", Agent: "a", Status: record.SessionDormant}); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Backup(context.Background(), &buf); err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		target := filepath.Join(t.TempDir(), "r")
		if _, err := Restore(context.Background(), bytes.NewReader(b), target, RestoreOptions{MinFreeSpace: -1}); err != nil {
			if es, _ := os.ReadDir(target); len(es) != 0 {
				t.Fatalf("a failed restore (%v) left %d entries", err, len(es))
			}
		}
	})
}
