package member

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// A forward's spans: on the forwarding host, hearth.forward, one per
// send of the task to another host (numbered: a refused or lost send is
// followed by another), under the submission's span; its span context
// travels in the peer Forward call's metadata (package peer, over
// internal/tracecontext); on the receiving host, hearth.forwarded, under
// it, is the task taken there, and its placement and invoke_agent spans
// are its children. One trace shows the task placed on one host and run
// on another.

const scope = "github.com/hearth-dev/hearth/host/cluster/member"

// tracer is the member's tracer from the host's tracing, tp; a tracer
// that records nothing when tp is nil.
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(scope)
}

// tracedForward is forward within a hearth.forward span.
func (m *Member) tracedForward(ctx context.Context, mm hearth.Member, session string, t hearth.Task, attempt int) (cluster.Result, error) {
	ctx, span := m.tracer.Start(ctx, telemetry.SpanForward, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		telemetry.AttrTask.String(t.ID), telemetry.AttrAgent.String(t.Agent), telemetry.AttrPlacedHost.String(mm.ID),
		telemetry.AttrAttempt.Int(attempt)))
	defer span.End()
	if session != "" {
		span.SetAttributes(telemetry.AttrPlaced.String(session))
	}
	r, err := m.forward(ctx, mm, session, t)
	endForwardSpan(span, r, err)
	return r, err
}

// executeForwarded runs a task another host forwarded here within a
// hearth.forwarded span, in that host's trace (ctx carries its span
// context).
func (m *Member) executeForwarded(ctx context.Context, from, session string, t hearth.Task) (*hearth.Outcome, error) {
	ctx, span := m.tracer.Start(ctx, telemetry.SpanForwarded, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		telemetry.AttrTask.String(t.ID), telemetry.AttrAgent.String(t.Agent), telemetry.AttrFrom.String(from),
		telemetry.AttrHost.String(m.cfg.HostID)))
	defer span.End()
	if session != "" {
		span.SetAttributes(telemetry.AttrPlaced.String(session))
	}
	out, err := m.d.Execute(ctx, t)
	endForwardSpan(span, cluster.Result{Outcome: out, Err: err}, nil)
	return out, err
}

// endForwardSpan sets what a forward came to on its span: the outcome's
// session, or the error (of the call, or of the task).
func endForwardSpan(span trace.Span, r cluster.Result, err error) {
	if err == nil {
		err = r.Err
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(telemetry.AttrOutcome.String("failed"))
		return
	}
	span.SetAttributes(telemetry.AttrOutcome.String("succeeded"))
	if r.Outcome != nil {
		span.SetAttributes(telemetry.AttrSession.String(r.Outcome.Session))
	}
}
