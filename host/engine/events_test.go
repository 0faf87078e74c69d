package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
)

// TestEventsOnlyAfterTheirWrites reproduces issue 14's sixth finding: an
// event whose write failed must not reach subscribers as the success it
// would have been; they get a write.failed event naming it instead.
func TestEventsOnlyAfterTheirWrites(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	sub := subscribe(h, 16)
	defer sub.Close()

	h.emit(hearth.Event{Kind: hearth.EventRunTask, Run: "r1", Task: "a", From: "running", To: "succeeded", Message: "a: succeeded"})
	if e := next(t, sub); e.Kind != hearth.EventRunTask {
		t.Fatalf("a durable event came as %+v", e)
	}

	// Make every write fail: the store is closed under the host.
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	h.emit(hearth.Event{Kind: hearth.EventRunTask, Run: "r1", Task: "b", From: "running", To: "succeeded", Message: "b: succeeded"})
	e := next(t, sub)
	if e.Kind != hearth.EventWriteFailed || e.Run != "r1" || e.Task != "b" || !strings.Contains(e.Message, "not recorded: run.task (b: succeeded)") {
		t.Errorf("after a failed write, subscribers got %+v; want write.failed naming the lost event", e)
	}
}

func next(t *testing.T, sub *subscription) hearth.Event {
	t.Helper()
	select {
	case e := <-sub.Events():
		return e
	case <-time.After(runTimeout):
		t.Fatal("no event")
		return hearth.Event{}
	}
}

// TestFullDiskPausesTheRunAndResumes: when the store refuses writes for
// lack of free space (the real guard, its threshold set from what the
// file system has), the run pauses with that reason instead of dying; once
// there is room again it resumes and completes, each task run to success
// once. While free space is in the store's status reserve (above half the
// threshold) the pause is on disk with its reason; below it, the run's
// record keeps saying running and reads as interrupted, with a reason
// that says so rather than the one it started for.
func TestFullDiskPausesTheRunAndResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// min is the threshold, from the free space of the data
		// directory's file system.
		min      func(free uint64) uint64
		recorded bool
	}{
		{"in the status reserve", func(free uint64) uint64 { return free / 2 * 3 }, true},
		{"below the status reserve", func(uint64) uint64 { return 1 << 62 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost(t, testAgent("scripted", "agent"))
			dir := t.TempDir()
			started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
			p := pipe("disk",
				[]string{"a", "echo:a"},
				[]string{"b", "touch:" + started + ";wait:" + release + ";echo:b", "a"},
				[]string{"c", "echo:c", "b"},
			)
			rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p})
			if err != nil {
				t.Fatal(err)
			}
			defer rh.Close()
			waitFile(t, started)
			var st unix.Statfs_t
			if err := unix.Statfs(h.store.Dir(), &st); err != nil {
				t.Fatal(err)
			}
			h.store.SetMinFreeSpace(tc.min(st.Bavail * uint64(st.Bsize)))
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			info, err := waitRun(t, rh)
			if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, "not enough free space") || !strings.Contains(info.Reason, "hearth runs resume "+info.ID) {
				t.Fatalf("run = %s (%s); want paused, saying there is not enough free space and how to resume", info.Status, info.Reason)
			}
			if info.Succeeded != 1 || info.Checkpoint == 0 {
				t.Errorf("run = %d succeeded at checkpoint %d; want a alone, as on disk", info.Succeeded, info.Checkpoint)
			}
			if got := strings.Contains(fmt.Sprint(err), "the pause could not be recorded"); got == tc.recorded {
				t.Errorf("run's error: %v; want it to say the pause could not be recorded: %v", err, !tc.recorded)
			}

			// What the disk holds: a consistent state, with the pause
			// when the reserve allowed it.
			head, err := h.store.RunRecord(info.ID)
			if err != nil {
				t.Fatal(err)
			}
			offline := head.Info(true)
			switch {
			case tc.recorded && (head.Status != hearth.RunPaused || head.Reason != info.Reason || offline.Interrupted):
				t.Errorf("on disk: %s (%s); want paused with the run's reason", head.Status, head.Reason)
			case !tc.recorded && (head.Status != hearth.RunRunning || !offline.Interrupted || offline.Reason != record.InterruptedReason(info.ID)):
				t.Errorf("on disk: %s (%s), read offline as %s (%s, interrupted %v); want running, read as interrupted without its stale reason",
					head.Status, head.Reason, offline.Status, offline.Reason, offline.Interrupted)
			}
			if n, err := h.store.NewestCheckpoint(info.ID); err != nil || n != head.Checkpoint || head.TasksSucceeded != 1 {
				t.Errorf("on disk: head at checkpoint %d with %d succeeded, newest checkpoint %d (%v); want them to agree, with a alone succeeded",
					head.Checkpoint, head.TasksSucceeded, n, err)
			}
			acked := outputsOf(t, h, info.ID)
			if len(acked) != 1 || len(acked["a"]) != 1 {
				t.Fatalf("outputs on disk: %+v; want a's alone", acked)
			}

			h.store.SetMinFreeSpace(0)
			rh2, err := h.ResumeRun(context.Background(), info.ID, hearth.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer rh2.Close()
			info, err = waitRun(t, rh2)
			if err != nil || info.Status != hearth.RunCompleted || info.Succeeded != 3 {
				t.Fatalf("after space came back: %+v, %v; want completed with 3 tasks", info, err)
			}
			outs := outputsOf(t, h, info.ID)
			for _, task := range []string{"a", "b", "c"} {
				if len(outs[task]) != 1 || outs[task][0].Output != task {
					t.Errorf("outputs of %s: %+v; want one, %q", task, outs[task], task)
				}
			}
			if a := outs["a"]; len(a) == 1 && !a[0].Time.Equal(acked["a"][0].Time) {
				t.Errorf("a ran again after resuming (output at %s, before the pause at %s)", a[0].Time, acked["a"][0].Time)
			}
		})
	}
}

