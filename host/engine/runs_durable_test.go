package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hearth-dev/hearth"
)

// successes counts, by task name, the task.succeeded events of run id in
// the store's log (they are in their sessions' streams), the run.task
// events that move a task to succeeded (in the run's), and the
// task.started events.
func successes(t *testing.T, h *Engine, id string) (succeeded, toSucceeded, started map[string]int) {
	t.Helper()
	succeeded, toSucceeded, started = map[string]int{}, map[string]int{}, map[string]int{}
	sessions, err := h.store.SessionRecords()
	if err != nil {
		t.Fatal(err)
	}
	streams := []string{id}
	for _, s := range sessions {
		streams = append(streams, s.ID)
	}
	for _, stream := range streams {
		evs, err := h.store.Events(stream, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		countSuccesses(evs, id, succeeded, toSucceeded, started)
	}
	return succeeded, toSucceeded, started
}

// countSuccesses adds run id's successes and starts among evs to the
// counts, by task name.
func countSuccesses(evs []hearth.Event, id string, succeeded, toSucceeded, started map[string]int) {
	for _, e := range evs {
		if e.Run != id {
			continue
		}
		switch {
		case e.Kind == hearth.EventTaskSucceeded:
			succeeded[taskName(e.Task)]++
		case e.Kind == hearth.EventTaskStarted:
			started[taskName(e.Task)]++
		case e.Kind == hearth.EventRunTask && e.To == string(hearth.TaskSucceeded):
			toSucceeded[e.Task]++
		}
	}
}

// taskName is the pipeline task of a host task ID (run/name/round/attempt).
func taskName(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return id
	}
	return parts[len(parts)-3]
}

func sameCounts(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	for _, task := range []string{"a", "b", "c"} {
		if got[task] != want[task] {
			t.Errorf("%s: task %s %d times, want %d (all: %v)", what, task, got[task], want[task], got)
		}
	}
}

// TestNothingIsDoneBeforeItIsWritten is issue 24's fifth finding: a
// task's success was said (its task.succeeded event written and
// published) before the write that records it in the run; when that
// write failed, the log said succeeded, and resume ran the task again.
// Here the write that records task b's success fails (FailWrites: the
// write holding b's output). No success of b is in the log or on the
// event stream; a's, recorded before, is; the run pauses; resumed (by
// a host restarted on the directory: a store whose write failed takes
// none until it is reopened), it runs b and c once more and a not at
// all, and each task has one success in the log.
func TestNothingIsDoneBeforeItIsWritten(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	sub := subscribe(h, 4096)
	defer sub.Close()
	injected := errors.New("injected write failure")
	var fired atomic.Bool
	h.store.FailWrites(func(keys []string) error {
		for _, k := range keys {
			if strings.HasPrefix(k, "o/") && strings.Contains(k, "/b/") && fired.CompareAndSwap(false, true) {
				return injected
			}
		}
		return nil
	})
	p := pipe("durable", []string{"a", "echo:a"}, []string{"b", "echo:b", "a"}, []string{"c", "echo:c", "b"})
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, injected.Error()) {
		t.Fatalf("run = %s (%s), %v; want paused for the failed write", info.Status, info.Reason, err)
	}
	if !fired.Load() {
		t.Fatal("the write of b's success was never made")
	}
	id := info.ID

	// The stream: every event published so far.
	streamed := map[string]int{}
	streamedTo := map[string]int{}
	var evs []hearth.Event
	for drained := false; !drained; {
		select {
		case e := <-sub.Events():
			evs = append(evs, e)
		default:
			drained = true
		}
	}
	if sub.Dropped() > 0 {
		t.Fatalf("the subscription dropped %d events", sub.Dropped())
	}
	countSuccesses(evs, id, streamed, streamedTo, map[string]int{})
	want := map[string]int{"a": 1}
	sameCounts(t, "task.succeeded on the event stream", streamed, want)
	sameCounts(t, "run.task -> succeeded on the event stream", streamedTo, want)
	succeeded, toSucceeded, _ := successes(t, h, id)
	sameCounts(t, "task.succeeded in the log", succeeded, want)
	sameCounts(t, "run.task -> succeeded in the log", toSucceeded, want)

	// A store whose write failed takes no writes until it is reopened
	// (store.ErrWriteFailed): the host restarts on its directory.
	dir := h.store.Dir()
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h = newTestHostIn(t, dir, testAgent("scripted", "agent"))
	rh, err := h.ResumeRun(context.Background(), id, hearth.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	if info, err := waitRun(t, rh); err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("resumed: %s, %v; want completed", info.Status, err)
	}
	succeeded, toSucceeded, started := successes(t, h, id)
	once := map[string]int{"a": 1, "b": 1, "c": 1}
	sameCounts(t, "task.succeeded in the log after resume", succeeded, once)
	sameCounts(t, "run.task -> succeeded in the log after resume", toSucceeded, once)
	// b ran twice: its first success was never recorded. a, recorded,
	// did not run again.
	sameCounts(t, "task.started in the log", started, map[string]int{"a": 1, "b": 2, "c": 1})
}
