package engine

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk"
)

// The engine's spans: a task submitted on its own (hearth.submit), the
// root of its placement, plugin and tool-use spans (host/pool), and the
// quality gate put to its result (hearth.gate). A run's spans are the run
// engine's (host/runs).

const scope = "github.com/hearth-dev/hearth/host/engine"

// Telemetry is the host's tracing: what the daemon's API and the
// dashboard ask about traces.
func (e *Engine) Telemetry() *telemetry.Provider { return e.telemetry }

func (e *Engine) startSubmit(ctx context.Context, t hearth.Task) (context.Context, trace.Span) {
	return e.tracer.Start(ctx, telemetry.SpanSubmit, trace.WithAttributes(
		telemetry.AttrTask.String(t.ID), telemetry.AttrAgent.String(t.Agent)))
}

// endSubmit ends a submission's span with what it came to, and gives the
// outcome its trace ID.
func endSubmit(span trace.Span, out *hearth.Outcome, err error) {
	defer span.End()
	if sc := span.SpanContext(); out != nil && sc.IsSampled() {
		out.TraceID = sc.TraceID().String()
	}
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(telemetry.AttrOutcome.String("failed"))
		return
	}
	span.SetAttributes(telemetry.AttrOutcome.String("succeeded"), telemetry.AttrSession.String(out.Session),
		telemetry.AttrCost.Float64(out.Result.Cost))
	if out.Decision.Host != "" {
		span.SetAttributes(telemetry.AttrPlacedHost.String(out.Decision.Host))
	}
	if u, ok := telemetry.UsageOf(out.Result.Metrics); ok {
		span.SetAttributes(telemetry.GenAIUsage(u)...)
	}
}

// tracedGate is gate, within a span when a task_result guard applies to
// the task.
func (e *Engine) tracedGate(ctx context.Context, t hearth.Task, session string, res sdk.Result, run guard.Run) *hearth.Gate {
	if !e.guardSet().Any(guard.TaskResult, guard.Match{Agent: t.Agent, Task: t.Name}) {
		return nil
	}
	_, span := e.tracer.Start(ctx, telemetry.SpanGate, trace.WithAttributes(telemetry.AttrTask.String(t.ID)))
	defer span.End()
	g := e.gate(t, session, res, run)
	if g == nil {
		span.SetAttributes(telemetry.AttrVerdict.String("pass"))
		return nil
	}
	span.SetAttributes(telemetry.AttrVerdict.String("gated"), telemetry.AttrGuard.String(g.Guard),
		telemetry.AttrGate.String(string(g.Action)), telemetry.AttrGuardWhy.String(g.Feedback))
	if g.To != "" {
		span.SetAttributes(telemetry.AttrGateTo.String(g.To))
	}
	return g
}
