package member

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
)

// The sending side of forwarding: a task submitted here is placed over
// every host's sessions with the pool's one policy, and run where it
// belongs: here, or on another host, forwarded under its ID as
// idempotency key with cluster.Forward's retries. This file is the
// state machine's shell: it runs each step and reports what happened.

// Submit runs t, which the host admitted, where it belongs: placed over
// every host's sessions and forwarded, or here. Tasks the cluster does
// not place across hosts (Pool.AcrossHosts), and every task before the
// host joined, run here.
func (m *Member) Submit(ctx context.Context, p cluster.Pool, t hearth.Task) (*hearth.Outcome, error) {
	if m.membership() == nil || !p.AcrossHosts() {
		m.stats.decided("local")
		return m.execute(ctx, t, m.d.Now(), nil)
	}
	return m.submitAcross(ctx, p, t)
}

// execute runs t, submitted at start, here, after the attempts prior
// made elsewhere; the outcome's duration counts from start, so that it
// does not hide an attempt that was lost. A task
// whose plugin stopped it because this host did not answer in time
// (hearth.ErrUnvouched: a pause shorter than the lease, a starved
// machine) runs again here, once, on a new session: the host held its
// lease throughout, so no other host can have taken the task over, and
// failing it for a pause would lose work the cluster promises to finish
// (a forwarded task so stopped is placed again by the host that sent
// it, which is the same rule seen from there).
func (m *Member) execute(ctx context.Context, t hearth.Task, start time.Time, prior []hearth.Attempt) (*hearth.Outcome, error) {
	out, err := m.d.Execute(ctx, t)
	if !errors.Is(err, hearth.ErrUnvouched) || ctx.Err() != nil {
		if out != nil && len(prior) > 0 {
			out.Decision.Attempts = append(prior, hearth.Attempt{Host: m.cfg.HostID, Session: out.Session, Result: "completed"})
			out.Duration = m.d.Now().Sub(start)
		}
		return out, err
	}
	stopped := hearth.Attempt{Host: m.cfg.HostID, Result: "interrupted: " + err.Error()}
	var pe *hearth.PluginError
	if errors.As(err, &pe) {
		stopped.Session = pe.Session
	}
	m.log.Warn("a task's plugin stopped it while this host did not answer (paused or starved); running the task again here", "task", t.ID, "session", stopped.Session)
	prior = append(prior, stopped)
	out, err = m.d.Execute(ctx, t)
	if out != nil {
		out.Decision.Attempts = append(prior, hearth.Attempt{Host: m.cfg.HostID, Session: out.Session, Result: "completed"})
		out.Duration = m.d.Now().Sub(start)
	}
	return out, err
}

// Place says where a task would run now, as Submit would decide it:
// over every host's sessions once the host joined, and for a task the
// cluster places across hosts; over this host's otherwise.
func (m *Member) Place(p cluster.Pool, t hearth.Task) hearth.Decision {
	if m.membership() == nil || !p.AcrossHosts() {
		return p.Place(t)
	}
	_, d := m.placeAcross(p, t, cluster.NewForward("", 0))
	return d
}

// placeAcross decides t over every host's sessions, leaving out what f
// excludes: a remote session, a spawn on another host, or here (target
// empty).
func (m *Member) placeAcross(p cluster.Pool, t hearth.Task, f *cluster.Forward) (cluster.Target, hearth.Decision) {
	// The hosts this one cannot work with now (health.go) are left out
	// as the forward's own exclusions are.
	hosts := f.ExcludedHosts()
	if bad := m.health.hosts(); len(bad) > 0 {
		hosts = append(slices.Clip(hosts), bad...)
	}
	exclude := m.view.Excluded(t.Agent, hosts, f.Excluded())
	return m.view.Target(t.Agent, p.PlaceAcross(t, exclude, m.d.Now()), hosts)
}

