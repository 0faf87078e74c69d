package member_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// forwardHost starts a host on the data directory dir, in a static
// cluster as host b, ready to run forwarded tasks. now is its clock (nil
// for the wall clock); fence its lease (nil: it lasts). Close it to "stop
// the process"; it is closed at the test's end too.
func forwardHost(t *testing.T, dir string, now func() time.Time, fence context.Context) *testHost {
	t.Helper()
	return startHost(t, hostOptions{ID: "b", DataDir: dir, Now: now, Fence: fence})
}

// fakeClock is a host clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestForwardedResultSurvivesRestart: a task forwarded under key K runs
// and finishes; the host stops and starts again on the same data
// directory; K forwarded again gets the same result, and the agent ran
// once (its side effect, a line appended to a file, is there once). A
// task that failed keeps its error, with the sentinel it wrapped. A key
// never seen is unknown after the restart as before.
func TestForwardedResultSurvivesRestart(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	ctx := t.Context()
	ran := filepath.Join(work, "ran")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=once;echo:done"}

	h := forwardHost(t, dir, nil, nil)
	first, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task)
	if err != nil || first.Err != nil || first.Outcome.Result.Output != "done" {
		t.Fatalf("first forward: %+v %v", first, err)
	}
	// A denial by an admission guard: a failure with its own sentinel.
	denied, err := h.Member.RunForwarded(ctx, "a", "key-2", "", hearth.Task{Agent: "scripted", Prompt: "fail:broken"})
	if err != nil || denied.Err == nil {
		t.Fatalf("a failing task: %+v %v", denied, err)
	}
	h.Close(ctx)

	h = forwardHost(t, dir, nil, nil)
	if st, _ := h.Member.ForwardedStatus("key-1"); st != cluster.TaskDone {
		t.Fatalf("status of key-1 after the restart: %v, want done", st)
	}
	again, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task)
	if err != nil || again.Err != nil {
		t.Fatalf("forward again after the restart: %+v %v", again, err)
	}
	if got := lines(t, ran); len(got) != 1 {
		t.Fatalf("the agent ran %d times, want once: %q", len(got), got)
	}
	o, w := again.Outcome, first.Outcome
	if o.TaskID != "key-1" || o.Result.Output != w.Result.Output || o.Session != w.Session || o.Duration != w.Duration ||
		o.Decision.Reason != w.Decision.Reason || o.ToolUses != w.ToolUses {
		t.Fatalf("the kept outcome %+v differs from the first %+v", o, w)
	}
	st, r := h.Member.ForwardedStatus("key-2")
	if st != cluster.TaskDone || r.Err == nil || r.Err.Error() != denied.Err.Error() {
		t.Fatalf("key-2 after the restart: %v %+v, want done with %q", st, r, denied.Err)
	}
	if st, _ := h.Member.ForwardedStatus("never-sent"); st != cluster.TaskUnknown {
		t.Fatalf("a key never sent: %v", st)
	}
	// A new key runs as always.
	if r, err := h.Member.RunForwarded(ctx, "a", "key-3", "", task); err != nil || r.Err != nil {
		t.Fatalf("a new key after the restart: %+v %v", r, err)
	}
	if got := lines(t, ran); len(got) != 2 {
		t.Fatalf("after a new key: %q, want two lines", got)
	}
}

// TestForwardInterruptedByRestart: a forwarded task is running when its
// host stops (the shutdown's grace period is over: the task is
// cancelled). After the restart its key is answered as interrupted, to a
// status query and to a forward, and the task does not run again: its
// side effect is there once. The forwarding host places it elsewhere
// (cluster.Forward, TestForward).
func TestForwardInterruptedByRestart(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	ctx := t.Context()
	ran, release := filepath.Join(work, "ran"), filepath.Join(work, "release")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=started;wait:" + release + ";echo:late"}

	h := forwardHost(t, dir, nil, nil)
	gaveUp, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := h.Member.RunForwarded(gaveUp, "a", "key-1", "", task)
		errc <- err
	}()
	waitFile(t, ran)
	cancel() // the forwarding host lost its connection
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v", err)
	}
	if st, _ := h.Member.ForwardedStatus("key-1"); st != cluster.TaskRunning {
		t.Fatalf("status while it runs: %v", st)
	}
	stopNow, stop := context.WithCancel(ctx)
	stop() // no grace period: tasks in flight are cancelled
	h.Close(stopNow)

	h = forwardHost(t, dir, nil, nil)
	st, r := h.Member.ForwardedStatus("key-1")
	if st != cluster.TaskInterrupted || !errors.Is(r.Err, cluster.ErrInterrupted) {
		t.Fatalf("status after the restart: %v %v, want interrupted", st, r.Err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task)
	if !errors.Is(err, cluster.ErrInterrupted) || !strings.Contains(err.Error(), "key-1") || !strings.Contains(err.Error(), "from a") {
		t.Fatalf("forward again after the restart: %v, want ErrInterrupted naming the task and its sender", err)
	}
	if errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("interrupted is not a refusal (which would leave the host in placement): %v", err)
	}
	if got := lines(t, ran); len(got) != 1 {
		t.Fatalf("the agent started %d times, want once: %q", len(got), got)
	}
}

