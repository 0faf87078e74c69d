package member

import (
	"context"
	"errors"
	"fmt"
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
func (m *Member) Submit(ctx context.Context, p Pool, t hearth.Task) (*hearth.Outcome, error) {
	if m.membership() == nil || !p.AcrossHosts() {
		return m.d.Execute(ctx, t)
	}
	return m.submitAcross(ctx, p, t)
}

// Place says where a task would run now, as Submit would decide it:
// over every host's sessions once the host joined, and for a task the
// cluster places across hosts; over this host's otherwise.
func (m *Member) Place(p Pool, t hearth.Task) hearth.Decision {
	if m.membership() == nil || !p.AcrossHosts() {
		return p.Place(t)
	}
	_, d := m.placeAcross(p, t, cluster.NewForward("", 0))
	return d
}

// placeAcross decides t over every host's sessions, leaving out what f
// excludes: a remote session, a spawn on another host, or here (target
// empty).
func (m *Member) placeAcross(p Pool, t hearth.Task, f *cluster.Forward) (cluster.Target, hearth.Decision) {
	exclude := m.view.Excluded(t.Agent, f.ExcludedHosts(), f.Excluded())
	return m.view.Target(t.Agent, p.PlaceAcross(t, exclude, m.d.Now()), f.ExcludedHosts())
}

// submitAcross runs cluster.Forward's steps for t.
func (m *Member) submitAcross(ctx context.Context, p Pool, t hearth.Task) (*hearth.Outcome, error) {
	f := cluster.NewForward(t.ID, 0)
	var (
		res cluster.Result
		dec hearth.Decision
	)
	for s := f.Start(); ; {
		switch s.Kind {
		case cluster.StepPlace:
			var target cluster.Target
			target, dec = m.placeAcross(p, t, f)
			if target.Host == "" {
				if hist := f.History(); len(hist) > 0 {
					m.log.Info("forward gave up on other hosts; running the task here", "task", t.ID, "attempts", strings.Join(hist, "; "))
				}
				return m.d.Execute(ctx, t)
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
			r, err := m.peers.Forward(ctx, mm, s.Target.Session, t.ID, t)
			if err == nil {
				res = r
			}
			m.noteInterrupted(t, s.Target.Host, err)
			s = f.Sent(err)
		case cluster.StepAsk:
			mm, ok := m.view.Member(s.Target.Host)
			if !ok {
				s = f.Asked(cluster.TaskUnknown, fmt.Errorf("host %s is no member", s.Target.Host))
				continue
			}
			st, r, err := m.peers.Status(ctx, mm, t.ID)
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
			_, member := m.view.Member(s.Target.Host)
			s = f.Waited(member)
		case cluster.StepDone:
			if res.Err != nil {
				return nil, res.Err
			}
			out := res.Outcome
			if out == nil {
				return nil, fmt.Errorf("task %s: host %s returned no outcome", t.ID, s.Target.Host)
			}
			// The decision that counts is the receiving host's, on its
			// own sessions; say where it was.
			out.Decision.Host = s.Target.Host
			out.Decision.Reason = fmt.Sprintf("on host %s (%s): %s", s.Target.Host, dec.Reason, out.Decision.Reason)
			return out, nil
		case cluster.StepFail:
			m.d.Emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: t.Agent, Task: t.ID, Err: s.Err.Error(), Message: t.ID + " could not be placed on any host"})
			return nil, s.Err
		}
	}
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