// submitAcross runs cluster.Forward's steps for t.
func (m *Member) submitAcross(ctx context.Context, p cluster.Pool, t hearth.Task) (*hearth.Outcome, error) {
	f := cluster.NewForward(t.ID, 0)
	start := m.d.Now()
	// What the dashboard's cluster view lists while the forward runs.
	fl, end := m.sending.start(m.cfg.HostID, t, m.d.Now())
	defer end()
	var (
		res cluster.Result
		dec hearth.Decision
		// sent are the records of the hosts the task was sent to, as
		// they were then: a host that left is still asked, at its last
		// address, about a task it completed.
		sent = make(map[string]hearth.Member)
		// sends counts the task's sends to other hosts: its forward
		// spans' attempt numbers.
		sends int
	)
	for s := f.Start(); ; {
		m.sending.set(fl, func(fl *hearth.ForwardInFlight) { fl.State = forwardState(s.Kind, fl.State) })
		switch s.Kind {
		case cluster.StepPlace:
			var target cluster.Target
			target, dec = m.placeAcross(p, t, f)
			if len(sent) > 0 {
				m.stats.replaced()
			}
			if target.Host == "" {
				end() // not a forward: it runs here
				m.stats.decided("local")
				hist := f.History()
				if len(hist) == 0 {
					return m.execute(ctx, t, start, nil)
				}
				m.log.Info("forward gave up on other hosts; running the task here", "task", t.ID, "attempts", strings.Join(hist, "; "))
				// The attempts so far, without the "completed" that
				// Attempts adds for this one: execute adds its own.
				prior := f.Attempts(m.cfg.HostID, "")
				return m.execute(ctx, t, start, prior[:len(prior)-1])
			}
			if target.Session != "" {
				// This host's next decision sees the session as knowing
				// t's hints at once; the owner publishes them too.
				p.ExpectRemote(cluster.RemoteID(target.Host, target.Session), t)
			}
			m.d.Emit(hearth.Event{Kind: hearth.EventDecision, Agent: t.Agent, Task: t.ID, Session: target.Session,
				Message: "forwarded to host " + target.Host + ": " + dec.Reason, Decision: &dec})
			s = f.Placed(target)
		case cluster.StepSend:
			mm, ok := m.view.Member(s.Target.Host)
			if !ok {
				s = f.Sent(fmt.Errorf("%w: host %s left the cluster", cluster.ErrUnreachable, s.Target.Host))
				continue
			}
			sent[mm.ID] = mm
			m.sending.sent(fl, mm.ID, s.Target.Session, m.d.Now())
			sends++
			m.stats.inFlight.Add(1)
			r, err := m.tracedForward(ctx, mm, s.Target.Session, t, sends)
			m.stats.inFlight.Add(-1)
			m.stats.count(&m.stats.sent, sentOutcome(ctx, err))
			if err == nil {
				res = r
			}
			m.noteInterrupted(t, s.Target.Host, err)
			s = f.Sent(err)
		case cluster.StepAsk:
			mm, ok := m.view.Member(s.Target.Host)
			if !ok {
				// A host that left is asked only about a task it
				// completed (its result was too large for etcd): it may
				// answer when it is back, or from where it is now.
				if !f.CompletedOn(s.Target.Host) && m.left(s.Target.Host) {
					s = f.Left()
					continue
				}
				if mm, ok = sent[s.Target.Host]; !ok {
					s = f.Asked(cluster.TaskUnknown, fmt.Errorf("host %s is no member", s.Target.Host))
					continue
				}
			}
			st, r, err := m.peers.Status(ctx, mm, t.ID)
			err = ownTimeout(ctx, err)
			if err == nil && st == cluster.TaskDone {
				res = r
			}
			if st == cluster.TaskInterrupted {
				m.noteInterrupted(t, s.Target.Host, r.Err)
			}
			s = f.Asked(st, err)
		case cluster.StepWait:
			changed := m.view.Changed()
			tm := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
			case <-changed:
			case <-tm.C:
			}
			tm.Stop()
			s = f.Waited(!m.left(s.Target.Host))
		case cluster.StepCheck:
			c, found, err := m.completion(ctx, t.ID)
			err = ownTimeout(ctx, err)
			if found && !c.OnHost {
				res = c.Result
				m.log.Info("a forwarded task completed on a host that left or stopped answering; its result is taken from its completion", "task", t.ID, "host", c.Host, "lease", fmt.Sprintf("%x", c.Epoch))
			}
			if err != nil && ctx.Err() == nil {
				m.log.Warn("cannot read whether a forwarded task completed; it is not placed again until that is known", "task", t.ID, "host", s.Target.Host, "error", err)
			}
			s = f.Checked(c, found, err)
		case cluster.StepDone:
			if res.Err != nil {
				return nil, res.Err
			}
			out := res.Outcome
			if out == nil {
				return nil, fmt.Errorf("task %s: host %s returned no outcome", t.ID, s.Target.Host)
			}
			// The decision that counts is the receiving host's, on its
			// own sessions (hearth_decisions_total counts it there);
			// say where it was.
			m.stats.decided("forwarded")
			out.Decision.Host = s.Target.Host
			out.Decision.Reason = fmt.Sprintf("on host %s (%s): %s", s.Target.Host, dec.Reason, out.Decision.Reason)
			out.Decision.Attempts = f.Attempts(s.Target.Host, out.Session)
			// From this host's submission: the receiving host's figure
			// is its own attempt's, and would hide the ones lost before.
			out.Duration = m.d.Now().Sub(start)
			return out, nil
		case cluster.StepFail:
			m.d.Emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: t.Agent, Task: t.ID, Err: s.Err.Error(), Message: t.ID + " could not be placed on any host"})
			return nil, s.Err
		}
	}
}

