package member

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
)

// The receiving side of forwarding: the tasks other hosts forward here,
// run once per idempotency key. The rule is cluster.Accepted's (which
// key is known, running, done or interrupted, and which are forgotten);
// this file is its shell: the lock, the waiting, and the store.
//
// The keys outlive the process: each is written to the store
// (cluster.ForwardRecord) when its task is accepted, before the task
// starts, and again with its result, before the result is returned to
// the forwarding host. What a restart finds:
//
//   - a key that finished: its result, returned to a retried forward
//     without running the task;
//   - a key that was accepted but not finished (the host died, or shut
//     down, or lost its cluster lease, while its task ran: see
//     cluster.Stopped): the task is not running here any more (a plugin
//     never outlives its host), it may have done part of its work, and
//     its result is lost. It is answered with cluster.ErrInterrupted
//     (cluster.TaskInterrupted for a status query), and never run again
//     here under that key. The forwarding host places it elsewhere, as
//     it does for a host that left the cluster mid-task: that is the
//     same event seen sooner. Forwarded tasks are standalone tasks (a
//     run's tasks stay with their run's host), so no run record could
//     tell more; and running the task again here, silently, under a key
//     the forwarding host may have retried for exactly that reason, is
//     what the key exists to prevent;
//   - a record that cannot be read: the same answer, with the damage
//     named (hearth verify lists it); the key was accepted, so "never
//     seen" would be a lie that runs the task twice.
//
// Records are pruned with the same bounds as the keys in memory
// (cluster.DefaultKeptAge, cluster.DefaultKeptKeys): the keys a new
// acceptance forgets are deleted in the same write, and a restart drops
// those that expired while the host was down.

// flight is an accepted key whose task has not finished: done is closed
// when it has, or when its acceptance could not be kept, with res and
// err the answer.
type flight struct {
	done chan struct{}
	res  cluster.Result
	err  error
	// in is the forward as Forwards lists it.
	in hearth.ForwardInFlight
}

func (f *flight) wait(ctx context.Context) (cluster.Result, error) {
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return cluster.Result{}, ctx.Err()
	}
}

// RunForwarded runs a task another host placed on this one, under its
// idempotency key: a key accepted before is not run again (the call
// waits for, or returns, its kept result). session is the session the
// other host chose, empty for a new one; this host places the task over
// its own sessions, with its own guards. The task runs under the
// cluster fence (it stops if this host loses its lease), not under ctx:
// a caller that lost its connection finds it by its key. Errors
// wrapping cluster.ErrRefused mean the task did not start here. The key
// is durable before the task starts, and its completion (in etcd) before
// its result is returned, so that the promise holds across a restart: a
// key whose task a restart interrupted is answered with an error
// wrapping cluster.ErrInterrupted, never run again (the forwarding host
// then finds the result, if there was one, in the completion). The
// result is kept in the store too, just after it is returned, for the
// retries that come within the idempotency window.
func (m *Member) RunForwarded(ctx context.Context, from, key, session string, t hearth.Task) (res cluster.Result, err error) {
	repeated := false
	defer func() { m.stats.count(&m.stats.received, receivedOutcome(repeated, res, err)) }()
	node := m.membership()
	if node == nil {
		return cluster.Result{}, fmt.Errorf("%w: host is not in a cluster (no cluster block)", cluster.ErrRefused)
	}
	if key == "" {
		return cluster.Result{}, fmt.Errorf("%w: a forwarded task needs an idempotency key", cluster.ErrRefused)
	}
	m.mu.Lock()
	st, r := m.keys.Status(key)
	repeated = st != cluster.TaskUnknown
	switch st {
	case cluster.TaskDone:
		m.mu.Unlock()
		return r, nil
	case cluster.TaskInterrupted:
		m.mu.Unlock()
		return cluster.Result{}, r.Err
	case cluster.TaskRunning:
		f := m.flights[key]
		m.mu.Unlock()
		return f.wait(ctx)
	}
	if err := m.d.Runnable(t.Agent); err != nil {
		m.mu.Unlock()
		return cluster.Result{}, fmt.Errorf("%w: %v", cluster.ErrRefused, err)
	}
	if why := m.draining(); why != "" {
		m.mu.Unlock()
		return cluster.Result{}, fmt.Errorf("%w: host %s is draining (%s): it takes no new work", cluster.ErrRefused, m.cfg.HostID, why)
	}
	fence := node.Fence()
	if fence.Err() != nil {
		m.mu.Unlock()
		return cluster.Result{}, fmt.Errorf("%w: host %s is not registered in the cluster now (its lease is lost)", cluster.ErrRefused, m.cfg.HostID)
	}
	done, err := m.d.Enter()
	if err != nil {
		m.mu.Unlock()
		return cluster.Result{}, fmt.Errorf("%w: %v", cluster.ErrRefused, err)
	}
	now := m.d.Now()
	forgot := m.keys.Accept(key, now)
	f := &flight{done: make(chan struct{}), in: hearth.ForwardInFlight{Task: key, Agent: t.Agent, From: from, To: m.cfg.HostID,
		Session: session, Since: now, Started: now, Attempt: 1, State: hearth.ForwardRunning}}
	m.flights[key] = f
	rec := cluster.ForwardRecord{Key: key, From: from, Agent: t.Agent, Accepted: now}
	t.ID = key
	// The acceptance is durable before the task starts, so that a
	// restart never forgets a key whose task may have run; written
	// outside m.mu, so that concurrent forwards share an fsync (a
	// forward of the same key meanwhile waits on f.done).
	m.mu.Unlock()
	if err := m.keepAccepted(rec, forgot); err != nil {
		m.mu.Lock()
		m.keys.Forget(key)
		delete(m.flights, key)
		m.mu.Unlock()
		f.err = fmt.Errorf("%w: host %s cannot store that it accepted task %s: %v", cluster.ErrRefused, m.cfg.HostID, key, err)
		close(f.done)
		done()
		return cluster.Result{}, f.err
	}
	// The task runs under the fence, in the forwarding host's trace.
	run := trace.ContextWithSpanContext(fence, trace.SpanContextFromContext(ctx))
	go m.runAccepted(node, run, done, rec, session, t, f)
	return f.wait(ctx)
}

