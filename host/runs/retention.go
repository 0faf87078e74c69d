package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// sweepEvery is how often the host applies runs' retention.
const sweepEvery = time.Minute

// Recover pauses the runs the store says are running: this engine just
// opened the store, so no host runs them; the one that did stopped
// without pausing them (kill -9, a crash, a power cut).
func (m *Runs) Recover() error {
	heads, err := m.d.Store.RunRecords()
	if err != nil {
		return fmt.Errorf("host: read runs: %w", err)
	}
	for _, head := range heads {
		if head.Status != hearth.RunRunning {
			continue
		}
		reason := record.InterruptedReason(head.ID)
		if err := m.stopRun(context.Background(), head.ID, StopPause, hearth.RunPaused, reason); err != nil {
			// One damaged run must not keep the host, and every command
			// that starts one, from working: it stays as it is, and
			// resuming it reports what is wrong.
			m.d.Logger.Error("cannot pause an interrupted run; it is left as it is", "run", head.ID, "error", err)
		}
	}
	return nil
}

// SweepIfDue applies retention when it last ran more than sweepEvery
// ago.
func (m *Runs) SweepIfDue(now time.Time) {
	m.sweepMu.Lock()
	due := now.Sub(m.lastSweep) >= sweepEvery
	m.sweepMu.Unlock()
	if due {
		m.Sweep()
	}
}

// Sweep applies each run's retention (hearth.Retention): a run idle past
// pause_after is paused, past abandon_after flagged abandoned, and past
// delete_after deleted with its outputs and files. A run this engine
// executes is idle only while none of its tasks runs, and not while it
// waits for a stage to open: its idle time counts from when the stage
// may open (Schedule.IdleSince), so it is neither paused nor, paused
// never, abandoned or deleted for the wait the pipeline asked for.
func (m *Runs) Sweep() {
	m.sweepMu.Lock()
	m.lastSweep = m.now()
	m.sweepMu.Unlock()
	heads, err := m.d.Store.RunRecords()
	if err != nil {
		m.d.Logger.Warn("retention: cannot read runs", "error", err)
		return
	}
	for _, head := range heads {
		if err := m.sweepRun(head); err != nil {
			m.d.Logger.Warn("retention failed", "run", head.ID, "error", err)
		}
	}
}

func (m *Runs) sweepRun(head *record.Run) error {
	id := head.ID
	g, err := m.d.Store.RunGraph(id)
	if err != nil {
		return err
	}
	now := m.now()
	idle := now.Sub(head.LastActivity)
	ret := g.Pipeline.Retention
	pauseAfter, abandonAfter, deleteAfter := ret.PauseAfter, ret.AbandonAfter, ret.DeleteAfter
	status := head.Status
	if r := m.active(id); r != nil {
		r.mu.Lock()
		quiet := r.s.Quiet()
		idle = now.Sub(r.s.IdleSince())
		r.mu.Unlock()
		if quiet && pauseAfter > 0 && idle >= pauseAfter && r.loopRunning() {
			r.requestStop(StopPause, hearth.RunPaused, fmt.Sprintf("idle for %s: paused by retention (pause_after %s)", idle.Round(time.Second), pauseAfter), true)
		}
		return nil
	}
	switch {
	case deleteAfter > 0 && idle >= deleteAfter:
		return m.deleteRun(id, fmt.Sprintf("idle for %s: deleted by retention (delete_after %s)", idle.Round(time.Second), deleteAfter))
	case (status == hearth.RunCreated || status == hearth.RunRunning) && pauseAfter > 0 && idle >= pauseAfter:
		return m.stopRun(context.Background(), id, StopPause, hearth.RunPaused,
			fmt.Sprintf("idle for %s: paused by retention (pause_after %s)", idle.Round(time.Second), pauseAfter))
	case status == hearth.RunPaused && !head.Abandoned && abandonAfter > 0 && idle >= abandonAfter:
		r, err := m.load(id)
		if err != nil {
			return err
		}
		defer m.forget(r)
		r.mu.Lock()
		pend := r.writeLocked(r.s.Abandoned(now, fmt.Sprintf("run %s idle for %s: flagged abandoned (abandon_after %s); resume it, or it is deleted after delete_after",
			id, idle.Round(time.Second), abandonAfter)))
		r.mu.Unlock()
		return wait(context.Background(), pend)
	}
	return nil
}

// deleteRun deletes a stopped run's records, outputs and files, then
// records the deletion as the run's final event (the events stay, as the
// seed asks: the cleanup is logged).
func (m *Runs) deleteRun(id, reason string) error {
	r, err := m.load(id)
	if err != nil {
		return err
	}
	defer m.forget(r)
	if r.s.Status() == hearth.RunRunning {
		return fmt.Errorf("run %s is running; it is not deleted", id)
	}
	orphans, err := m.d.Store.DeleteRun(context.Background(), id)
	if err != nil {
		return err
	}
	if err := m.d.Store.RemoveFiles(orphans); err != nil {
		m.d.Logger.Warn("retention: cannot remove files", "run", id, "error", err)
	}
	e := hearth.Event{Kind: hearth.EventRunDeleted, Run: id, Time: m.now(),
		Message: fmt.Sprintf("run %s deleted with its outputs and %d file(s): %s", id, len(r.s.Files()), reason)}
	return m.d.Emit(e).Wait(context.Background())
}

// DeleteRun deletes a stopped run with its outputs, checkpoints and
// files (those no other run uses). Its events stay, ending with the
// deletion.
func (m *Runs) Delete(ctx context.Context, id string) error {
	done, err := m.d.Enter()
	if err != nil {
		return err
	}
	defer done()
	id, err = m.d.Store.ResolveRunID(id)
	if err != nil {
		return err
	}
	if m.active(id) != nil {
		return fmt.Errorf("run %s: %w in this host; cancel or pause it first", id, hearth.ErrRunActive)
	}
	return m.deleteRun(id, "deleted on request")
}
