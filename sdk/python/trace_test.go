package python

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestPythonAgentGetsTheTaskTraceContext: a Python agent under a host
// that traces is handed the W3C trace context of its task's invoke_agent
// span (Task.trace_context), so that spans it starts join the task's
// trace; under a host that does not, the context is empty.
func TestPythonAgentGetsTheTaskTraceContext(t *testing.T) {
	t.Parallel()
	python := needPython(t)
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, on := range []bool{true, false} {
		s := telemetry.Settings{Block: true, Protocol: telemetry.ProtocolGRPC, Endpoint: r.Endpoint(telemetry.ProtocolGRPC), Disabled: !on}
		tp, err := telemetry.Start(context.Background(), s, telemetry.Options{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cfg, err := config.Parse([]byte(agentHCL(python, sdkDir(t), "", "")), filepath.Join(dir, "hearth.hcl"), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = filepath.Join(dir, "data")
		h, err := engine.New(engine.Options{Config: cfg, Telemetry: tp, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "traceparent"})
		_ = h.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		got, _ := strings.CutPrefix(out.Result.Output, "traceparent=")
		if !on {
			if got != "" {
				t.Errorf("tracing off, yet the agent was handed %q", got)
			}
			continue
		}
		// traceparent: version-traceid-spanid-flags, the span being the
		// task's invoke_agent span.
		parts := strings.Split(got, "-")
		if len(parts) != 4 || parts[1] != out.TraceID || parts[3] != "01" {
			t.Fatalf("the agent was handed %q, want a sampled traceparent in trace %s", got, out.TraceID)
		}
		invoke := otlptest.Spans(r.Spans()).Trace(out.TraceID).Named(telemetry.SpanInvoke + " scripted")
		if len(invoke) != 1 || invoke[0].SpanID != parts[2] {
			t.Fatalf("the traceparent's span %s is not the task's invoke_agent span: %+v", parts[2], invoke)
		}
	}
}

// TestPythonAgentSpansJoinTheTaskTrace: spans a Python agent starts with
// cb.span reach the host's trace backend through the host (the SDK's
// relay, no network or OpenTelemetry package of the agent's), in the
// task's trace: the outer one a child of the task's invoke_agent span,
// a nested one its child, the host's hearth.pre_tool_use span of a check
// made inside it under it, a span an exception left marked an error; with
// the attributes and the resource the Go SDK's spans carry. With tracing
// off the same agent runs and nothing is exported.
func TestPythonAgentSpansJoinTheTaskTrace(t *testing.T) {
	python := needPython(t)
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const prompt = "span:plan;span:inner;read:a.py;endspan;endspan;failspan:oops;echo:done"
	for _, on := range []bool{false, true} {
		s := telemetry.Settings{Block: true, Protocol: telemetry.ProtocolGRPC, Endpoint: r.Endpoint(telemetry.ProtocolGRPC), Disabled: !on}
		tp, err := telemetry.Start(context.Background(), s, telemetry.Options{Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cfg, err := config.Parse([]byte(agentHCL(python, sdkDir(t), "", "")), filepath.Join(dir, "hearth.hcl"), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = filepath.Join(dir, "data")
		h, err := engine.New(engine.Options{Config: cfg, Telemetry: tp, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt})
		_ = h.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(out.Result.Output, "done") {
			t.Fatalf("tracing on=%v: the agent said %q, want it to end with done", on, out.Result.Output)
		}
		if !on {
			if n := r.Received(); n != 0 {
				t.Fatalf("tracing off, yet %d spans were exported", n)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		spans, err := r.Wait(ctx, func(ss otlptest.Spans) bool {
			ss = ss.Trace(out.TraceID)
			return len(ss.Named("plan")) > 0 && len(ss.Named("oops")) > 0 && len(ss.Named(telemetry.SpanPreToolUse)) > 0
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		tr := otlptest.Spans(spans).Trace(out.TraceID)
		one := func(name string) otlptest.Span {
			t.Helper()
			ss := tr.Named(name)
			if len(ss) != 1 {
				t.Fatalf("%d spans named %q in the task's trace, want 1:\n%s", len(ss), name, tr.Tree())
			}
			return ss[0]
		}
		invoke, plan, inner, oops, pre := one(telemetry.SpanInvoke+" scripted"), one("plan"), one("inner"), one("oops"), one(telemetry.SpanPreToolUse)
		for _, c := range []struct {
			child, parent otlptest.Span
		}{{plan, invoke}, {inner, plan}, {pre, inner}, {oops, invoke}} {
			if c.child.ParentID != c.parent.SpanID {
				t.Errorf("%s's parent is %s, want %s (%s):\n%s", c.child.Name, c.child.ParentID, c.parent.SpanID, c.parent.Name, tr.Tree())
			}
		}
		for _, sp := range []otlptest.Span{plan, inner, oops} {
			if sp.Service != "hearth.scripted" || sp.Scope != "hearth_agent" || sp.Resource["hearth.agent"] != "scripted" || sp.Resource["hearth.session.id"] != out.Session {
				t.Errorf("%s: service %q, scope %q, resource %v; want hearth.scripted, hearth_agent, the agent and session %s", sp.Name, sp.Service, sp.Scope, sp.Resource, out.Session)
			}
			if sp.Start.After(sp.End) || sp.Start.Before(invoke.Start) || sp.End.After(invoke.End) {
				t.Errorf("%s ran %v to %v, outside its task's %v to %v", sp.Name, sp.Start, sp.End, invoke.Start, invoke.End)
			}
		}
		if plan.Attr("hearth.test.step") != "plan" || plan.Int("hearth.test.n") != 1 {
			t.Errorf("plan's attributes are %v, want hearth.test.step=plan and the integer hearth.test.n=1", plan.Attrs)
		}
		if pre.Attr(string(telemetry.AttrVerdict)) != "allow" {
			t.Errorf("the check's span says %v, want verdict allow", pre.Attrs)
		}
		if oops.Status != "error" || oops.StatusMessage != "ValueError: oops failed" {
			t.Errorf("oops: status %q %q, want error with the exception", oops.Status, oops.StatusMessage)
		}
	}
}
