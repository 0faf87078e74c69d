package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth"
)

// Target is where a task goes: a session on a host, or, with Session
// empty, a new session the host spawns.
type Target struct {
	Host    string
	Session string
}

func (t Target) String() string {
	if t.Session == "" {
		return "a new session on " + t.Host
	}
	return t.Session + " on " + t.Host
}

// TaskStatus is what a host knows of a task by its idempotency key.
type TaskStatus int

// What a host can answer about a key.
const (
	// TaskUnknown: the host never accepted the key (the request did not
	// arrive, or the host refused it). The task is not running there.
	TaskUnknown TaskStatus = iota
	// TaskRunning: the host accepted the task and has not finished it.
	TaskRunning
	// TaskDone: the host finished the task; its result is kept under the
	// key and returned again to whoever asks.
	TaskDone
	// TaskInterrupted: the host accepted the task, then stopped it
	// before it finished (a crash, a restart, its lease lost); it is not
	// running there, will not run there again under the key, and its
	// result is lost (see ErrInterrupted).
	TaskInterrupted
)

var statusNames = [...]string{TaskUnknown: "unknown", TaskRunning: "running", TaskDone: "done", TaskInterrupted: "interrupted"}

func (s TaskStatus) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("TaskStatus(%d)", int(s))
}

// The member (cluster/member) sends a task with cluster/peer's Client,
// over the hosts' mutually authenticated API. The receiving host keeps,
// under the task's idempotency key, that it accepted the task and, once
// finished, its result ([Accepted]). A second forward or a status query with a key it
// knows never starts the task again: it returns the result, or waits for
// it. A send's error wraps ErrRefused when the host answered that it did
// not start the task (the session is gone or busy, the host is draining,
// it does not run the agent, its lease is lost), ErrUnreachable when the
// request never reached the host; any other error means the outcome is
// unknown: the task may be running there.

// StepKind says what a forward does next.
type StepKind int

// The steps of a forward.
const (
	// StepPlace: decide where the task goes, over local and remote
	// sessions, leaving out Forward.ExcludedHosts and Forward.Excluded;
	// report it with Forward.Placed, or Forward.Unplaceable.
	StepPlace StepKind = iota + 1
	// StepSend: send the task to Step.Target (Peers.Forward); report with
	// Forward.Sent.
	StepSend
	// StepAsk: ask Step.Target.Host about the key (Peers.Status); report with
	// Forward.Asked.
	StepAsk
	// StepWait: the task may be running on Step.Target.Host, which could
	// not be asked. Wait for a while or for the view to change, then
	// report with Forward.Waited whether the host is still a member.
	StepWait
	// StepCheck: the task may have completed on Step.Target.Host, which
	// left or stopped it: before it is placed elsewhere, read whether
	// its completion was written (Membership.Completion), and report
	// with Forward.Checked.
	StepCheck
	// StepDone: the task ran, on Step.Target; its result is the caller's.
	StepDone
	// StepFail: give up with Step.Err.
	StepFail
)

var stepNames = [...]string{StepPlace: "place", StepSend: "send", StepAsk: "ask", StepWait: "wait", StepCheck: "check", StepDone: "done", StepFail: "fail"}

