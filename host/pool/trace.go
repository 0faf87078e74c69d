package pool

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// The pool's spans (internal/telemetry names them): a placement
// (hearth.place) with the decision and every factor; the plugin started
// for it (hearth.session.spawn, hearth.session.rehydrate); the task on
// its session (invoke_agent <agent>), whose span context goes into the
// plugin with the task; under it, each question before a tool use with
// the guards' verdict (hearth.pre_tool_use; under the agent's own span
// when it sends one) and each tool use reported (hearth.tool_use, timed
// as the agent timed it). With tracing off they cost a no-op call each.

const scope = "github.com/hearth-dev/hearth/host/pool"

func tracerOf(t *telemetry.Provider) trace.Tracer {
	if t == nil {
		return noop.NewTracerProvider().Tracer(scope)
	}
	return t.TracerProvider().Tracer(scope)
}

// pluginTraces is the host's side of a plugin of the pool: the relay of
// its spans, when the host traces.
func (p *Pool) pluginTraces() agentplugin.HostOptions {
	o := agentplugin.HostOptions{Agent: p.cfg().Agent}
	if t := p.d.Telemetry; t != nil && t.Relay() != nil {
		o.Traces, o.TraceService = t.Relay(), t.PluginService(p.cfg().Agent)
	}
	return o
}

// taskAttrs are what every span about a task says of it.
func taskAttrs(t hearth.Task) []attribute.KeyValue {
	a := []attribute.KeyValue{telemetry.AttrTask.String(t.ID), telemetry.AttrAgent.String(t.Agent)}
	if t.Name != "" {
		a = append(a, telemetry.AttrTaskName.String(t.Name))
	}
	if t.Run != "" {
		a = append(a, telemetry.AttrRun.String(t.Run))
	}
	return a
}

// place is acquire, traced.
func (p *Pool) place(ctx context.Context, t hearth.Task) (*session, *hearth.Decision, error) {
	ctx, span := p.tracer.Start(ctx, telemetry.SpanPlace, trace.WithAttributes(taskAttrs(t)...))
	defer span.End()
	s, d, err := p.acquire(ctx, t)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return s, d, err
	}
	if span.IsRecording() {
		span.SetAttributes(telemetry.DecisionAttrs(d)...)
	}
	return s, d, nil
}

// start is launch, traced: a new session's spawn or a dormant one's
// rehydration.
func (p *Pool) start(ctx context.Context, s *session, rehydrate bool) error {
	name := telemetry.SpanSpawn
	if rehydrate {
		name = telemetry.SpanRehydrate
	}
	ctx, span := p.tracer.Start(ctx, name, trace.WithAttributes(telemetry.AttrAgent.String(p.cfg().Agent), telemetry.AttrSession.String(s.id)))
	defer span.End()
	err := p.launch(ctx, s, rehydrate)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return err
	}
	p.mu.Lock()
	proc := s.proc
	p.mu.Unlock()
	if proc != nil && span.IsRecording() {
		span.SetAttributes(telemetry.AttrPID.Int(proc.PID()), semconv.GenAIAgentVersion(proc.Info().Version))
	}
	return nil
}

// run is runTask, traced: the task's span on the session, the
// invoke_agent span of the GenAI conventions, with its cost and the
// tokens its result reports.
func (s *session) run(ctx context.Context, t hearth.Task, run Run) (sdk.Result, uint64, error) {
	p := s.pool
	agent := p.cfg().Agent
	ctx, span := p.tracer.Start(ctx, telemetry.SpanInvoke+" "+agent, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(taskAttrs(t),
			semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agent), semconv.GenAIAgentID(s.id),
			semconv.GenAIConversationID(s.id), telemetry.AttrSession.String(s.id), telemetry.AttrAttempt.Int(max(t.Attempt, 1)))...))
	defer span.End()
	res, uses, err := s.runTask(ctx, t, run)
	if !span.IsRecording() {
		return res, uses, err
	}
	span.SetAttributes(telemetry.AttrToolUses.Int64(int64(uses)))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(telemetry.AttrOutcome.String("failed"))
		return res, uses, err
	}
	span.SetAttributes(telemetry.AttrOutcome.String("succeeded"), telemetry.AttrCost.Float64(res.Cost))
	if u, ok := telemetry.UsageOf(res.Metrics); ok {
		span.SetAttributes(telemetry.GenAIUsage(u)...)
	}
	return res, uses, nil
}

// tokensOf is what res says the task's model calls used, with the
// agent's model; nil when it says nothing.
func tokensOf(sp *Spec, res sdk.Result) *hearth.Tokens {
	return hearth.TokensOf(res.Metrics, sp.Model)
}

// parent is the context a span about the task's calls hangs from: the
// agent's own span when its call carried one, else the task's.
func (c *callbacks) parent(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return c.spanCtx
}

// toolAttrs are the attributes a span about a tool call starts with:
// what the call was. Paths are left out when there are none: a string
// slice attribute is built by reflection, the dearest of them.
func (c *callbacks) toolAttrs(tool string, kind sdk.ToolKind, paths []string, callID string, extra int) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 5+extra)
	a = append(a, c.taskAttr, telemetry.AttrTool.String(tool), telemetry.AttrToolKind.String(string(kind)))
	if len(paths) > 0 {
		a = append(a, telemetry.AttrToolPaths.StringSlice(paths))
	}
	if callID != "" {
		a = append(a, telemetry.AttrCallID.String(callID))
	}
	return a
}

// CheckToolUse runs the pre_tool_use guards, and notes that the call was
// asked about; traced, with the verdict. With the task not sampled it
// costs one check of the span context, not a span.
func (c *callbacks) CheckToolUse(ctx context.Context, call sdk.ToolCall) (sdk.Verdict, error) {
	parent := c.parent(ctx)
	if !trace.SpanContextFromContext(parent).IsSampled() {
		return c.checkToolUse(call)
	}
	_, span := c.s.pool.tracer.Start(parent, telemetry.SpanPreToolUse)
	v, err := c.checkToolUse(call)
	a := append(c.toolAttrs(call.Tool, call.Kind, call.Paths, call.CallID, 4), telemetry.AttrSession.String(c.s.id))
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case v.Allow:
		a = append(a, telemetry.AttrVerdict.String("allow"))
	default:
		a = append(a, telemetry.AttrVerdict.String("deny"), telemetry.AttrGuard.String(v.Guard), telemetry.AttrGuardWhy.String(v.Reason))
	}
	span.SetAttributes(a...)
	span.End()
	return v, err
}

// ReportToolUse takes a tool use the agent made (reportToolUse); traced,
// as a span from when the use began to when it ended.
func (c *callbacks) ReportToolUse(ctx context.Context, u sdk.ToolUse) error {
	if !c.span.IsSampled() {
		return c.reportToolUse(u)
	}
	end := u.At
	if end.IsZero() {
		end = c.s.pool.now()
	}
	_, span := c.s.pool.tracer.Start(c.spanCtx, telemetry.SpanToolUse,
		trace.WithTimestamp(end.Add(-u.Duration)),
		trace.WithAttributes(append(c.toolAttrs(u.Tool, u.Kind, u.Paths, u.CallID, 1), telemetry.AttrToolOut.String(u.Outcome.String()))...))
	if u.Outcome == sdk.OutcomeError {
		span.SetStatus(codes.Error, u.Error)
	}
	err := c.reportToolUse(u)
	span.End(trace.WithTimestamp(end))
	return err
}
