package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/store"
)

// The idempotency keys of forwarded tasks outlive the process: each is
// written to the store (store.ForwardRecord) when its task is accepted,
// before the task starts, and again with its result, before the result
// is returned to the forwarding host. What a restart finds:
//
//   - a key that finished: its result, returned to a retried forward
//     without running the task;
//   - a key that was accepted but not finished (the host died, or shut
//     down, or lost its cluster lease, while its task ran: see
//     stoppedForward): the task is not running here any more
//     (a plugin never outlives its host), it may have done part of its
//     work, and its result is lost. It is answered with
//     cluster.ErrInterrupted (cluster.TaskInterrupted for a status
//     query), and never run again here under that key. The forwarding
//     host places it elsewhere, as it does for a host that left the
//     cluster mid-task: that is the same event seen sooner. Forwarded
//     tasks are standalone tasks (a run's tasks stay with their run's
//     host), so no run record could tell more; and running the task
//     again here, silently, under a key the forwarding host may have
//     retried for exactly that reason, is what the key exists to
//     prevent;
//   - a record that cannot be read: the same answer, with the damage
//     named (hearth verify lists it); the key was accepted, so "never
//     seen" would be a lie that runs the task twice.
//
// Records are pruned with the same bounds as the keys in memory
// (keptResultAge, keptResults): the keys a new acceptance drops are
// deleted in the same write, and a restart drops those that expired
// while the host was down.

// keepForward writes rec (a task accepted, not finished) and deletes the
// records of drop, durably.
func (e *Engine) keepForward(cs *clusterState, rec store.ForwardRecord, drop []string) error {
	if cs.memoryOnly {
		return nil
	}
	return e.store.SaveForward(rec, drop).Wait(context.Background())
}

// keepResult writes the result r of the accepted task rec, durably. A
// result that cannot be stored is still returned (the task ran; the
// forwarding host, which gets it, has no reason to retry), and logged: a
// restart would answer ErrInterrupted for it.
func (e *Engine) keepResult(cs *clusterState, rec store.ForwardRecord, r Result, now time.Time) {
	if cs.memoryOnly {
		return
	}
	rec.Done, rec.Finished = true, now
	if r.Err != nil {
		rec.Error, rec.ErrorKind = r.Err.Error(), errorKindOf(r.Err)
	} else {
		rec.Outcome = r.Outcome
	}
	if err := e.store.SaveForward(rec, nil).Wait(context.Background()); err != nil {
		e.logger.Error("cannot store the result of a forwarded task; after a restart it would be answered as interrupted", "task", rec.Key, "error", err)
	}
}

// stoppedForward says whether the accepted task rec, which failed with
// err, was stopped by this host rather than failed: its lease was lost
// (the fence ended, and the cluster may place the task elsewhere) or it
// is shutting down (the grace period over, tasks are cancelled). Such a
// task is interrupted, not finished: the error wraps
// cluster.ErrInterrupted, its record stays as accepted, and a restart
// answers the same. The forwarding host places it elsewhere, which it
// would do anyway once this host's lease expired; the task is not
// running here any more. A task that failed of its own accord while the
// host was shutting down is answered so too: the safe side, placed
// again rather than failed for a reason that may be the shutdown's.
func (e *Engine) stoppedForward(cs *clusterState, fence context.Context, rec store.ForwardRecord, err error) error {
	why := ""
	select {
	case <-e.closing:
		why = "it is shutting down"
	default:
	}
	if fence.Err() != nil {
		why = "its cluster lease was lost"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: host %s stopped task %s from %s before it finished, because %s (%v); it may have done part of its work, and will not run here again",
		cluster.ErrInterrupted, cs.info.ID, rec.Key, rec.From, why, err)
}