func (k StepKind) String() string {
	if k >= StepPlace && int(k) < len(stepNames) {
		return stepNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", int(k))
}

// Step is what to do next.
type Step struct {
	Kind   StepKind
	Target Target
	Err    error // for StepFail
}

// DefaultMaxPlacements bounds how often a forward is placed: the first
// placement and the retries after refusals and unreachable hosts.
const DefaultMaxPlacements = 4

// Forward is the retry and idempotency state machine of one task placed
// across hosts. It does no I/O: the member runs the steps and reports
// what happened, and the machine says what to do next:
//
//	f := cluster.NewForward(key, 0)
//	for s := f.Start(); ; {
//		switch s.Kind {
//		case cluster.StepPlace: t := place(f.ExcludedHosts(), f.Excluded()); s = f.Placed(t)
//		case cluster.StepSend:  _, err := peers.Forward(ctx, member(s.Target.Host), s.Target.Session, key, task); s = f.Sent(err)
//		case cluster.StepAsk:   st, _, err := peers.Status(ctx, member(s.Target.Host), key); s = f.Asked(st, err)
//		case cluster.StepWait:  wait(ctx); _, member := view.Member(s.Target.Host); s = f.Waited(member)
//		case cluster.StepCheck: c, ok, err := node.Completion(ctx, key); s = f.Checked(c, ok, err)
//		case cluster.StepDone:  return result
//		case cluster.StepFail:  return s.Err
//		}
//	}
//
// The rules, which keep a task from running twice once it succeeded:
//
//   - A task goes to another target only when it is known not to run
//     where it was sent: the host refused it or was never reached, it
//     answers that it does not know the key, or that it stopped the task
//     there (ErrInterrupted, TaskInterrupted), or it left
//     the cluster (its lease expired, and a host that loses its lease
//     cancels the forwarded tasks it runs: see the package doc on
//     fencing).
//   - And, when the host may have accepted it (it stopped the task, or
//     left), only once its completion is known not to be written
//     (StepCheck): a host completes a task by writing its completion
//     under its lease, which etcd refuses once the lease expired, so a
//     completion not written by then never will be. A completion found
//     ends the forward with its result, or, when the result was too
//     large for etcd, with the completing host's answer, waited for
//     however long it takes within the task's context: the task is
//     never placed again. A completion that cannot be read (etcd
//     away) is read again after a wait.
//   - When a send fails in any other way (a timeout, a connection lost
//     after the request went out), the host is asked about the key: done
//     ends the forward with that result; running or unanswered while the
//     host is a member means wait and ask again, for as long as the
//     task's context allows.
//   - A target that refused is left out of the next placements; a host
//     that was unreachable, refused twice or left, entirely.
//   - At most maxPlacements placements; then the forward fails with
//     ErrExhausted and what each attempt met.
type Forward struct {
	key           string
	maxPlacements int
	placements    int
	cur           Target
	state         StepKind
	hosts         []string // left out entirely
	sessions      []string // RemoteIDs left out
	refusals      map[string]int
	history       []string
	attempts      []hearth.Attempt
	// checking: the wait is for reading the completion again.
	checking bool
	// completedOn is the host that wrote the task's completion without
	// its result: only its answer ends the forward.
	completedOn string
}

// NewForward starts the forward of the task with idempotency key key;
// maxPlacements <= 0 means DefaultMaxPlacements.
func NewForward(key string, maxPlacements int) *Forward {
	if maxPlacements <= 0 {
		maxPlacements = DefaultMaxPlacements
	}
	return &Forward{key: key, maxPlacements: maxPlacements, refusals: make(map[string]int)}
}

// Key is the task's idempotency key.
func (f *Forward) Key() string { return f.key }

// ExcludedHosts are the hosts placement must leave out.
func (f *Forward) ExcludedHosts() []string { return slices.Clone(f.hosts) }

// Excluded are the remote sessions (RemoteIDs) placement must leave out.
func (f *Forward) Excluded() []string { return slices.Clone(f.sessions) }

// CompletedOn says whether host wrote the task's completion without its
// result: the forward then waits for that host's answer.
func (f *Forward) CompletedOn(host string) bool { return f.completedOn != "" && f.completedOn == host }

// History says what each attempt met, for the task's events.
func (f *Forward) History() []string { return slices.Clone(f.history) }

// Start returns the first step: place the task.
func (f *Forward) Start() Step { return f.place() }

func (f *Forward) place() Step {
	if f.placements >= f.maxPlacements {
		return f.fail(fmt.Errorf("%w: task %s: %d placements failed: %s", ErrExhausted, f.key, f.placements, strings.Join(f.history, "; ")))
	}
	f.state = StepPlace
	return Step{Kind: StepPlace}
}

func (f *Forward) fail(err error) Step {
	f.state = StepFail
	return Step{Kind: StepFail, Err: err}
}

// misuse reports a report that does not answer the step the machine is
// in: a bug in the loop that drives the machine (cluster/member's).
func (f *Forward) misuse(report string) Step {
	return f.fail(fmt.Errorf("forward of task %s: %s reported while the step is %s; the loop must report the step it ran", f.key, report, f.state))
}

// Placed reports where placement put the task.
func (f *Forward) Placed(t Target) Step {
	if f.state != StepPlace {
		return f.misuse("Placed")
	}
	f.placements++
	f.cur = t
	f.state = StepSend
	return Step{Kind: StepSend, Target: t}
}

// Unplaceable reports that placement found no target (no member runs the
// agent, or all were left out); err says why.
func (f *Forward) Unplaceable(err error) Step {
	if f.state != StepPlace {
		return f.misuse("Unplaceable")
	}
	if len(f.history) > 0 {
		err = fmt.Errorf("%w (after: %s)", err, strings.Join(f.history, "; "))
	}
	return f.fail(err)
}

// Sent reports what sending the task returned.
func (f *Forward) Sent(err error) Step {
	if f.state != StepSend {
		return f.misuse("Sent")
	}
	t := f.cur
	switch {
	case err == nil:
		f.state = StepDone
		return Step{Kind: StepDone, Target: t}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		// The caller gave up; the task may still run where it was sent,
		// and a later Forward with the key finds it there.
		return f.fail(fmt.Errorf("task %s sent to %s: %w", f.key, t, err))
	case errors.Is(err, ErrUnreachable):
		f.note(t, "unreachable", err)
		f.excludeHost(t.Host)
		return f.place()
	case errors.Is(err, ErrInterrupted):
		// It stopped the task (restarted, or lost its lease): as if it
		// had left.
		f.note(t, "interrupted", err)
		f.excludeHost(t.Host)
		return f.check()
	case errors.Is(err, ErrRefused):
		f.note(t, "refused", err)
		f.refusals[t.Host]++
		if t.Session == "" || f.refusals[t.Host] >= 2 {
			f.excludeHost(t.Host)
		} else {
			f.sessions = append(f.sessions, RemoteID(t.Host, t.Session))
		}
		return f.place()
	}
	f.note(t, "lost", err)
	f.state = StepAsk
	return Step{Kind: StepAsk, Target: t}
}

// Asked reports what asking about the key returned.
func (f *Forward) Asked(st TaskStatus, err error) Step {
	if f.state != StepAsk {
		return f.misuse("Asked")
	}
	t := f.cur
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return f.fail(fmt.Errorf("task %s on %s: asking for its outcome: %w", f.key, t, err))
	case err != nil:
		f.state = StepWait
		return Step{Kind: StepWait, Target: t}
	case st == TaskDone:
		f.state = StepDone
		return Step{Kind: StepDone, Target: t}
	case st == TaskRunning:
		f.state = StepWait
		return Step{Kind: StepWait, Target: t}
	case f.completedOn != "":
		// It wrote the completion, and now does not know the key, or
		// stopped it: its store lost the result.
		return f.fail(fmt.Errorf("task %s completed on host %s, which no longer has its result (it answers %s); it is not run again", f.key, t.Host, st))
	case st == TaskInterrupted:
		f.note(t, "interrupted there", nil)
		f.excludeHost(t.Host)
		return f.check()
	}
	// The host never accepted it: the task is not running anywhere.
	f.note(t, "not accepted", nil)
	f.excludeHost(t.Host)
	return f.place()
}