// runAccepted runs the accepted task t under fence and keeps what became
// of it: the task completes when its completion is written under the
// lease (node.Complete), and only then is its result kept and returned.
func (m *Member) runAccepted(node Membership, fence context.Context, done func(), rec cluster.ForwardRecord, session string, t hearth.Task, f *flight) {
	defer done()
	var r cluster.Result
	if err := m.d.Admit(t); err != nil {
		r.Err = err
	} else {
		m.log.Debug("running a forwarded task", "task", rec.Key, "from", rec.From, "session", session)
		r.Outcome, r.Err = m.executeForwarded(fence, rec.From, session, t)
	}
	now := m.d.Now()
	var stopped error
	if r.Err != nil {
		shuttingDown := false
		select {
		case <-m.d.Closing:
			shuttingDown = true
		default:
		}
		// Held, not fence.Err: a host that wakes from a pause longer than
		// its lease finds the task failed (its plugin stopped it) before
		// the keep-alive noticed the lease is gone.
		_, lost := cluster.Held(fence, time.Now())
		stopped = cluster.Stopped(m.cfg.HostID, rec.Key, rec.From, shuttingDown, lost != nil, r.Err)
	}
	if stopped == nil {
		if err := m.complete(node, fence, rec, r, now); err != nil {
			// Its result is stale: the lease it was produced under is
			// lost, and the forwarding host may place it elsewhere.
			m.log.Warn("a forwarded task's result is refused: the lease it ran under is lost", "task", rec.Key, "from", rec.From, "error", err)
			stopped = cluster.Stopped(m.cfg.HostID, rec.Key, rec.From, false, true, err)
		}
	}
	m.mu.Lock()
	if stopped != nil {
		m.keys.Interrupt(rec.Key, stopped, now)
		f.err = stopped
	} else {
		m.keys.Finish(rec.Key, r, now)
		f.res = r
	}
	delete(m.flights, rec.Key)
	m.mu.Unlock()
	close(f.done)
	if stopped == nil {
		// After the answer, not before: the completion in etcd, written
		// first, is the durable result a retry needs. A restart before
		// this write is on disk answers the key as interrupted (its
		// acceptance is on disk), and the forwarding host then reads
		// the completion and delivers its result (cluster.Forwarder's
		// check), never running the task again. One fsync less on the
		// forward's critical path (issue 26: a forward cost 1.7-2.1x a
		// local task). The engine's Close waits for it (done, deferred).
		m.keepResult(rec, r, now)
	}
}

