package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/text"
)

// Run is one run this engine executes: the shell of its Schedule. It
// calls the schedule under its lock, writes what the schedule answers in
// the order it answers it (the store commits writes in the order they
// are queued), hands each write's events to be published once it is
// durable, waits for writes outside the lock, runs the attempts the
// schedule starts, and interrupts them when the run is paused or
// cancelled. Its exported methods are what the run's tasks reach
// (pool.Run): its state document, checkpoints, files and chunk marks
// (runstate.go).
type Run struct {
	m      *Runs
	id     string
	handle *Handle

	mu sync.Mutex
	s  *Schedule
	// ctx is the context of the run's attempts; cancelled, with the cause,
	// to interrupt them (pause, cancel).
	ctx      context.Context
	cancel   context.CancelCauseFunc
	wake     chan struct{}
	attempts sync.WaitGroup
	// storeErr is the first write of the run that failed: from then on
	// the run writes nothing but its status record (finish), paused for
	// storeReason.
	storeErr error
	// tr are the run's spans (trace.go).
	tr runTrace
}

// newRun builds the shell of a run, and its schedule, from its records.
func (m *Runs) newRun(head *record.Run, g *record.Graph, recs map[string]*record.Task, outs []*record.Output) (*Run, error) {
	s, err := NewSchedule(head, g, recs, outs, m.d.Guards)
	if err != nil {
		return nil, err
	}
	r := &Run{m: m, id: head.ID, s: s, wake: make(chan struct{}, 1),
		handle: &Handle{ID: head.ID, done: make(chan struct{})}}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	return r, nil
}

func (r *Run) now() time.Time { return r.m.now() }

// writeLocked does what eff says to do now: it queues its write, hands
// the write's events to be published once it is durable, and logs its
// warnings. It returns the write, nil when there is none. r.mu must be
// held, so that writes are queued in the order the schedule made them.
//
// After a failed write it queues nothing: what is in memory may be ahead
// of the disk by the failed write, and a later write would record tasks
// and checkpoints on top of one that is missing. The events of a write
// not queued are handed over all the same, with its refusal: subscribers
// are told that their write failed, never shown them.
func (r *Run) writeLocked(eff Effects) Pending {
	for _, w := range eff.Warnings {
		r.m.d.Logger.Error(w, "run", r.id)
	}
	if eff.Write == nil {
		return nil
	}
	var p Pending
	if r.storeErr != nil {
		p = refused{fmt.Errorf("run %s writes nothing more after a failed write: %w", r.id, r.storeErr)}
	} else {
		p = r.m.d.Store.SaveRun(r.id, *eff.Write)
	}
	if evs := eff.Write.Events; len(evs) > 0 {
		r.m.d.Publish(evs, p)
	}
	if c := eff.Write.Checkpoint; c != nil {
		p = r.traceCheckpointLocked(c, p)
	}
	return p
}

// wait waits for p, nil for nothing written.
func wait(ctx context.Context, p Pending) error {
	if p == nil {
		return nil
	}
	return p.Wait(ctx)
}

