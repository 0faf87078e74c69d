// Package runs executes pipelines as runs: it decides which tasks start,
// runs their attempts through the engine's placement, chains context
// between them, retries and escalates failures, applies quality gates and
// budgets, and writes each task's outcome, the run's head, a checkpoint
// and the events that report them in one store transaction: nothing is
// said to be done before it is on disk. It also resumes, forks,
// revisits, pauses, cancels and deletes runs, recovers the runs a crashed
// host left running, and applies retention.
//
// The decisions of a run are a Schedule (schedule.go): a type with no
// lock and no I/O, fed what happened (now, an attempt's end, a stop) and
// answering what to do (Effects: a write with the events that report it,
// attempts to start, when to wake). Its rules are listed in its doc and
// held by table tests (schedule_test.go, sweep_test.go) with no store and
// no plugin. What it holds is split by concern, each part a type with no
// lock and no I/O, tested beside it: plan (plan.go), the pipeline as a
// graph; ledger (ledger.go), the run's records as plain values and the
// write each change goes in; stateDoc (statedoc.go), the state document
// and its owners; runFiles (files.go), the attached files and chunk
// marks; surgery (surgery.go), what creating, resuming, repairing,
// revisiting, forking and abandoning a run and its agents' calls do to
// the records. Run (run.go) is its shell: it calls the schedule under
// the run's lock, queues what it answers in order, waits outside the
// lock, and runs the attempts.
//
// Files: schedule.go, surgery.go and the parts above decide (and
// stagewait.go, the wait for a stage its rules keep closed); run.go is
// the shell, the loop and the attempts; runapi.go holds the operations
// on runs (start, resume, fork, pause, cancel, revisit); runstate.go
// what a run's tasks may do to it (state sections, checkpoints, files,
// chunk marks: the pool.Run a task's calls reach); runlife.go the
// statuses' allowed transitions; trace.go the run's spans (the shell
// makes them; the schedule only records the trace ID); retention.go the
// recovery of interrupted runs and their retention; store.go what the
// package needs of the store. The design is in docs/runs.md.
//
// The package imports neither the store nor the pools: a run's records
// are plain values (package record), the store is reached through Store,
// and a task through Deps.Execute.
package runs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/contextchain"
)

// Deps is what the run engine needs from the engine that composes it.
type Deps struct {
	Store  Store
	Logger hclog.Logger
	Now    func() time.Time
	// Emit records an event and publishes it once it is on disk.
	Emit func(hearth.Event) Pending
	// Publish publishes events a run's write p carried
	// (record.RunWrite.Events) once p is durable, in order with every
	// event emitted before; if p fails, subscribers learn that instead.
	Publish func(evs []hearth.Event, p Pending)
	// AfterPublished calls fn once every event emitted so far has reached
	// subscribers.
	AfterPublished func(fn func())
	// Enter registers one unit of in-flight work, unless the engine is
	// closing (hearth.ErrClosed); the returned func ends it.
	Enter func() (func(), error)
	// Runnable checks that agent is configured and runs tasks.
	Runnable func(agent string) error
	// Guards are the run-level guards in force.
	Guards Guards
	// Execute places one attempt of a task of run and runs it, with its
	// quality gate; run is what the task's calls reach (pool.Run).
	Execute func(ctx context.Context, t hearth.Task, run *Run) (*hearth.Outcome, error)
	// Tracer makes the runs' spans (trace.go); nil for none.
	Tracer trace.Tracer
	// Recheck is the longest a run waiting for a time (a stage's
	// not_before, a retry's backoff) sleeps before it asks Now again;
	// zero means DefaultRecheck.
	Recheck time.Duration
}

// DefaultRecheck is how often a waiting run looks at the clock again.
// Its timer runs on the machine's monotonic clock, which stands still
// while the machine sleeps and ignores steps of the wall clock, but the
// time it waits for is a wall-clock time: a laptop that sleeps through
// a stage's not_before, or a clock set forward by NTP, would otherwise
// keep the stage closed for as long again as the time that passed
// unseen.
const DefaultRecheck = time.Minute

// Runs executes the runs of one engine. Its methods are safe for
// concurrent use.
type Runs struct {
	d      Deps
	tracer trace.Tracer
	// mu guards runs and closed; runs are the runs this engine executes,
	// or holds while an operation (cancel, revisit) acts on their
	// records.
	mu     sync.Mutex
	runs   map[string]*Run
	closed bool
	// wg counts the runs' loops.
	wg sync.WaitGroup
	// lastSweep is when retention last ran.
	sweepMu   sync.Mutex
	lastSweep time.Time
}

// New makes the run engine.
func New(d Deps) *Runs {
	return &Runs{d: d, tracer: tracerOf(d), runs: make(map[string]*Run)}
}

func (m *Runs) now() time.Time { return m.d.Now() }

// recheck is Deps.Recheck, or DefaultRecheck.
func (m *Runs) recheck() time.Duration {
	if m.d.Recheck > 0 {
		return m.d.Recheck
	}
	return DefaultRecheck
}

// Handle follows a run this engine executes.
type Handle struct {
	// ID is the run's ID.
	ID   string
	done chan struct{}
	info hearth.RunInfo
	err  error
}

// Done is closed when the run stops: completed, failed, paused or
// cancelled, and its last events reached subscribers.
func (r *Handle) Done() <-chan struct{} { return r.done }

// Wait returns the run as it stopped. The error is nil when the run
// completed, a *hearth.RunError when it failed, was paused or cancelled,
// and ctx's error when ctx ended first (the run goes on).
func (r *Handle) Wait(ctx context.Context) (hearth.RunInfo, error) {
	select {
	case <-r.done:
		return r.info, r.err
	case <-ctx.Done():
		return hearth.RunInfo{}, ctx.Err()
	}
}

// pipelineOf checks a pipeline submitted through the Go API against the
// engine's agents, with its defaults applied.
func (m *Runs) pipelineOf(p *hearth.Pipeline) (*hearth.Pipeline, error) {
	if p == nil {
		return nil, errors.New("run: nil pipeline")
	}
	cp := *p
	cp.Defaults()
	var errs []error
	if err := cp.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := renderer(cp.Context); err != nil {
		errs = append(errs, fmt.Errorf("context template: %w", err))
	}
	for _, t := range cp.Tasks {
		if t.Agent == "" {
			continue
		}
		if err := m.d.Runnable(t.Agent); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", cp.Name, err)
	}
	return &cp, nil
}

// Wait returns once every run's loop has ended: after Stop.
func (m *Runs) Wait() { m.wg.Wait() }

// renderer returns the contextchain renderer a pipeline's context
// settings describe: a budget of 0 is the default, a negative one no cap.
func renderer(c hearth.Context) (*contextchain.Renderer, error) {
	budget := c.Budget
	switch {
	case budget == 0:
		budget = hearth.DefaultContextBudget
	case budget < 0:
		budget = 0
	}
	opts := []contextchain.Option{contextchain.WithBudget(budget)}
	if c.Template != "" {
		opts = append(opts, contextchain.WithTemplate(c.Template))
	}
	return contextchain.New(opts...)
}
