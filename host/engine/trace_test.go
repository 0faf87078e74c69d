package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// tracedHost starts a host whose tracing exports to a real OTLP receiver
// on loopback, over protocol. The provider is shut down (flushed) after
// the host closes.
func tracedHost(t testing.TB, r *otlptest.Receiver, protocol string, cfg *config.Config) (*Engine, *telemetry.Provider) {
	t.Helper()
	return tracedHostAt(t, r.Endpoint(protocol), protocol, cfg)
}

// tracedHostAt is tracedHost exporting to the receiver at endpoint.
func tracedHostAt(t testing.TB, endpoint, protocol string, cfg *config.Config) (*Engine, *telemetry.Provider) {
	t.Helper()
	tp, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Protocol: protocol, Endpoint: endpoint},
		telemetry.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Matcher = config.DefaultMatcher()
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})
	if _, bench := t.(*testing.B); bench {
		logger = hclog.NewNullLogger()
	}
	h, err := New(Options{Config: cfg, Telemetry: tp, Logger: logger})
	if err != nil {
		_ = tp.Shutdown(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Close(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	return h, tp
}

func spanCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestTraceOfATask: a task submitted to a host that traces arrives at a
// real OTLP receiver as one trace: the submission, its placement with the
// decision's factors and the spawn under it, the task on its session
// (invoke_agent) with the span the agent started inside the plugin
// process beneath it, relayed through the host, the agent's question
// under the agent's span with the guards' verdict, its tool use under
// the task, and the gate; and the outcome names the trace.
func TestTraceOfATask(t *testing.T) {
	t.Parallel()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deny := rule(t, guard.Spec{Name: "no-secrets", Hook: guard.PreToolUse, Condition: `any(paths, glob(#, "**/secret*"))`, Message: "secrets stay put"})
	gate := rule(t, guard.Spec{Name: "quality", Hook: guard.TaskResult, Condition: `result.metrics.quality < 0.5`, Action: "retry", Message: "too low"})
	for _, protocol := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTPProtobuf} {
		t.Run(protocol, func(t *testing.T) {
			h, tp := tracedHost(t, r, protocol, &config.Config{Agents: []*config.Agent{testAgent("scripted", "agent")}, Guards: []*guard.Rule{deny, gate}})
			out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "span:edit-" + protocol + ";read:app/main.go;read:app/secret.txt;endspan;traceid;metric:quality=0.9"})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.TraceID) != 32 {
				t.Fatalf("outcome trace ID %q", out.TraceID)
			}
			// The agent was handed the task's trace: its ctx carried it.
			if !strings.Contains(out.Result.Output, "trace="+out.TraceID) {
				t.Fatalf("the agent saw %q, want the task's trace %s", out.Result.Output, out.TraceID)
			}
			if err := tp.ForceFlush(spanCtx(t)); err != nil {
				t.Fatal(err)
			}
			got, err := r.Wait(spanCtx(t), func(ss otlptest.Spans) bool {
				tr := ss.Trace(out.TraceID)
				return len(tr.Named(telemetry.SpanSubmit)) == 1 && len(tr.Named("edit-"+protocol)) == 1 && len(tr.Named(telemetry.SpanToolUse)) == 2
			})
			if err != nil {
				t.Fatal(err)
			}
			tr := got.Trace(out.TraceID)
			t.Logf("the trace:\n%s", tr.Tree(string(telemetry.AttrAction), string(telemetry.AttrVerdict), string(telemetry.AttrGuard), string(telemetry.AttrToolPaths)))
			one := func(name string) otlptest.Span {
				t.Helper()
				ss := tr.Named(name)
				if len(ss) != 1 {
					t.Fatalf("%d spans named %q in the trace, want 1:\n%s", len(ss), name, tr.Tree())
				}
				return ss[0]
			}
			parentOf := func(s otlptest.Span, want string) {
				t.Helper()
				p, ok := tr.Parent(s)
				if !ok || p.Name != want {
					t.Fatalf("%s's parent is %q, want %q:\n%s", s.Name, p.Name, want, tr.Tree())
				}
			}
			submit := one(telemetry.SpanSubmit)
			if submit.ParentID != "" || submit.Service != "hearth" || submit.Attr(string(telemetry.AttrOutcome)) != "succeeded" {
				t.Fatalf("submit span: %+v", submit)
			}
			place := one(telemetry.SpanPlace)
			parentOf(place, telemetry.SpanSubmit)
			if place.Attr(string(telemetry.AttrAction)) != "spawned" || place.Attr(string(telemetry.AttrPlaced)) != out.Session ||
				place.Attr(string(telemetry.AttrThreshold)) != "0.6" || place.Attr(string(telemetry.AttrReason)) != out.Decision.Reason {
				t.Fatalf("placement span: %v", place.Attrs)
			}
			parentOf(one(telemetry.SpanSpawn), telemetry.SpanPlace)
			invoke := one(telemetry.SpanInvoke + " scripted")
			parentOf(invoke, telemetry.SpanSubmit)
			if invoke.Kind != "client" || invoke.Attr("gen_ai.operation.name") != "invoke_agent" || invoke.Attr("gen_ai.conversation.id") != out.Session ||
				invoke.Int(string(telemetry.AttrToolUses)) != 2 {
				t.Fatalf("invoke span: %s %v", invoke.Kind, invoke.Attrs)
			}
			// The agent's own span, from the plugin process, relayed.
			edit := one("edit-" + protocol)
			parentOf(edit, invoke.Name)
			if edit.Service != "hearth.scripted" || edit.Resource["hearth.session.id"] != out.Session {
				t.Fatalf("the agent's span came from %q (%v), want the plugin's service", edit.Service, edit.Resource)
			}
			checks := tr.Named(telemetry.SpanPreToolUse)
			if len(checks) != 2 {
				t.Fatalf("%d pre-tool-use spans, want 2:\n%s", len(checks), tr.Tree())
			}
			verdicts := map[string]string{}
			for _, c := range checks {
				parentOf(c, edit.Name) // asked inside the agent's span
				verdicts[c.Attr(string(telemetry.AttrToolPaths))] = c.Attr(string(telemetry.AttrVerdict)) + " " + c.Attr(string(telemetry.AttrGuard))
			}
			if verdicts["[app/main.go]"] != "allow " || verdicts["[app/secret.txt]"] != "deny no-secrets" {
				t.Fatalf("verdicts %v", verdicts)
			}
			for _, u := range tr.Named(telemetry.SpanToolUse) {
				parentOf(u, invoke.Name)
			}
			g := one(telemetry.SpanGate)
			parentOf(g, telemetry.SpanSubmit)
			if g.Attr(string(telemetry.AttrVerdict)) != "pass" {
				t.Fatalf("gate span %v", g.Attrs)
			}
		})
	}
}

