package engine

import (
	"fmt"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// The guards the engine applies itself: task_admission before a task
// runs, task_result on its result, transition on a run's stages. The
// pools apply session_reuse and pre_tool_use.

// Guards returns the guards in force.
func (e *Engine) Guards() *guard.Set { return e.guards.Load() }

// admit runs the task_admission guards on a task; run is the run it
// belongs to, zero for a task on its own.
func (e *Engine) admit(t hearth.Task, run guard.Run) error {
	gs := e.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.TaskAdmission, m) {
		return nil
	}
	v := gs.First(guard.TaskAdmission, m, guard.AdmissionEnv{Task: guard.TaskOf(t), Run: run, Now: e.now()})
	if v == nil {
		return nil
	}
	e.emit(guard.Event(guard.TaskAdmission, v, t.Agent, "", t.ID))
	return &hearth.DeniedError{Task: t.ID, Guard: v.Guard, Message: v.Message}
}

// gate runs the task_result guards on a task's result; run is the run it
// belongs to, zero for a task on its own.
func (e *Engine) gate(t hearth.Task, session string, res sdk.Result, run guard.Run) *hearth.Gate {
	gs := e.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.TaskResult, m) {
		return nil
	}
	env := guard.ResultEnv{
		Result: guard.Result{Output: res.Output, Metrics: res.Metrics, Cost: res.Cost},
		Task:   guard.TaskOf(t), Run: run, Now: e.now(),
	}
	v := gs.First(guard.TaskResult, m, env)
	if v == nil {
		return nil
	}
	ev := guard.Event(guard.TaskResult, v, t.Agent, session, t.ID)
	ev.Run = t.Run
	e.emit(ev)
	return &hearth.Gate{Guard: v.Guard, Action: hearth.GateAction(v.Action), Feedback: v.Message, To: v.To, MaxLoops: v.MaxLoops}
}

// checkTransition runs the transition guards on a run leaving stage from
// for stage to, given the run's state document. It returns the guard
// that blocks the transition, or nil.
func (e *Engine) checkTransition(pipeline, run, from, to string, state map[string]any) *guard.Verdict {
	gs := e.Guards()
	m := guard.Match{From: from, To: to}
	if !gs.Any(guard.Transition, m) {
		return nil
	}
	v := gs.First(guard.Transition, m, guard.TransitionEnv{
		From: from, To: to, State: state, Now: e.now(),
		Run: guard.Run{ID: run, Pipeline: pipeline, Stage: from, State: state},
	})
	if v != nil {
		e.emit(hearth.Event{Kind: hearth.EventGuardFired, Hook: string(guard.Transition), Guard: v.Guard, Action: string(v.Action), Run: run,
			From: from, To: to, Message: fmt.Sprintf("%s -> %s blocked by guard %s: %s", from, to, v.Guard, v.Message)})
	}
	return v
}