// TestUnrecordedStopPausesFromTheReserve: a run asked to pause while no
// task runs writes its stop as its only write; when the store refuses
// that write for lack of free space, the run pauses all the same, recorded
// from the status reserve, with the reason, rather than staying "running"
// on disk.
func TestUnrecordedStopPausesFromTheReserve(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("retry", []string{"a", "fail:not yet"})
	p.Retry = hearth.Retry{Attempts: 3, Backoff: time.Hour, MaxBackoff: time.Hour}
	sub := subscribe(h, 64)
	defer sub.Close()
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	for e := next(t, sub); e.Kind != hearth.EventRunTask || e.To != string(hearth.TaskRetrying); e = next(t, sub) {
	}
	before, err := h.store.RunRecord(rh.ID())
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(h.store.Dir(), &st); err != nil {
		t.Fatal(err)
	}
	h.store.SetMinFreeSpace(st.Bavail * uint64(st.Bsize) / 2 * 3) // in the reserve
	if _, err := h.PauseRun(context.Background(), rh.ID()); err != nil {
		t.Fatal(err)
	}
	info, err := waitRun(t, rh)
	if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, "not enough free space") {
		t.Fatalf("run = %s (%s), %v; want paused, saying there is not enough free space", info.Status, info.Reason, err)
	}
	head, err := h.store.RunRecord(rh.ID())
	if err != nil || head.Status != hearth.RunPaused || head.Reason != info.Reason || head.Checkpoint != before.Checkpoint {
		t.Fatalf("on disk: %+v, %v; want paused with the run's reason, at checkpoint %d as before", head, err, before.Checkpoint)
	}
}

