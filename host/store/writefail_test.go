package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth"

	"github.com/hearth-dev/hearth/host/record"
)

// TestFailedWriteRefusesLaterWrites is the "also open" finding of issue
// 24: after a write Badger failed, the store went on taking writes, and
// one queued behind the failed write (the same run's) landed after it.
// Now the write queued behind it fails, as does every write after, with
// ErrWriteFailed naming the failure and saying to restart; reopened, the
// store holds none of them and takes writes again.
func TestFailedWriteRefusesLaterWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "before"}).Wait(ctx) != nil {
		t.Fatal("the first write failed")
	}
	injected := errors.New("injected: the disk said no")
	var behind *Pending
	s.FailWrites(func(keys []string) error {
		if behind != nil {
			return nil
		}
		// The run writes again before it learns that this write failed:
		// the next write is queued behind this one.
		behind = appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "queued behind"})
		return injected
	})
	failing := appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "fails"})
	if err := failing.Wait(ctx); !errors.Is(err, injected) {
		t.Fatalf("the failing write: %v, want the injected failure", err)
	}
	s.FailWrites(nil)
	if err := behind.Wait(ctx); !errors.Is(err, ErrWriteFailed) {
		t.Errorf("the write queued behind the failed one: %v, want ErrWriteFailed", err)
	}
	after := appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "after"})
	err = after.Wait(ctx)
	var wf *WriteFailedError
	if !errors.As(err, &wf) || !errors.Is(err, ErrWriteFailed) || !strings.Contains(err.Error(), injected.Error()) || !strings.Contains(err.Error(), "restart hearth") {
		t.Errorf("a write after the failure: %v, want a *WriteFailedError naming the failure and saying to restart", err)
	}
	if !errors.Is(s.Failed(), ErrWriteFailed) {
		t.Errorf("Failed() = %v, want the failure", s.Failed())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "reopened"}).Wait(ctx) != nil {
		t.Fatal("a write after reopening failed")
	}
	evs, err := s.Events("s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Message)
	}
	if strings.Join(got, ",") != "before,reopened" {
		t.Errorf("events after reopening: %v, want before and reopened alone", got)
	}
}

// TestRealWriteFailureRefusesLaterWrites: the same with a failure of the
// system's own, in a process of its own: with no file descriptor left
// (RLIMIT_NOFILE), Badger cannot start its next value log, and the write
// that needs it fails; every write after it is refused, and the directory
// reopens with every acknowledged write.
func TestRealWriteFailureRefusesLaterWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, sc := helper(t, "nofile", dir)
	acked, failed := 0, ""
	var after string
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		switch f[0] {
		case "acked":
			acked, _ = strconv.Atoi(f[1])
		case "failed":
			failed = f[2]
		case "after":
			after = f[2]
		case "error":
			t.Fatalf("helper: %s", sc.Text())
		}
	}
	_ = cmd.Wait()
	if failed == "" || !strings.Contains(failed, "too many open files") {
		t.Fatalf("after %d writes, the failing write said %q; want Badger's failure to open a file", acked, failed)
	}
	if !strings.Contains(after, ErrWriteFailed.Error()) || !strings.Contains(after, "too many open files") {
		t.Errorf("a write after the failure said %q; want it refused, naming the failure", after)
	}
	t.Logf("write %d failed: %s\nthe next: %s", acked+1, failed, after)
	s, err := Open(dir, Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		t.Fatalf("reopening after the failure: %v", err)
	}
	defer s.Close()
	for i := 1; i <= acked; i++ {
		if st, err := s.SessionState(fmt.Sprintf("s-%d", i)); err != nil || len(st) != nofileState {
			t.Fatalf("acknowledged write %d of %d: %d bytes, %v", i, acked, len(st), err)
		}
	}
	if appendEvent(s, hearth.Event{Kind: "tool.used", Session: "s-1", Message: "reopened"}).Wait(context.Background()) != nil {
		t.Fatal("a write after reopening failed")
	}
}

// nofileState is the size of each state the nofile helper writes: the
// value log (64 MiB) fills in about a hundred.
const nofileState = 640 << 10

// nofileHelper opens dir, lowers its file-descriptor limit to the
// descriptors it has, and writes session states until one fails; it
// reports "acked N" for each durable one, "failed N ERR" for the first
// that fails, and "after N ERR" for the write it tries next.
func nofileHelper(dir string) error {
	s, err := Open(dir, Write, Options{GCInterval: -1, MinFreeSpace: -1})
	if err != nil {
		return err
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	lim := uint64(len(fds) - 1) // less the one ReadDir held: room for nothing new
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim, Max: lim}); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	state := make([]byte, nofileState)
	for i := 1; i < 1000; i++ {
		rec := record.Session{ID: fmt.Sprintf("s-%d", i), Agent: "a", Status: record.SessionDormant}
		if err := s.PutSessionState(context.Background(), rec, state); err != nil {
			fmt.Fprintf(out, "failed %d %s\n", i, strings.ReplaceAll(err.Error(), "\n", " "))
			rec.ID = fmt.Sprintf("s-%d", i+1)
			err := s.PutSessionState(context.Background(), rec, state)
			fmt.Fprintf(out, "after %d %v\n", i+1, err)
			return nil
		}
		fmt.Fprintf(out, "acked %d\n", i)
		out.Flush()
	}
	return errors.New("no write failed")
}
