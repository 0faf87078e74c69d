package host

import (
	"context"
	"fmt"
	"time"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
)

// sweepEvery is how often the host applies runs' retention.
const sweepEvery = time.Minute

// recoverRuns pauses the runs the store says are running: this host just
// opened the store, so no host runs them; the one that did stopped
// without pausing them (kill -9, a crash, a power cut).
func (h *Host) recoverRuns() error {
	heads, err := h.store.Runs()
	if err != nil {
		return fmt.Errorf("host: read runs: %w", err)
	}
	for _, head := range heads {
		if head.GetStatus() != storepb.RunStatus_RUN_RUNNING {
			continue
		}
		reason := fmt.Sprintf("interrupted: its host stopped while it ran; resume it with hearth runs resume %s", head.GetId())
		if err := h.stopRun(context.Background(), head.GetId(), stopPause, RunPaused, reason); err != nil {
			// One damaged run must not keep the host, and every command
			// that starts one, from working: it stays as it is, and
			// resuming it reports what is wrong.
			h.logger.Error("cannot pause an interrupted run; it is left as it is", "run", head.GetId(), "error", err)
		}
	}
	return nil
}

// sweepRuns applies each run's retention (config.Retention): a run idle
// past pause_after is paused, past abandon_after flagged abandoned, and
// past delete_after deleted with its outputs and files. A run this host
// executes is idle only while none of its tasks runs.
func (h *Host) sweepRuns() {
	h.lastSweep = h.now()
	heads, err := h.store.Runs()
	if err != nil {
		h.logger.Warn("retention: cannot read runs", "error", err)
		return
	}
	for _, head := range heads {
		if err := h.sweepRun(head); err != nil {
			h.logger.Warn("retention failed", "run", head.GetId(), "error", err)
		}
	}
}

func (h *Host) sweepRun(head *storepb.Run) error {
	id := head.GetId()
	g, err := h.store.RunGraph(id)
	if err != nil {
		return err
	}
	now := h.now()
	idle := now.Sub(time.Unix(0, head.GetLastActivityUnixNano()))
	pauseAfter, abandonAfter, deleteAfter := time.Duration(g.GetPauseAfterNanos()), time.Duration(g.GetAbandonAfterNanos()), time.Duration(g.GetDeleteAfterNanos())
	status := runStatusOf(head.GetStatus())
	if r := h.activeRun(id); r != nil {
		r.mu.Lock()
		quiet := r.running == 0 && r.stop == nil
		idle = now.Sub(time.Unix(0, r.head.GetLastActivityUnixNano()))
		r.mu.Unlock()
		if quiet && pauseAfter > 0 && idle >= pauseAfter && r.loopRunning() {
			r.requestStop(stopPause, RunPaused, fmt.Sprintf("idle for %s: paused by retention (pause_after %s)", idle.Round(time.Second), pauseAfter), true)
		}
		return nil
	}
	switch {
	case deleteAfter > 0 && idle >= deleteAfter:
		return h.deleteRun(id, fmt.Sprintf("idle for %s: deleted by retention (delete_after %s)", idle.Round(time.Second), deleteAfter))
	case (status == RunCreated || status == RunRunning) && pauseAfter > 0 && idle >= pauseAfter:
		return h.stopRun(context.Background(), id, stopPause, RunPaused,
			fmt.Sprintf("idle for %s: paused by retention (pause_after %s)", idle.Round(time.Second), pauseAfter))
	case status == RunPaused && !head.GetAbandoned() && abandonAfter > 0 && idle >= abandonAfter:
		r, err := h.loadRun(id)
		if err != nil {
			return err
		}
		defer h.forgetRun(r)
		r.mu.Lock()
		r.head.Abandoned = true
		// The flag is queued before the event, so whoever sees the event
		// reads the flag.
		pend := r.saveLocked(store.RunWrite{})
		r.emit(Event{Kind: EventRunAbandoned, Message: fmt.Sprintf("run %s idle for %s: flagged abandoned (abandon_after %s); resume it, or it is deleted after delete_after",
			id, idle.Round(time.Second), abandonAfter)})
		r.mu.Unlock()
		return pend.Wait(context.Background())
	}
	return nil
}

// deleteRun deletes a stopped run's records, outputs and files, then
// records the deletion as the run's final event (the events stay, as the
// seed asks: the cleanup is logged).
func (h *Host) deleteRun(id, reason string) error {
	r, err := h.loadRun(id)
	if err != nil {
		return err
	}
	defer h.forgetRun(r)
	if s := runStatusOf(r.head.GetStatus()); s == RunRunning {
		return fmt.Errorf("run %s is running; it is not deleted", id)
	}
	orphans, err := h.store.DeleteRun(context.Background(), id)
	if err != nil {
		return err
	}
	if err := h.store.RemoveFiles(orphans); err != nil {
		h.logger.Warn("retention: cannot remove files", "run", id, "error", err)
	}
	e := Event{Kind: EventRunDeleted, Run: id, Time: h.now(),
		Message: fmt.Sprintf("run %s deleted with its outputs and %d file(s): %s", id, len(r.head.GetFiles()), reason)}
	return h.emit(e).Wait(context.Background())
}

// DeleteRun deletes a stopped run with its outputs, checkpoints and
// files (those no other run uses). Its events stay, ending with the
// deletion.
func (h *Host) DeleteRun(ctx context.Context, id string) error {
	if err := h.enter(); err != nil {
		return err
	}
	defer h.inflight.Done()
	id, err := h.ResolveRun(id)
	if err != nil {
		return err
	}
	if h.activeRun(id) != nil {
		return fmt.Errorf("run %s: %w in this host; cancel or pause it first", id, ErrRunActive)
	}
	return h.deleteRun(id, "deleted on request")
}