// loadForwards reads the keys kept in the store into cs, once, and
// deletes the records of those past the idempotency window.
func (e *Engine) loadForwards(cs *clusterState) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.loaded || cs.memoryOnly {
		return nil
	}
	recs, err := e.store.ForwardRecords()
	if err != nil {
		return fmt.Errorf("read the forwarded tasks kept in the store: %w", err)
	}
	now := e.now()
	closed := make(chan struct{})
	close(closed)
	for _, rec := range recs {
		a := &acceptedTask{done: closed}
		switch {
		case rec.Err != nil:
			e.logger.Error("a forwarded task's record cannot be read; its key is answered as interrupted", "task", rec.Key, "error", rec.Err)
			a.err = fmt.Errorf("%w: host %s accepted task %s, but its record cannot be read (%v); the task will not run here again", cluster.ErrInterrupted, cs.info.ID, rec.Key, rec.Err)
			a.finished = now
		case !rec.Done:
			a.err = fmt.Errorf("%w: host %s accepted task %s from %s at %s and stopped before it finished; it may have done part of its work, and will not run here again", cluster.ErrInterrupted, cs.info.ID, rec.Key, rec.From, rec.Accepted.UTC().Format(time.RFC3339))
			a.finished = rec.Accepted
		default:
			a.res, a.finished = resultOf(rec), rec.Finished
		}
		cs.accepted[rec.Key] = a
		cs.finished = append(cs.finished, rec.Key)
	}
	// Pruning drops from the front: oldest first.
	slices.SortStableFunc(cs.finished, func(x, y string) int { return cs.accepted[x].finished.Compare(cs.accepted[y].finished) })
	cs.loaded = true
	if drop := e.pruneAcceptedLocked(cs); len(drop) > 0 {
		if err := e.store.DropForwards(drop).Wait(context.Background()); err != nil {
			// They are forgotten in memory all the same, and dropped
			// again at the next restart.
			e.logger.Warn("cannot delete expired records of forwarded tasks", "keys", len(drop), "error", err)
		}
	}
	return nil
}

// resultOf is the result a record keeps.
func resultOf(rec store.ForwardRecord) Result {
	if rec.Outcome != nil {
		return Result{Outcome: rec.Outcome}
	}
	return Result{Err: &keptError{msg: rec.Error, kind: errorKind(rec.ErrorKind)}}
}

// errorKinds are the sentinel errors a kept result's error may wrap, by
// the names the store keeps them under: what the forwarding host (and
// the daemon's clients behind it) tell failures apart by. The first that
// matches is kept, so a narrower error comes before one it also wraps
// (a missing program is also a plugin that did not start). The names
// are stored: never change one.
var errorKinds = []struct {
	name string
	err  error
}{
	{"closed", hearth.ErrClosed},
	{"unknown_agent", hearth.ErrUnknownAgent},
	{"unknown_session", hearth.ErrUnknownSession},
	{"rehydrate", hearth.ErrRehydrate},
	{"denied", hearth.ErrDenied},
	{"unchecked", hearth.ErrUnchecked},
	{"config", hearth.ErrConfig},
	{"external_agent", hearth.ErrExternalAgent},
	{"program_missing", hearth.ErrProgramMissing},
	{"checksum_mismatch", hearth.ErrChecksumMismatch},
	{"confinement", hearth.ErrConfinement},
	{"start_timeout", hearth.ErrStartTimeout},
	{"handshake", hearth.ErrHandshake},
	{"protocol_version", hearth.ErrProtocolVersion},
	{"plugin_start", hearth.ErrPluginStart},
	{"plugin_exited", hearth.ErrPluginExited},
	{"plugin_hung", hearth.ErrPluginHung},
	{"canceled", context.Canceled},
	{"deadline_exceeded", context.DeadlineExceeded},
}

// errorKindOf names the sentinel err wraps, "" for none.
func errorKindOf(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// errorKind is the sentinel of a kept name, nil for none or a name this
// hearth does not know (a newer one wrote it): the message stays.
func errorKind(name string) error {
	for _, k := range errorKinds {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// keptError is a kept result's error, read back from the store: its
// message as it was, wrapping the sentinel it wrapped.
type keptError struct {
	msg  string
	kind error
}

func (e *keptError) Error() string { return e.msg }
func (e *keptError) Unwrap() error { return e.kind }