// forwardState is what a forward in flight does at step k, as the
// cluster view says it; state before the step otherwise.
func forwardState(k cluster.StepKind, before string) string {
	switch k {
	case cluster.StepPlace:
		return hearth.ForwardPlacing
	case cluster.StepAsk:
		return hearth.ForwardAsking
	case cluster.StepWait:
		return hearth.ForwardWaiting
	case cluster.StepCheck:
		return hearth.ForwardChecking
	}
	return before
}

// ownTimeout turns the end of a call's own timeout (a host or etcd that
// did not answer in time) into an error that is not the context's: the
// state machine takes a context's error for its caller giving up, and
// the caller did not.
func ownTimeout(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return fmt.Errorf("no answer in time: %s", err.Error())
	}
	return err
}

// errLeft ends a forward's call to a host that left the cluster.
var errLeft = errors.New("the host left the cluster")

// forward sends t to mm, and gives up on the call once mm left the
// cluster: its lease expired, so it can no longer complete the task
// (its completion would be refused), and the task may go elsewhere once
// its completion is known not to be written. Without this, a call to a
// host that was paused (SIGSTOP, a VM pause) would wait for it to wake,
// however long that takes. The error is then neither the caller's
// context's nor a refusal: the outcome is unknown, and the state machine
// asks, then reads the completion.
func (m *Member) forward(ctx context.Context, mm hearth.Member, session string, t hearth.Task) (cluster.Result, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for {
			changed := m.view.Changed()
			if m.left(mm.ID) {
				cancel(errLeft)
				return
			}
			select {
			case <-cctx.Done():
				return
			case <-changed:
			}
		}
	}()
	r, err := m.peers.Forward(cctx, mm, session, t.ID, t)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errLeft) {
		return cluster.Result{}, fmt.Errorf("host %s: %w while it ran task %s", mm.ID, errLeft, t.ID)
	}
	return r, err
}

// left says whether host left the cluster, as far as this host can
// tell: it is not in the view while this host is. A host that lost its
// own lease has an empty view and cannot tell: the others are not taken
// for gone, since they may still complete what they run.
func (m *Member) left(host string) bool {
	if _, self := m.view.Member(m.cfg.HostID); !self {
		return false
	}
	_, ok := m.view.Member(host)
	return !ok
}

// completion reads whether task key completed on some host.
func (m *Member) completion(ctx context.Context, key string) (cluster.Completion, bool, error) {
	node := m.membership()
	if node == nil {
		return cluster.Completion{}, false, fmt.Errorf("host %s left the cluster", m.cfg.HostID)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.DialTimeout)
	defer cancel()
	return node.Completion(ctx, key)
}

// noteInterrupted says, when err says so, that the host the task was
// forwarded to stopped the task before it finished (it restarted, or
// lost its lease): the task is placed again without that host, and may
// have done part of its work there.
func (m *Member) noteInterrupted(t hearth.Task, target string, err error) {
	if errors.Is(err, cluster.ErrInterrupted) {
		m.log.Warn("a host stopped a forwarded task before it finished; placing the task again without it", "task", t.ID, "host", target, "error", err)
	}
}