// TestRefusedCancelLeavesAStoppedRunAsItWas: cancelling a failed run on a
// full disk cannot be recorded; the run stays failed on disk, and the
// error says why the cancel did not happen.
func TestRefusedCancelLeavesAStoppedRunAsItWas(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	info, _ := startRun(t, h, pipe("doomed", []string{"a", "permanent:no"}), hearth.RunOptions{})
	if info.Status != hearth.RunFailed {
		t.Fatalf("run = %s; want failed", info.Status)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(h.store.Dir(), &st); err != nil {
		t.Fatal(err)
	}
	h.store.SetMinFreeSpace(st.Bavail * uint64(st.Bsize) / 2 * 3) // in the reserve
	_, err := h.CancelRun(context.Background(), info.ID)
	if err == nil || !strings.Contains(err.Error(), "not enough free space") || !strings.Contains(err.Error(), "still says failed") {
		t.Fatalf("cancel on a full disk: %v; want an error saying there is not enough free space and the run is still failed", err)
	}
	head, err := h.store.RunRecord(info.ID)
	if err != nil || head.Status != hearth.RunFailed || head.Reason != info.Reason {
		t.Fatalf("on disk: %+v, %v; want failed as before (%s)", head, err, info.Reason)
	}
}

// TestFailedStoreLeavesTheRunInterrupted: when the store takes no writes
// at all (here it is closed under the host, as a store whose disk fails
// is), a run whose write fails cannot record its pause either. The run
// stops, its error says why and that the pause was not recorded; a read
// of the directory reports it interrupted with a reason that says so, not
// the one it started for; the next host on the directory pauses it, and
// it resumes to completion with the task the store had acknowledged not
// run again.
func TestFailedStoreLeavesTheRunInterrupted(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := newTestHostIn(t, data, testAgent("scripted", "agent"))
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	p := pipe("broken",
		[]string{"a", "echo:a"},
		[]string{"b", "touch:" + started + ";wait:" + release + ";echo:b", "a"},
	)
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	waitFile(t, started)
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := waitRun(t, rh)
	if info.Status != hearth.RunPaused || !strings.Contains(fmt.Sprint(err), "store is closed") || !strings.Contains(fmt.Sprint(err), "the pause could not be recorded") {
		t.Fatalf("run = %s, %v; want paused, its error naming the failure and saying the pause was not recorded", info.Status, err)
	}
	id := info.ID
	_ = h.Close(context.Background()) // its store is closed already, and says so

	s, err := store.Open(data, store.Read, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(context.Background())
	s.Close()
	if err != nil || len(runs) != 1 || runs[0].Status != hearth.RunRunning || !runs[0].Interrupted || runs[0].Reason != record.InterruptedReason(id) {
		t.Fatalf("the directory read afterwards: %+v, %v; want the run interrupted, with a reason that says its end was not recorded", runs, err)
	}

	h2 := newTestHostIn(t, data, testAgent("scripted", "agent"))
	d, err := h2.Run(context.Background(), id)
	if err != nil || d.Status != hearth.RunPaused || d.Reason != record.InterruptedReason(id) {
		t.Fatalf("after the next host opened the directory: %s (%s), %v; want paused as interrupted", d.Status, d.Reason, err)
	}
	acked := outputsOf(t, h2, id)
	rh2, err := h2.ResumeRun(context.Background(), id, hearth.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rh2.Close()
	if info, err := waitRun(t, rh2); err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("resumed: %s, %v; want completed", info.Status, err)
	}
	outs := outputsOf(t, h2, id)
	if len(outs["a"]) != 1 || len(outs["b"]) != 1 || len(acked["a"]) != 1 || !outs["a"][0].Time.Equal(acked["a"][0].Time) {
		t.Errorf("outputs before resuming %+v, after %+v; want a's alone before, then one of each with a's unchanged", acked, outs)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// TestOversizeOutputFailsItsTask reproduces issue 14's seventh finding: an
// output over hearth.MaxOutput fails its task with a message naming the
// task, its size and the limit (no hex dump), the run's records agree with
// each other, and an output just under the limit is stored and read back.
func TestOversizeOutputFailsItsTask(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("big",
		[]string{"fits", fmt.Sprintf("bigout:%d", hearth.MaxOutput-100)},
		[]string{"huge", fmt.Sprintf("bigout:%d", hearth.MaxOutput+1), "fits"},
	)
	info, _ := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed {
		t.Fatalf("run = %+v, want failed", info)
	}
	d, err := h.Run(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	huge := d.TaskList[1]
	if huge.Status != hearth.TaskFailed || huge.Attempt != 1 ||
		!strings.Contains(huge.Error, "task huge returned an output of 16777217 bytes") || !strings.Contains(huge.Error, "16 MiB") || len(huge.Error) > 1000 {
		t.Errorf("huge = %+v; want failed once, naming its size and the limit, briefly", huge)
	}
	runs, err := h.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Status != d.Status || runs[0].Succeeded != 1 || runs[0].Failed != 1 {
		t.Errorf("runs list says %+v; show says %s", runs[0], d.Status)
	}
	if out := current(t, outputsOf(t, h, info.ID), "fits"); len(out.Output) != hearth.MaxOutput-100 {
		t.Errorf("the output under the limit came back with %d bytes", len(out.Output))
	}
}

// subscribe subscribes to every event of h, tool uses included.
func subscribe(h *Engine, buffer int) *subscription {
	return h.events.subscribe(hearth.EventFilter{ToolUses: true, Buffer: buffer})
}
