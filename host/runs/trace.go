package runs

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// A run's spans, made by the shell (the Schedule has no I/O and knows
// nothing of them; it is told the trace ID, which it records):
//
//	hearth.run          a launch here (start, resume, fork, revisit) to the
//	│                   run's stop here; its parent is the launcher's span
//	├─ hearth.task      a task from its first attempt to its end
//	│  │                (succeeded, failed, skipped, or the run stopping)
//	│  ├─ hearth.attempt      one attempt: its ctx is the one the attempt is
//	│  │  │                   placed and run with, so the engine's and the
//	│  │  │                   pool's spans (hearth.place, invoke_agent,
//	│  │  │                   hearth.gate) are its children
//	│  └─ hearth.checkpoint   a checkpoint about the task, queued to durable
//	└─ hearth.checkpoint      a checkpoint about the run
//
// A task's and an attempt's span end once the write that records their
// end is durable.

const scope = "github.com/hearth-dev/hearth/host/runs"

// tracerOf is d's tracer, a no-op one when it has none.
func tracerOf(d Deps) trace.Tracer {
	if d.Tracer != nil {
		return d.Tracer
	}
	return noop.NewTracerProvider().Tracer(scope)
}

// runTrace is a run's spans while it executes here.
type runTrace struct {
	// span is the run's (nil before launch) and ctx carries it.
	span trace.Span
	ctx  context.Context
	// tasks are the open task spans, by task name; guarded by Run.mu.
	tasks map[string]trace.Span
}

// startTraceLocked begins the run's span as it launches, under the span
// of parent (whoever launched it) if it has one: the run outlives that
// call, so only the span context is taken, not its cancellation. The
// schedule records the trace ID. r.mu must be held.
func (r *Run) startTraceLocked(parent context.Context, why string) {
	ctx := trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(parent))
	info := r.s.Info()
	ctx, span := r.m.tracer.Start(ctx, telemetry.SpanRun, trace.WithAttributes(
		telemetry.AttrRun.String(r.id), telemetry.AttrPipeline.String(info.Pipeline), telemetry.AttrLaunch.String(why)))
	r.tr = runTrace{span: span, ctx: ctx, tasks: make(map[string]trace.Span)}
	id := ""
	if sc := span.SpanContext(); sc.IsSampled() {
		id = sc.TraceID().String()
	}
	r.s.Traced(id)
}

// launchFailed ends the run's span when its launch failed: it never ran.
func (r *Run) launchFailed(err error) {
	r.tr.span.SetStatus(codes.Error, err.Error())
	r.tr.span.End()
}

// startAttempt begins attempt a's span, under its task's span (begun
// with its first attempt), and returns the ctx to run it with.
func (r *Run) startAttempt(a attempt) (context.Context, trace.Span) {
	if r.tr.span == nil {
		return r.ctx, trace.SpanFromContext(r.ctx) // a no-op span
	}
	r.mu.Lock()
	stage := r.s.Stage(a.i)
	ts := r.tr.tasks[a.task.Name]
	if ts == nil {
		_, ts = r.m.tracer.Start(r.tr.ctx, telemetry.SpanTask, trace.WithAttributes(
			telemetry.AttrRun.String(r.id), telemetry.AttrTaskName.String(a.task.Name),
			telemetry.AttrAgent.String(a.task.Agent), telemetry.AttrStage.String(stage), telemetry.AttrRound.Int(a.round)))
		r.tr.tasks[a.task.Name] = ts
	}
	r.mu.Unlock()
	return r.m.tracer.Start(trace.ContextWithSpan(r.ctx, ts), telemetry.SpanAttempt, trace.WithAttributes(
		telemetry.AttrRun.String(r.id), telemetry.AttrTask.String(a.task.ID), telemetry.AttrTaskName.String(a.task.Name),
		telemetry.AttrAgent.String(a.task.Agent), telemetry.AttrStage.String(stage),
		telemetry.AttrAttempt.Int(a.task.Attempt), telemetry.AttrRound.Int(a.round)))
}