// TestForwardedKeysExpireAcrossRestart: a key kept for the idempotency
// window is dropped, from memory and from the store, once the window is
// over, even if the host was stopped when it ended; a forward with it
// then runs the task again, which is what the window promises.
func TestForwardedKeysExpireAcrossRestart(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	ctx := t.Context()
	clock := &fakeClock{now: time.Now()}
	ran := filepath.Join(work, "ran")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x;echo:done"}

	h := forwardHost(t, dir, clock.Now, nil)
	for i, k := range []string{"key-old", "key-new"} {
		if i > 0 {
			clock.Advance(cluster.DefaultKeptAge / 2)
		}
		if r, err := h.Member.RunForwarded(ctx, "a", k, "", task); err != nil || r.Err != nil {
			t.Fatalf("%s: %+v %v", k, r, err)
		}
	}
	h.Close(ctx)
	// Down while key-old's window ends, not key-new's.
	clock.Advance(cluster.DefaultKeptAge/2 + time.Minute)

	h = forwardHost(t, dir, clock.Now, nil)
	if _, err := h.Store.ForwardRecord("key-old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key-old's record after its window: %v, want it deleted", err)
	}
	if st, _ := h.Member.ForwardedStatus("key-old"); st != cluster.TaskUnknown {
		t.Fatalf("key-old after its window: %v, want unknown", st)
	}
	if st, _ := h.Member.ForwardedStatus("key-new"); st != cluster.TaskDone {
		t.Fatalf("key-new within its window: %v, want done", st)
	}
	if r, err := h.Member.RunForwarded(ctx, "a", "key-new", "", task); err != nil || r.Err != nil {
		t.Fatalf("key-new again: %+v %v", r, err)
	}
	if got := lines(t, ran); len(got) != 2 {
		t.Fatalf("ran %q, want two lines (key-new kept)", got)
	}

	// key-new's window ends while the host runs: the next acceptance
	// drops it, in the same write.
	clock.Advance(cluster.DefaultKeptAge)
	if r, err := h.Member.RunForwarded(ctx, "a", "key-3", "", task); err != nil || r.Err != nil {
		t.Fatalf("key-3: %+v %v", r, err)
	}
	if _, err := h.Store.ForwardRecord("key-new"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key-new's record after its window: %v, want it deleted", err)
	}
	if r, err := h.Member.RunForwarded(ctx, "a", "key-old", "", task); err != nil || r.Err != nil {
		t.Fatalf("key-old again: %+v %v", r, err)
	}
	if got := lines(t, ran); len(got) != 4 {
		t.Fatalf("ran %q, want four lines: key-old ran again after its window", got)
	}
}

// TestDamagedForwardRecordIsNotForgotten: a forwarded task's record that
// cannot be read (its bytes damaged while the host was down) is not taken
// for a key never seen, which would run the task again: its key is
// answered as interrupted, with the damage named as the store names it.
func TestDamagedForwardRecordIsNotForgotten(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	ctx := t.Context()
	ran := filepath.Join(work, "ran")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x;echo:done"}
	h := forwardHost(t, dir, nil, nil)
	if r, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task); err != nil || r.Err != nil {
		t.Fatalf("forward: %+v %v", r, err)
	}
	h.Close(ctx)
	// A record of a version this hearth does not read, and one that is
	// not a record at all.
	db, err := badger.Open(store.RawOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		if err := txn.Set([]byte("fw/key-1"), []byte{2, 0x0a, 0x05, 'k', 'e', 'y', '-', '1'}); err != nil {
			return err
		}
		return txn.Set([]byte("fw/key-2"), []byte{1, 0xff, 0xff, 0xff})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	h = forwardHost(t, dir, nil, nil)
	for k, want := range map[string]string{"key-1": "record version 2", "key-2": "forwarded task key-2 is damaged"} {
		_, err := h.Member.RunForwarded(ctx, "a", k, "", task)
		if !errors.Is(err, cluster.ErrInterrupted) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "forwarded task "+k) {
			t.Errorf("%s: %v, want ErrInterrupted saying %q", k, err, want)
		}
		if st, _ := h.Member.ForwardedStatus(k); st != cluster.TaskInterrupted {
			t.Errorf("%s: status %v, want interrupted", k, st)
		}
	}
	if got := lines(t, ran); len(got) != 1 {
		t.Fatalf("ran %q, want once", got)
	}
}

