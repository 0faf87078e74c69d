package store

import (
	"context"
	"errors"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"golang.org/x/sys/unix"
)

// freeSpace reads the free space of dir's file system, as the store does.
func freeSpace(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Bavail * uint64(st.Bsize)
}

// TestStatusRecordsUseTheReserve: with free space below MinFreeSpace but
// above half of it, an ordinary write is refused and a run's status
// record is accepted; below half, the status record is refused too. The
// threshold is set from the real free space of the test's directory, by
// wide margins, so that the store reads a real file system.
func TestStatusRecordsUseTheReserve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := MustOpen(t, dir)
	ctx := context.Background()
	saveRun(t, s, "essay-1")
	saveRun(t, s, "essay-10") // a run whose ID extends essay-1's

	free := freeSpace(t, dir)
	s.SetMinFreeSpace(free / 2 * 3) // free is 2/3 of the threshold: in the reserve

	ordinary := record.RunWrite{Run: &record.Run{ID: "essay-1", Status: hearth.RunCompleted, Checkpoint: 2}}
	if err := s.SaveRun("essay-1", ordinary).Wait(ctx); !errors.Is(err, hearth.ErrNoSpace) {
		t.Fatalf("an ordinary write below the threshold: %v, want ErrNoSpace", err)
	}
	head, err := s.RunRecord("essay-1")
	if err != nil {
		t.Fatal(err)
	}
	head.Status, head.Reason = hearth.RunPaused, "not enough free space"
	if err := s.SaveRunStatus("essay-1", head).Wait(ctx); err != nil {
		t.Fatalf("a status record in the reserve: %v, want it accepted", err)
	}
	got, err := s.RunRecord("essay-1")
	if err != nil || got.Status != hearth.RunPaused || got.Reason != "not enough free space" || got.Checkpoint != 1 {
		t.Fatalf("head after the status record: %+v, %v; want paused with its reason and checkpoint 1", got, err)
	}
	if n, err := s.NewestCheckpoint("essay-1"); n != 1 || err != nil {
		t.Errorf("NewestCheckpoint = %d, %v; want 1", n, err)
	}

	// In one group, each write is judged by its kind: the status record
	// between two ordinary writes lands, they do not.
	before := &write{sets: []kv{{[]byte("r/x"), nil}}, pending: newPending()}
	status := &write{sets: []kv{{[]byte("r/y"), []byte{recordVersion}}}, status: true, pending: newPending()}
	after := &write{sets: []kv{{[]byte("r/z"), nil}}, pending: newPending()}
	s.commitGroup([]*write{before, status, after})
	for name, w := range map[string]*write{"the ordinary write before": before, "the ordinary write after": after} {
		if err := w.pending.Wait(ctx); !errors.Is(err, hearth.ErrNoSpace) {
			t.Errorf("%s a status record, in one group: %v, want ErrNoSpace", name, err)
		}
	}
	if err := status.pending.Wait(ctx); err != nil {
		t.Errorf("a status record between ordinary writes: %v, want it accepted", err)
	}

	// Ordinary writes keep their hysteresis: once refused, they stay
	// refused until free space is back above the threshold by an eighth.
	s.SetMinFreeSpace(free / 20 * 19)
	if err := s.SaveRun("essay-1", ordinary).Wait(ctx); !errors.Is(err, hearth.ErrNoSpace) {
		t.Errorf("an ordinary write just above the threshold after a refusal: %v, want ErrNoSpace", err)
	}

	s.SetMinFreeSpace(free * 3) // free is a third of the threshold: below the reserve
	head.Reason = "again"
	err = s.SaveRunStatus("essay-1", head).Wait(ctx)
	var se *SpaceError
	if !errors.As(err, &se) || se.Need != free*3/statusReserve {
		t.Fatalf("a status record below the reserve: %v, want a SpaceError needing half the threshold", err)
	}

	s.SetMinFreeSpace(0)
	if err := s.SaveRun("essay-1", ordinary).Wait(ctx); err != nil {
		t.Fatalf("an ordinary write with the guard off: %v", err)
	}
	if n, err := s.NewestCheckpoint("essay-10"); n != 1 || err != nil {
		t.Errorf("NewestCheckpoint(essay-10) = %d, %v; want 1", n, err)
	}
	if n, err := s.NewestCheckpoint("essay-2"); n != 0 || err != nil {
		t.Errorf("NewestCheckpoint of a run without checkpoints = %d, %v; want 0", n, err)
	}
}
