package engine

import (
	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/runs"
	"github.com/hearth-dev/hearth/sdk"
)

// The guards the engine applies itself: task_admission before a task
// runs, task_result on its result, transition on a run's stages. The
// pools apply session_reuse and pre_tool_use.

// guardSet returns the guards in force.
func (e *Engine) guardSet() *guard.Set { return e.guards.Load() }

// admit runs the task_admission guards on a task; run is the run it
// belongs to, zero for a task on its own. A refusal is an event.
func (e *Engine) admit(t hearth.Task, run guard.Run) error {
	v := e.admission(t, run)
	if v == nil {
		return nil
	}
	e.emit(guard.Event(guard.TaskAdmission, v, t.Agent, "", t.ID))
	return &hearth.DeniedError{Task: t.ID, Guard: v.Guard, Message: v.Message}
}

// admission is the task_admission guard that refuses a task, nil when
// none does.
func (e *Engine) admission(t hearth.Task, run guard.Run) *guard.Verdict {
	gs := e.guardSet()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.TaskAdmission, m) {
		return nil
	}
	return gs.First(guard.TaskAdmission, m, guard.AdmissionEnv{Task: guard.TaskOf(t), Run: run, Now: e.now()})
}

// gate runs the task_result guards on a task's result; run is the run it
// belongs to, zero for a task on its own.
func (e *Engine) gate(t hearth.Task, session string, res sdk.Result, run guard.Run) *hearth.Gate {
	gs := e.guardSet()
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

// transition is the transition guard that blocks run leaving stage from
// for stage to, given the run's state document, nil when none does.
func (e *Engine) transition(run guard.Run, from, to string) *guard.Verdict {
	gs := e.guardSet()
	m := guard.Match{From: from, To: to}
	if !gs.Any(guard.Transition, m) {
		return nil
	}
	return gs.First(guard.Transition, m, guard.TransitionEnv{
		From: from, To: to, State: run.State, Now: e.now(),
		Run: guard.Run{ID: run.ID, Pipeline: run.Pipeline, Stage: from, State: run.State},
	})
}

// runGuards are the engine's guards as a run's schedule consults them
// (runs.Guards): it records what fired, with the run's next write.
type runGuards Engine

func (g *runGuards) Admit(t hearth.Task, run guard.Run) *guard.Verdict {
	return (*Engine)(g).admission(t, run)
}

func (g *runGuards) Transition(run guard.Run, from, to string) *guard.Verdict {
	return (*Engine)(g).transition(run, from, to)
}

var _ runs.Guards = (*runGuards)(nil)
