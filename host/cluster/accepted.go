package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
)

// Result is a task's result as the host that ran it returns it: its
// outcome, or the error it failed with there.
type Result struct {
	Outcome *hearth.Outcome
	Err     error
}

// The bounds of the idempotency keys a host keeps the results of: a
// forward is retried within a task's deadline, so an hour is ample. The
// same bounds hold for their records in the store, across restarts.
const (
	DefaultKeptKeys = 10000
	DefaultKeptAge  = time.Hour
)

// Accepted is the receiving side of forwarding: what this host knows of
// each idempotency key it accepted, the rule that a key is run at most
// once, and which keys it may forget. It does no I/O and takes no locks:
// host/cluster/member keeps one under its lock, writes each acceptance to
// the store before the task starts and each result just after it answers
// (the completion in etcd, written before the answer, stands for a result
// a restart lost), and reads them back at start ([Accepted.Restore]).
//
// A key is unknown until accepted; accepted, it is running until its task
// finishes (done, with the task's result, whatever it was) or is
// stopped by this host before it finished (interrupted: a shutdown, a
// lost lease, or a restart that found it unfinished). A key is never
// accepted twice: a forward of a key it knows is answered from the
// table. Only an acceptance that could not be kept (the store refused
// the write) is forgotten at once, so that the task, which never
// started, may go elsewhere.
//
// A finished key is forgotten once it is older than maxAge or when the
// table holds more than limit keys, oldest first; forgotten, it is
// unknown again (docs/cluster.md: the idempotency window).
type Accepted struct {
	limit  int
	maxAge time.Duration
	keys   map[string]*acceptedKey
	// finished are the finished and interrupted keys in the order they
	// finished, oldest first: what pruning drops first.
	finished []string
}

type acceptedKey struct {
	status   TaskStatus // TaskRunning, TaskDone or TaskInterrupted
	result   Result     // TaskDone: the task's; TaskInterrupted: Err says why
	finished time.Time
}

// NewAccepted returns an empty table keeping at most limit keys, each at
// most maxAge after its task finished; 0 means DefaultKeptKeys and
// DefaultKeptAge.
func NewAccepted(limit int, maxAge time.Duration) *Accepted {
	if limit <= 0 {
		limit = DefaultKeptKeys
	}
	if maxAge <= 0 {
		maxAge = DefaultKeptAge
	}
	return &Accepted{limit: limit, maxAge: maxAge, keys: make(map[string]*acceptedKey)}
}

// Status says what the table knows of key: TaskUnknown, TaskRunning,
// TaskDone with the task's result, or TaskInterrupted with Result.Err
// saying why (it wraps ErrInterrupted).
func (a *Accepted) Status(key string) (TaskStatus, Result) {
	k := a.keys[key]
	switch {
	case k == nil:
		return TaskUnknown, Result{}
	case k.status == TaskRunning:
		return TaskRunning, Result{}
	}
	return k.status, k.result
}

// Len counts the keys the table holds, running ones included.
func (a *Accepted) Len() int { return len(a.keys) }

// Accept records that this host accepted key and runs its task. It
// returns the keys that pruning forgot, at now, to delete from the store
// in the same write as the acceptance. A key the table holds is answered
// from Status, never accepted again: Accept then changes nothing and
// forgets nothing.
func (a *Accepted) Accept(key string, now time.Time) (forgot []string) {
	if _, ok := a.keys[key]; ok {
		return nil
	}
	a.keys[key] = &acceptedKey{status: TaskRunning}
	return a.prune(now)
}

// Forget drops a running key whose acceptance could not be kept: its
// task never started, and the key is unknown again.
func (a *Accepted) Forget(key string) {
	if k := a.keys[key]; k != nil && k.status == TaskRunning {
		delete(a.keys, key)
	}
}

// Finish records that key's task finished at now with r, whatever r is:
// a task that failed of its own accord is done, its error its result.
func (a *Accepted) Finish(key string, r Result, now time.Time) {
	a.end(key, TaskDone, r, now)
}

// Interrupt records that this host stopped key's task at now before it
// finished; err says why and wraps ErrInterrupted (see [Stopped]).
func (a *Accepted) Interrupt(key string, err error, now time.Time) {
	a.end(key, TaskInterrupted, Result{Err: err}, now)
}

func (a *Accepted) end(key string, st TaskStatus, r Result, now time.Time) {
	k := a.keys[key]
	if k == nil || k.status != TaskRunning {
		return
	}
	k.status, k.result, k.finished = st, r, now
	a.finished = append(a.finished, key)
}