// TestTracingOffExportsNothing: a host whose telemetry is off (the
// block's enabled = false, with the environment pointing at a receiver)
// exports nothing through a task with tool uses and an agent that starts
// spans of its own, and hands neither the outcome nor the agent a trace.
func TestTracingOffExportsNothing(t *testing.T) {
	t.Parallel()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	envOn := func(k string) string { return r.Env("grpc")[k] }
	tp, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Disabled: true}, telemetry.Options{Getenv: envOn})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher()}
	h, err := New(Options{Config: cfg, Telemetry: tp, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "span:mine;read:a.go;tools:50;endspan;traceid"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.TraceID != "" || !strings.Contains(out.Result.Output, "trace=") || strings.Contains(out.Result.Output, "trace=0") {
		t.Fatalf("tracing off, yet the outcome's trace is %q and the agent saw %q", out.TraceID, out.Result.Output)
	}
	if n := r.Requests(); n != 0 {
		t.Fatalf("the receiver got %d export requests from a host with tracing off: %s", n, otlptest.Spans(r.Spans()).Names())
	}
	// The same receiver hears a host that traces: its silence above was
	// not a dead receiver.
	h2, tp2 := tracedHost(t, r, telemetry.ProtocolGRPC, &config.Config{Agents: []*config.Agent{testAgent("scripted", "agent")}})
	if _, err := h2.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:hi"}); err != nil {
		t.Fatal(err)
	}
	if err := tp2.ForceFlush(spanCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Wait(spanCtx(t), func(ss otlptest.Spans) bool { return len(ss.Named(telemetry.SpanSubmit)) > 0 }); err != nil {
		t.Fatal(err)
	}
}