// TestForwardedKeysBoundedAcrossRestart: a store holding more keys than
// a host keeps (cluster.DefaultKeptKeys, all within the hour) loses the oldest when
// the host starts, in memory and in the store; the others are answered
// from their records.
func TestForwardedKeysBoundedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	st, err := store.Open(dir, store.Write, store.Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) string { return fmt.Sprintf("key-%05d", i) }
	// Submitted together, committed in a few groups.
	var pend []*store.Pending
	for i := range cluster.DefaultKeptKeys + 2 {
		at := now.Add(time.Duration(i-cluster.DefaultKeptKeys-2) * time.Millisecond) // key-00000 the oldest
		pend = append(pend, st.SaveForward(cluster.ForwardRecord{Key: key(i), From: "a", Agent: "scripted", Done: true,
			Accepted: at, Finished: at, Outcome: &hearth.Outcome{TaskID: key(i), Result: sdk.Result{Output: key(i)}}}, nil))
	}
	for _, p := range pend {
		if err := p.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	h := forwardHost(t, dir, func() time.Time { return now }, nil)
	for i, want := range map[int]cluster.TaskStatus{0: cluster.TaskUnknown, 1: cluster.TaskUnknown, 2: cluster.TaskDone, cluster.DefaultKeptKeys + 1: cluster.TaskDone} {
		st, r := h.Member.ForwardedStatus(key(i))
		if st != want {
			t.Errorf("%s: %v, want %v", key(i), st, want)
		}
		if st == cluster.TaskDone && r.Outcome.Result.Output != key(i) {
			t.Errorf("%s: kept output %q", key(i), r.Outcome.Result.Output)
		}
		_, err := h.Store.ForwardRecord(key(i))
		if gone := errors.Is(err, store.ErrNotFound); gone != (want == cluster.TaskUnknown) {
			t.Errorf("%s: record %v, want it gone: %v", key(i), err, want == cluster.TaskUnknown)
		}
	}
	recs, err := h.Store.ForwardRecords()
	if err != nil || len(recs) != cluster.DefaultKeptKeys {
		t.Fatalf("%d records kept (%v), want %d", len(recs), err, cluster.DefaultKeptKeys)
	}
}

// TestForwardStoppedByALostLease: a host that loses its lease cancels the
// forwarded task it runs (fencing); the forward is answered as
// interrupted, not with the cancellation as the task's result (which the
// forwarding host would hand its caller as a failure), so the task is
// placed elsewhere. The key stays interrupted across a restart, and the
// task never starts again here.
func TestForwardStoppedByALostLease(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	ctx := t.Context()
	ran, release := filepath.Join(work, "ran"), filepath.Join(work, "release")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=started;wait:" + release + ";echo:late"}

	fence, loseLease := context.WithCancel(ctx)
	h := forwardHost(t, dir, nil, fence)
	errc := make(chan error, 1)
	go func() {
		r, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task)
		if err == nil {
			err = fmt.Errorf("a result: %+v", r)
		}
		errc <- err
	}()
	waitFile(t, ran)
	loseLease()
	err := <-errc
	if !errors.Is(err, cluster.ErrInterrupted) || !strings.Contains(err.Error(), "lease was lost") || !strings.Contains(err.Error(), "key-1") {
		t.Fatalf("the forward when the lease was lost: %v, want ErrInterrupted saying why", err)
	}
	if st, _ := h.Member.ForwardedStatus("key-1"); st != cluster.TaskInterrupted {
		t.Fatalf("status: %v, want interrupted", st)
	}
	h.Close(ctx)

	h = forwardHost(t, dir, nil, nil)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Member.RunForwarded(ctx, "a", "key-1", "", task); !errors.Is(err, cluster.ErrInterrupted) {
		t.Fatalf("after a restart: %v, want ErrInterrupted", err)
	}
	if got := lines(t, ran); len(got) != 1 {
		t.Fatalf("the agent started %d times, want once: %q", len(got), got)
	}
}