// Restore puts back a key read from the store at start: done with its
// result, or interrupted (see [InterruptedByRestart] and [Damaged]),
// finished at finished. Call Restored when every key is back.
func (a *Accepted) Restore(key string, st TaskStatus, r Result, finished time.Time) {
	if st != TaskDone && st != TaskInterrupted {
		st, r = TaskInterrupted, Result{Err: fmt.Errorf("%w: key %s restored as %v", ErrInterrupted, key, st)}
	}
	if _, ok := a.keys[key]; !ok {
		a.finished = append(a.finished, key)
	}
	a.keys[key] = &acceptedKey{status: st, result: r, finished: finished}
}

// Restored orders the restored keys by when they finished and returns
// those pruning forgot at now (expired while the host was down, or the
// oldest beyond the limit), to delete from the store.
func (a *Accepted) Restored(now time.Time) (forgot []string) {
	slices.SortStableFunc(a.finished, func(x, y string) int { return a.keys[x].finished.Compare(a.keys[y].finished) })
	return a.prune(now)
}

// prune forgets finished keys older than maxAge, and the oldest beyond
// limit. Tasks finish in time order, so both are at the front of
// a.finished.
func (a *Accepted) prune(now time.Time) []string {
	n := 0
	for _, k := range a.finished {
		if now.Sub(a.keys[k].finished) <= a.maxAge && len(a.keys) <= a.limit {
			break
		}
		delete(a.keys, k)
		n++
	}
	forgot := slices.Clone(a.finished[:n])
	a.finished = slices.Delete(a.finished, 0, n)
	return forgot
}

// Stopped says whether the accepted task key, forwarded by from, which
// failed with err, was stopped by host rather than failed: it was
// shutting down (the grace period over, tasks are cancelled) or its
// lease was lost (its fence ended, and the cluster may place the task
// elsewhere), or its plugin stopped the task because the host did not
// answer it in time (err wraps hearth.ErrUnvouched: a pause shorter than
// the lease, or a starved machine). Such a task is interrupted, not finished: the error wraps
// ErrInterrupted, and the forwarding host places it elsewhere, which it
// would do anyway once this host's lease expired; the task is not
// running here any more. A task that failed of its own accord while the
// host was shutting down is answered so too: the safe side, placed again
// rather than failed for a reason that may be the shutdown's. Stopped
// returns nil for a task that failed on its own.
func Stopped(host, key, from string, shuttingDown, leaseLost bool, err error) error {
	why := ""
	if shuttingDown {
		why = "it is shutting down"
	}
	if errors.Is(err, hearth.ErrUnvouched) {
		why = "it did not answer its plugin in time (paused or starved), and the plugin stopped the task"
	}
	if leaseLost {
		why = "its cluster lease was lost"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: host %s stopped task %s from %s before it finished, because %s (%v); it may have done part of its work, and will not run here again",
		ErrInterrupted, host, key, from, why, err)
}

// InterruptedByRestart is the answer for key, which host accepted from
// from at accepted and found unfinished when it started again: the task
// is not running (a plugin never outlives its host), may have done part
// of its work, and will not run here again.
func InterruptedByRestart(host, key, from string, accepted time.Time) error {
	return fmt.Errorf("%w: host %s accepted task %s from %s at %s and stopped before it finished; it may have done part of its work, and will not run here again",
		ErrInterrupted, host, key, from, accepted.UTC().Format(time.RFC3339))
}

// Damaged is the answer for key, whose record host cannot read (damage
// names the damage as the store does): the key was accepted, so "never
// seen" would be a lie that runs the task twice; it is interrupted.
func Damaged(host, key string, damage error) error {
	return fmt.Errorf("%w: host %s accepted task %s, but its record cannot be read (%v); the task will not run here again", ErrInterrupted, host, key, damage)
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

// ErrorKind names the sentinel error err wraps, as a kept result's record
// stores it; "" for none.
func ErrorKind(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return ""
}

// KeptError is a kept result's error read back from its record: its
// message as it was, wrapping the sentinel kind names. A kind this hearth
// does not know (a newer one wrote it) keeps the message alone.
func KeptError(msg, kind string) error {
	e := &keptError{msg: msg}
	for _, k := range errorKinds {
		if k.name == kind {
			e.kind = k.err
			break
		}
	}
	return e
}

// keptError is a kept result's error: its message, wrapping the sentinel
// it wrapped.
type keptError struct {
	msg  string
	kind error
}

func (e *keptError) Error() string { return e.msg }
func (e *keptError) Unwrap() error { return e.kind }
