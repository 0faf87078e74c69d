package host

import (
	"errors"
	"fmt"
	"time"

	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// ErrDenied is wrapped by the error of a task a task_admission guard
// refused.
var ErrDenied = errors.New("denied by a guard")

// DeniedError is a task refused by a guard.
type DeniedError struct {
	Task    string
	Guard   string
	Message string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("task %s was denied by guard %q: %s", e.Task, e.Guard, e.Message)
}

func (e *DeniedError) Unwrap() error { return ErrDenied }

// Gate is a task_result guard that fired on a task's result: the work
// should be retried, or sent back to an earlier task, with Feedback.
type Gate struct {
	Guard    string       `json:"guard"`
	Action   guard.Action `json:"action"`
	Feedback string       `json:"feedback"`
	// To is the earlier task a send_back gate returns the work to.
	To       string `json:"to,omitempty"`
	MaxLoops int    `json:"max_loops"`
}

// Guards returns the guards in force.
func (h *Host) Guards() *guard.Set { return h.guards.Load() }

// guardTask is a task as guards see it.
func guardTask(t Task) guard.Task {
	return guard.Task{
		ID: t.ID, Name: t.Name, Agent: t.Agent, Prompt: t.Prompt,
		Files: t.Hints.Files, Directories: t.Hints.Directories, Technologies: t.Hints.Technologies,
		Attempt: max(t.Attempt, 1), Metadata: t.Metadata,
	}
}

// guardSession is a session's context as guards see it. Its fingerprint
// lists are built only when a guard reads them. pool.mu must be held.
func (s *session) guardSessionLocked(now time.Time, lists bool) guard.Session {
	gs := guard.Session{
		ID: s.id, Agent: s.pool.cfg().Name, Tasks: int(s.tasks), ToolUses: int(s.toolUses),
		Load: s.load, Capacity: s.capacity, Dormant: s.status == statusDormant,
		Age: now.Sub(s.created), Idle: now.Sub(s.lastActivity),
	}
	if lists && s.fp != nil {
		gs.Files, gs.Directories, gs.Technologies = s.fp.files.keys(), s.fp.dirs.keys(), s.fp.techs.keys()
	}
	return gs
}

// admit runs the task_admission guards on a task; run is the run it
// belongs to, zero for a task on its own.
func (h *Host) admit(t Task, run guard.Run) error {
	gs := h.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.TaskAdmission, m) {
		return nil
	}
	v := gs.First(guard.TaskAdmission, m, guard.AdmissionEnv{Task: guardTask(t), Run: run, Now: h.now()})
	if v == nil {
		return nil
	}
	h.emitGuard(guard.TaskAdmission, v, t.Agent, "", t.ID)
	return &DeniedError{Task: t.ID, Guard: v.Guard, Message: v.Message}
}

// gate runs the task_result guards on a task's result; run is the run it
// belongs to, zero for a task on its own.
func (h *Host) gate(t Task, session string, res sdk.Result, run guard.Run) *Gate {
	gs := h.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.TaskResult, m) {
		return nil
	}
	env := guard.ResultEnv{
		Result: guard.Result{Output: res.Output, Metrics: res.Metrics, Cost: res.Cost},
		Task:   guardTask(t), Run: run, Now: h.now(),
	}
	v := gs.First(guard.TaskResult, m, env)
	if v == nil {
		return nil
	}
	h.emit(Event{Kind: EventGuardFired, Hook: string(guard.TaskResult), Guard: v.Guard, Action: string(v.Action),
		Agent: t.Agent, Session: session, Task: t.ID, Run: t.Run, Message: v.Message, Err: errText(v.Err)})
	return &Gate{Guard: v.Guard, Action: v.Action, Feedback: v.Message, To: v.To, MaxLoops: v.MaxLoops}
}

// CheckTransition runs the transition guards on a run leaving stage from
// for stage to, given the run's state document. It returns the guard that
// blocks the transition, or nil.
func (h *Host) CheckTransition(pipeline, run, from, to string, state map[string]any) *guard.Verdict {
	gs := h.Guards()
	m := guard.Match{From: from, To: to}
	if !gs.Any(guard.Transition, m) {
		return nil
	}
	v := gs.First(guard.Transition, m, guard.TransitionEnv{
		From: from, To: to, State: state, Now: h.now(),
		Run: guard.Run{ID: run, Pipeline: pipeline, Stage: from, State: state},
	})
	if v != nil {
		h.emit(Event{Kind: EventGuardFired, Hook: string(guard.Transition), Guard: v.Guard, Action: string(v.Action), Run: run,
			From: from, To: to, Message: fmt.Sprintf("%s -> %s blocked by guard %s: %s", from, to, v.Guard, v.Message)})
	}
	return v
}

// vetoLocked runs the session_reuse guards on the session the matcher
// picked for a task. pool.mu must be held.
func (p *pool) vetoLocked(s *session, score float64, t Task, now time.Time) *guard.Verdict {
	gs := p.h.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.SessionReuse, m) {
		return nil
	}
	env := guard.ReuseEnv{
		Session: s.guardSessionLocked(now, gs.Uses(guard.SessionReuse, m, "session")),
		Score:   score, Task: guardTask(t), Now: now,
	}
	return gs.First(guard.SessionReuse, m, env)
}

func (h *Host) emitGuard(hook guard.Hook, v *guard.Verdict, agent, session, task string) {
	h.emit(Event{Kind: EventGuardFired, Hook: string(hook), Guard: v.Guard, Action: string(v.Action),
		Agent: agent, Session: session, Task: task, Message: v.Message, Err: errText(v.Err)})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