// Waited reports, after a wait, whether the host the task may run on is
// still a member.
func (f *Forward) Waited(member bool) Step {
	if f.state != StepWait {
		return f.misuse("Waited")
	}
	t := f.cur
	switch {
	case f.checking:
		f.checking = false
		f.state = StepCheck
		return Step{Kind: StepCheck, Target: t}
	case member || f.completedOn != "":
		f.state = StepAsk
		return Step{Kind: StepAsk, Target: t}
	}
	return f.left()
}

// Left reports, instead of asking, that the host to ask left the
// cluster: no use waiting for its answer.
func (f *Forward) Left() Step {
	if f.state != StepAsk || f.completedOn != "" {
		return f.misuse("Left")
	}
	return f.left()
}

func (f *Forward) left() Step {
	// Its lease expired: it cancelled what it ran for others, and can
	// no longer complete it; its answer, should it come back, is no
	// longer awaited.
	f.note(f.cur, "left the cluster", nil)
	f.excludeHost(f.cur.Host)
	return f.check()
}

// check reads the completion of a task the current target may have
// completed before it is placed elsewhere.
func (f *Forward) check() Step {
	f.state = StepCheck
	return Step{Kind: StepCheck, Target: f.cur}
}

// Checked reports what reading the task's completion returned: c, when
// found is true, or err when it could not be read.
func (f *Forward) Checked(c Completion, found bool, err error) Step {
	if f.state != StepCheck {
		return f.misuse("Checked")
	}
	switch {
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return f.fail(fmt.Errorf("task %s: reading whether it completed on %s: %w", f.key, f.cur.Host, err))
	case err != nil:
		f.checking = true
		f.state = StepWait
		return Step{Kind: StepWait, Target: f.cur}
	case !found:
		return f.place()
	}
	t := Target{Host: c.Host}
	f.cur = t
	if c.OnHost {
		f.history = append(f.history, t.String()+": completed; its result is kept there")
		f.completedOn = c.Host
		f.state = StepAsk
		return Step{Kind: StepAsk, Target: t}
	}
	f.history = append(f.history, t.String()+": completed")
	f.state = StepDone
	return Step{Kind: StepDone, Target: t}
}

func (f *Forward) excludeHost(h string) {
	if !slices.Contains(f.hosts, h) {
		f.hosts = append(f.hosts, h)
	}
}

func (f *Forward) note(t Target, what string, err error) {
	s := t.String() + ": " + what
	if err != nil {
		what += " (" + err.Error() + ")"
		s += " (" + err.Error() + ")"
	}
	f.history = append(f.history, s)
	// One attempt per placement, saying what it came to last: a send
	// that was lost, then the host left, is the one attempt.
	if n := len(f.attempts); n > 0 && n == f.placements && f.attempts[n-1].Host == t.Host {
		f.attempts[n-1].Result = what
		return
	}
	f.attempts = append(f.attempts, hearth.Attempt{Host: t.Host, Session: t.Session, Result: what})
}

// Attempts says where the task went and what each attempt met, ending
// with where it completed (host, session), for its outcome
// (hearth.Decision.Attempts). A host that completed the task it left
// or stopped answering about (its completion was read) is that one
// attempt, completed.
func (f *Forward) Attempts(host, session string) []hearth.Attempt {
	out := slices.Clone(f.attempts)
	if n := len(out); n > 0 && n == f.placements && out[n-1].Host == host {
		out[n-1].Result, out[n-1].Session = "completed", session
		return out
	}
	return append(out, hearth.Attempt{Host: host, Session: session, Result: "completed"})
}