// complete writes the completion of the accepted task rec with result r
// (Membership.Complete), retrying a write whose outcome is unknown
// (etcd slow or away) for as long as the lease the task ran under is
// held. An error wraps cluster.ErrFenced: the lease is lost, and the
// result with it.
func (m *Member) complete(node Membership, fence context.Context, rec cluster.ForwardRecord, r cluster.Result, now time.Time) error {
	c := cluster.Completion{Key: rec.Key, From: rec.From, Finished: now, Result: r}
	for b := 50 * time.Millisecond; ; b = min(2*b, time.Second) {
		// Each attempt ends with the lease: a write sent after that
		// would be refused.
		ctx, cancel := context.WithTimeout(fence, m.cfg.DialTimeout)
		err := node.Complete(ctx, fence, c)
		cancel()
		if err == nil || errors.Is(err, cluster.ErrFenced) {
			return err
		}
		if _, herr := cluster.Held(fence, time.Now()); herr != nil {
			// The last attempt's outcome is unknown: the forwarding host
			// reads the completion, if it went through, before it places
			// the task elsewhere.
			return fmt.Errorf("%w (the last attempt to write the completion: %v)", herr, err)
		}
		m.log.Debug("writing a forwarded task's completion failed; retrying while the lease holds", "task", rec.Key, "error", err)
		t := time.NewTimer(b)
		select {
		case <-fence.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// ForwardedStatus says what this host knows of a forwarded task's key.
func (m *Member) ForwardedStatus(key string) (cluster.TaskStatus, cluster.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys.Status(key)
}

// keepAccepted writes rec (a task accepted, not finished) and deletes
// the records of drop, durably.
func (m *Member) keepAccepted(rec cluster.ForwardRecord, drop []string) error {
	if m.memoryOnly {
		return nil
	}
	return m.d.Keys.SaveForward(rec, drop).Wait(context.Background())
}

// keepResult writes the result r of the accepted task rec, durably. A
// result that cannot be stored is still returned (the task ran; the
// forwarding host, which gets it, has no reason to retry), and logged: a
// restart would answer ErrInterrupted for it.
func (m *Member) keepResult(rec cluster.ForwardRecord, r cluster.Result, now time.Time) {
	if m.memoryOnly {
		return
	}
	rec.Done, rec.Finished = true, now
	if r.Err != nil {
		rec.Error, rec.ErrorKind = r.Err.Error(), cluster.ErrorKind(r.Err)
	} else {
		rec.Outcome = r.Outcome
	}
	if err := m.d.Keys.SaveForward(rec, nil).Wait(context.Background()); err != nil {
		m.log.Error("cannot store the result of a forwarded task; after a restart it would be answered as interrupted", "task", rec.Key, "error", err)
	}
}

// loadKeys reads the keys kept in the store, once, and deletes the
// records of those past the idempotency window.
func (m *Member) loadKeys() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loaded || m.memoryOnly {
		return nil
	}
	recs, err := m.d.Keys.ForwardRecords()
	if err != nil {
		return fmt.Errorf("read the forwarded tasks kept in the store: %w", err)
	}
	now := m.d.Now()
	for _, rec := range recs {
		switch {
		case rec.Err != nil:
			m.log.Error("a forwarded task's record cannot be read; its key is answered as interrupted", "task", rec.Key, "error", rec.Err)
			m.keys.Restore(rec.Key, cluster.TaskInterrupted, cluster.Result{Err: cluster.Damaged(m.cfg.HostID, rec.Key, rec.Err)}, now)
		case !rec.Done:
			m.keys.Restore(rec.Key, cluster.TaskInterrupted, cluster.Result{Err: cluster.InterruptedByRestart(m.cfg.HostID, rec.Key, rec.From, rec.Accepted)}, rec.Accepted)
		default:
			m.keys.Restore(rec.Key, cluster.TaskDone, resultOf(rec), rec.Finished)
		}
	}
	m.loaded = true
	if drop := m.keys.Restored(now); len(drop) > 0 {
		if err := m.d.Keys.DropForwards(drop).Wait(context.Background()); err != nil {
			// They are forgotten in memory all the same, and dropped
			// again at the next restart.
			m.log.Warn("cannot delete expired records of forwarded tasks", "keys", len(drop), "error", err)
		}
	}
	return nil
}

// resultOf is the result a record keeps.
func resultOf(rec cluster.ForwardRecord) cluster.Result {
	if rec.Outcome != nil {
		return cluster.Result{Outcome: rec.Outcome}
	}
	return cluster.Result{Err: cluster.KeptError(rec.Error, rec.ErrorKind)}
}