// attemptEndedLocked sets on attempt a's span how it ended, and on its
// task's span too when the task is done with (succeeded, failed or
// skipped: Ended has just said); it returns the spans to end once the
// write recording it is durable. r.mu must be held.
func (r *Run) attemptEndedLocked(a attempt, span trace.Span, out *hearth.Outcome, err, interrupted error) []trace.Span {
	if r.tr.span == nil {
		return nil
	}
	var outcome string
	switch {
	case err != nil && (interrupted != nil || errors.Is(err, hearth.ErrClosed)):
		outcome = "interrupted"
	case err != nil:
		outcome = "failed"
		span.SetStatus(codes.Error, err.Error())
	case out.Gate != nil:
		outcome = "gated"
	default:
		outcome = "succeeded"
	}
	span.SetAttributes(telemetry.AttrOutcome.String(outcome))
	if out != nil {
		span.SetAttributes(telemetry.AttrSession.String(out.Session), telemetry.AttrCost.Float64(out.Result.Cost))
	}
	ending := []trace.Span{span}
	switch st := r.s.TaskStatus(a.i); st {
	case hearth.TaskSucceeded, hearth.TaskFailed, hearth.TaskSkipped:
		if ts := r.tr.tasks[a.task.Name]; ts != nil {
			endTask(ts, st)
			delete(r.tr.tasks, a.task.Name)
			ending = append(ending, ts)
		}
	}
	return ending
}

// endTask sets a task span's outcome: the task's status.
func endTask(ts trace.Span, st hearth.TaskStatus) {
	ts.SetAttributes(telemetry.AttrOutcome.String(string(st)))
	if st == hearth.TaskFailed {
		ts.SetStatus(codes.Error, "task failed")
	}
}

// endSpans ends spans.
func endSpans(spans []trace.Span) {
	for _, s := range spans {
		s.End()
	}
}

// endTrace ends the run's spans as it stops here: the tasks still open
// (interrupted, or left pending) with their status, and the run's with
// its own; err is why its end could not be recorded.
func (r *Run) endTrace(info hearth.RunInfo, err error) {
	if r.tr.span == nil {
		return
	}
	r.mu.Lock()
	for name, ts := range r.tr.tasks {
		st := hearth.TaskPending
		if i, ok := r.s.index[name]; ok {
			st = r.s.TaskStatus(i)
		}
		endTask(ts, st)
		ts.End()
	}
	clear(r.tr.tasks)
	r.mu.Unlock()
	r.tr.span.SetAttributes(telemetry.AttrOutcome.String(string(info.Status)))
	switch {
	case err != nil:
		r.tr.span.SetStatus(codes.Error, err.Error())
	case info.Status == hearth.RunFailed:
		r.tr.span.SetStatus(codes.Error, info.Reason)
	}
	r.tr.span.End()
}

// traceCheckpointLocked begins a span for checkpoint c, under the span of
// the task it is about (or the run's), and returns p ending it once the
// checkpoint is durable. r.mu must be held.
func (r *Run) traceCheckpointLocked(c *record.Checkpoint, p Pending) Pending {
	if r.tr.span == nil {
		return p
	}
	parent := r.tr.ctx
	if ts := r.tr.tasks[c.Task]; ts != nil {
		parent = trace.ContextWithSpan(parent, ts)
	}
	_, span := r.m.tracer.Start(parent, telemetry.SpanCheckpoint, trace.WithAttributes(
		telemetry.AttrRun.String(r.id), telemetry.AttrCheckpoint.Int64(int64(c.Seq)), telemetry.AttrLabel.String(c.Label)))
	if c.Task != "" {
		span.SetAttributes(telemetry.AttrTaskName.String(c.Task))
	}
	return spanPending{p, span}
}

// spanPending is a write whose span ends when the write is waited for.
// (Ending an ended span again does nothing.)
type spanPending struct {
	Pending
	span trace.Span
}

func (p spanPending) Wait(ctx context.Context) error {
	err := p.Pending.Wait(ctx)
	if err != nil {
		p.span.SetStatus(codes.Error, err.Error())
	}
	p.span.End()
	return err
}