// signal wakes the run's loop.
func (r *Run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// requestStop asks the run to stop: no task starts any more, and, when
// interrupt is set, the running attempts are cancelled (they go back to
// pending). The first request wins, except that a cancel overrides.
func (r *Run) requestStop(kind StopKind, to hearth.RunStatus, reason string, interrupt bool) {
	r.mu.Lock()
	r.s.Stop(kind, to, reason)
	r.mu.Unlock()
	if interrupt {
		r.cancel(errors.New(reason))
	}
	r.signal()
}

// loop runs the run until it stops, then records how it stopped: the
// driving loop of the Schedule's doc.
func (r *Run) loop() {
	defer r.m.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.s.Stopping() {
			if r.s.Running() == 0 {
				r.mu.Unlock()
				r.attempts.Wait()
				r.finish()
				return
			}
			r.mu.Unlock()
			<-r.wake
			continue
		}
		eff := r.s.Next(r.now())
		pend := r.writeLocked(eff)
		stopping := r.s.Stopping()
		r.mu.Unlock()
		if err := wait(context.Background(), pend); err != nil {
			// The run stops, and its context is cancelled: the attempts
			// recorded as running still launch, and come back at once as
			// interrupted, so that the loop sees them end.
			r.storeFailed(err)
		}
		for _, a := range eff.Launch {
			r.attempts.Add(1)
			go r.attempt(a)
		}
		if len(eff.Launch) > 0 || stopping {
			continue // more may be ready, or the run is done
		}
		if !eff.WakeAt.IsZero() {
			// At most recheck at a time: the wall clock may reach
			// WakeAt sooner than the timer's monotonic one (Recheck).
			timer.Reset(min(max(eff.WakeAt.Sub(r.now()), time.Millisecond), r.m.recheck()))
			select {
			case <-r.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		<-r.wake
	}
}

// attempt runs one attempt of a task and records how it ended.
func (r *Run) attempt(a attempt) {
	defer r.attempts.Done()
	ctx, span := r.startAttempt(a)
	var out *hearth.Outcome
	done, err := r.m.d.Enter()
	if err == nil {
		out, err = r.m.d.Execute(ctx, a.task, r)
		done()
	}
	r.mu.Lock()
	interrupted := context.Cause(r.ctx)
	pend := r.writeLocked(r.s.Ended(r.now(), a, out, err, interrupted))
	ending := r.attemptEndedLocked(a, span, out, err, interrupted)
	r.mu.Unlock()
	if werr := wait(context.Background(), pend); werr != nil {
		r.storeFailed(werr)
	}
	endSpans(ending)
	r.signal()
}

// storeFailed stops a run whose write failed: what is in memory is no
// longer what is on disk, so nothing more may be done on it.
func (r *Run) storeFailed(err error) {
	// Nothing is wrong with the run's work: it pauses, with the reason,
	// and resumes from its last durable checkpoint once the store takes
	// writes again (a full disk freed, a directory writable again).
	r.mu.Lock()
	if r.storeErr != nil {
		r.mu.Unlock()
		return // the writes queued behind the first failure fail too
	}
	r.storeErr = err
	reason := r.storeReason()
	r.mu.Unlock()
	r.m.d.Logger.Error("run write failed; pausing the run", "run", r.id, "error", err)
	r.requestStop(StopEscalate, hearth.RunPaused, reason, true)
}

// storeReason is the reason the run pauses for after its failed write.
// r.mu must be held.
func (r *Run) storeReason() string {
	if errors.Is(r.storeErr, hearth.ErrNoSpace) {
		// Its message says what to free and to resume.
		return r.storeErr.Error() + " (hearth runs resume " + r.id + ")"
	}
	return "the store refused a write: " + r.storeErr.Error() + "; resume the run once the cause is fixed (hearth runs resume " + r.id + ")"
}

// finish records how the run stopped and releases its handle.
func (r *Run) finish() {
	r.mu.Lock()
	if r.storeErr != nil {
		r.finishAfterStoreFailure()
		return
	}
	eff, err := r.s.Finish(r.now())
	var pend Pending
	if err != nil {
		r.m.d.Logger.Error("cannot record how a run stopped", "run", r.id, "error", err)
	} else {
		pend = r.writeLocked(eff)
	}
	info := r.s.Info()
	r.mu.Unlock()
	if err := wait(context.Background(), pend); err != nil {
		// Its end is not on disk: the run pauses instead, recorded from
		// the reserve like after any failed write. (Its work is on disk;
		// resuming finds nothing left to run, and completes, or is
		// cancelled again.)
		r.m.d.Logger.Error("cannot record how a run stopped; pausing it", "run", r.id, "status", info.Status, "error", err)
		r.mu.Lock()
		r.storeErr = err
		r.finishAfterStoreFailure()
		return
	}
	r.release(info, nil)
}

// release ends the run's execution here and reports how it ended to its
// handle: err when its end could not be recorded, else a *hearth.RunError
// for a run that did not complete.
func (r *Run) release(info hearth.RunInfo, err error) {
	r.endTrace(info, err)
	r.cancel(nil)
	r.m.forget(r)
	r.handle.info = info
	switch {
	case err != nil:
		r.handle.err = err
	case info.Status != hearth.RunCompleted:
		r.handle.err = &hearth.RunError{Run: r.id, Status: info.Status, Reason: info.Reason}
	}
	// Done after the run's last events reach its subscribers: a watcher
	// that stops at Done has seen them all.
	r.m.d.AfterPublished(func() { close(r.handle.done) })
}

// finishAfterStoreFailure ends a run one of whose writes failed, with r.mu
// held (it unlocks it). The run pauses, whatever else had stopped it: its
// records on disk stop where the failed write left them, and what is in
// memory (tasks done since, the checkpoint counter) is not on disk and is
// dropped. Only the run's head is written, as a status record the store
// accepts from its free-space reserve (Store.SaveRunStatus; what it holds
// is Schedule.PauseRecord's), and the user reads why the run stopped from
// the run's record, not only from the command that ran it.
//
// When that write fails too (the disk is below the reserve, or the store
// takes no writes at all), the record keeps saying running: a read of the
// directory reports the run interrupted, and the next host to open it
// pauses it (Recover).
func (r *Run) finishAfterStoreFailure() {
	reason := r.storeReason()
	paused := r.s.WriteFailed(r.now(), reason)
	info := r.s.Info()
	info.Status, info.Reason = hearth.RunPaused, reason
	r.mu.Unlock()
	head, err := r.recordPause(reason)
	if head != nil {
		// What the disk holds, not what was done in memory since. (A
		// store that cannot even be read leaves the memory's account,
		// the only one there is.)
		info = head.Info(false)
	}
	if err == nil && info.Status == hearth.RunPaused {
		// The pause is on disk: now it may be said.
		for _, e := range paused {
			r.m.d.Emit(e)
		}
	}
	switch {
	case err != nil:
		r.m.d.Logger.Error("cannot record a run's pause; its record says running until a host opens the data directory again", "run", r.id, "error", err)
		err = fmt.Errorf("run %s paused (%s), but the pause could not be recorded: %w; its record reads running, interrupted, until a command that writes opens the data directory (hearth runs resume %s)", r.id, text.FirstLine(reason), err, r.id)
	case info.Status != hearth.RunPaused:
		// The disk had it stopped already, and keeps it so: what was
		// asked of it (a cancel) did not happen, and this is why.
		err = fmt.Errorf("run %s: %s; its record still says %s", r.id, text.FirstLine(reason), info.Status)
	}
	r.release(info, err)
}

// recordPause writes the run's durable head back as paused with reason,
// as a status record. It returns that head (nil when it cannot be read),
// and the error of writing it.
func (r *Run) recordPause(reason string) (*record.Run, error) {
	st := r.m.d.Store
	head, err := st.RunRecord(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's record: %w", err)
	}
	recs, err := st.RunTasks(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's tasks: %w", err)
	}
	seq, err := st.NewestCheckpoint(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's checkpoints: %w", err)
	}
	r.mu.Lock()
	head, write := r.s.PauseRecord(r.now(), head, recs, seq, reason)
	r.mu.Unlock()
	if !write {
		return head, nil
	}
	return head, st.SaveRunStatus(r.id, head).Wait(context.Background())
}

// loopRunning reports whether the run's loop executes it in this host,
// as opposed to an operation holding its records.
func (r *Run) loopRunning() bool {
	select {
	case <-r.handle.done:
		return false
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Status() == hearth.RunRunning
}
