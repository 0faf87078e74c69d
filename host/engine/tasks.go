package engine

import (
	"context"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/runs"
	"github.com/hearth-dev/hearth/sdk"
)

// Submit places t on a session of its agent, runs it and returns the
// result, the context artifact the agent left and the placement decision.
// It blocks until the task is done, ctx is done, or the host shuts down.
func (e *Engine) Submit(ctx context.Context, t hearth.Task) (*hearth.Outcome, error) {
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	ctx, span := e.startSubmit(ctx, t)
	out, err := e.submit(ctx, t)
	endSubmit(span, out, err)
	return out, err
}

// submit is Submit, within its span.
func (e *Engine) submit(ctx context.Context, t hearth.Task) (*hearth.Outcome, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	p, err := e.pool(t.Agent)
	if err != nil {
		return nil, err
	}
	if err := p.Runnable(); err != nil {
		return nil, err
	}
	if err := e.admit(t, guard.Run{}); err != nil {
		return nil, err
	}
	if e.cluster != nil {
		return e.cluster.Submit(ctx, p, t)
	}
	return e.execute(ctx, p, t, nil)
}

// executeRunTask runs an admitted attempt of a task of run: the run
// engine's way to placement (runs.Deps.Execute). The run is what the
// task's calls reach.
func (e *Engine) executeRunTask(ctx context.Context, t hearth.Task, run *runs.Run) (*hearth.Outcome, error) {
	p, err := e.pool(t.Agent)
	if err != nil {
		return nil, err
	}
	return e.execute(ctx, p, t, run)
}

// execute places and runs an admitted task, and applies its quality
// gate. run is the run it belongs to, nil for none.
func (e *Engine) execute(ctx context.Context, p *pool.Pool, t hearth.Task, run pool.Run) (*hearth.Outcome, error) {
	out, err := p.Execute(ctx, t, run)
	if out != nil {
		// Its slot is free again: the last event the task emitted came
		// before, and a cluster's view must not keep it busy.
		e.changed(out.Session, true)
	}
	if err != nil {
		return nil, err
	}
	var gr guard.Run
	if run != nil {
		gr = run.Guard()
	}
	out.Gate = e.tracedGate(ctx, t, out.Session, out.Result, gr)
	return out, nil
}

// Place says where a task for agent with hints would run now, and why,
// without running anything: the decision Submit would start from, made
// by the same policy. Its Action is what the host would do if nothing
// changed in between; for an external agent, the session to resume.
func (e *Engine) Place(_ context.Context, agent string, hints sdk.Hints) (hearth.Decision, error) {
	p, err := e.pool(agent)
	if err != nil {
		return hearth.Decision{}, err
	}
	t := hearth.Task{Agent: agent, Hints: hints}
	if e.cluster != nil {
		return e.cluster.Place(p, t), nil
	}
	return p.Place(t), nil
}
