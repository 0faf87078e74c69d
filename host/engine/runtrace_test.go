package engine

import (
	"context"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestTraceOfARun: a two-stage run started from inside a caller's span
// arrives at a real OTLP receiver as one trace under that span: the
// run's span, a span per task with its stage, a span per attempt (the
// first task's failed attempt and its retry, numbered), each attempt's
// placement, invoke_agent and quality gate under the attempt, and the
// checkpoints under the task they are about; and the run and its tasks
// record the trace's ID.
func TestTraceOfARun(t *testing.T) {
	t.Parallel()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	gate := rule(t, guard.Spec{Name: "quality", Hook: guard.TaskResult, Condition: `result.metrics.quality < 0.5`, Action: "retry", Message: "too low"})
	h, tp := tracedHost(t, r, telemetry.ProtocolGRPC, &config.Config{Agents: []*config.Agent{testAgent("scripted", "agent")}, Guards: []*guard.Rule{gate}})
	p := pipe("traced", []string{"build", "failuntil:2;metric:quality=0.9"}, []string{"check", "checkpoint:midway;metric:quality=0.9", "build"})
	p.Tasks[0].Stage, p.Tasks[1].Stage = "building", "checking"

	ctx, caller := tp.TracerProvider().Tracer("test").Start(context.Background(), "caller")
	rh, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: p})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	defer rh.Close()
	if info, err := waitRun(t, rh); err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("run: %s, %v", info.Status, err)
	}
	d, err := h.Run(context.Background(), rh.ID())
	if err != nil {
		t.Fatal(err)
	}
	traceID := caller.SpanContext().TraceID().String()
	if d.TraceID != traceID {
		t.Fatalf("the run records trace %q, want the caller's %s", d.TraceID, traceID)
	}
	for _, task := range d.TaskList {
		if task.TraceID != traceID {
			t.Fatalf("task %s records trace %q, want the run's %s", task.Name, task.TraceID, traceID)
		}
	}

	if err := tp.ForceFlush(spanCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Wait(spanCtx(t), func(ss otlptest.Spans) bool {
		tr := ss.Trace(traceID)
		return len(tr.Named(telemetry.SpanRun)) == 1 && len(tr.Named(telemetry.SpanTask)) == 2 && len(tr.Named(telemetry.SpanAttempt)) == 3 &&
			len(tr.Named(telemetry.SpanGate)) == 2 && len(tr.Named(telemetry.SpanCheckpoint).With(string(telemetry.AttrLabel), "midway")) == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := got.Trace(traceID)
	t.Logf("the trace:\n%s", tr.Tree(string(telemetry.AttrTaskName), string(telemetry.AttrAttempt), string(telemetry.AttrOutcome), string(telemetry.AttrLabel)))
	parent := func(s otlptest.Span) otlptest.Span {
		t.Helper()
		p, ok := tr.Parent(s)
		if !ok {
			t.Fatalf("%s has no parent in the trace:\n%s", s.Name, tr.Tree())
		}
		return p
	}
	run := tr.Named(telemetry.SpanRun)[0]
	if p := parent(run); p.Name != "caller" {
		t.Fatalf("the run's parent is %q, want the caller's span", p.Name)
	}
	if run.Attr(string(telemetry.AttrRun)) != rh.ID() || run.Attr(string(telemetry.AttrOutcome)) != "completed" || run.Attr(string(telemetry.AttrPipeline)) != "traced" {
		t.Fatalf("run span: %v", run.Attrs)
	}
	tasks := map[string]otlptest.Span{}
	for _, s := range tr.Named(telemetry.SpanTask) {
		tasks[s.Attr(string(telemetry.AttrTaskName))] = s
		if p := parent(s); p.SpanID != run.SpanID {
			t.Fatalf("task span %v's parent is %s, want the run's", s.Attrs, p.Name)
		}
		if s.Attr(string(telemetry.AttrOutcome)) != "succeeded" || s.Attr(string(telemetry.AttrRun)) != rh.ID() {
			t.Fatalf("task span: %v", s.Attrs)
		}
	}
	if tasks["build"].Attr(string(telemetry.AttrStage)) != "building" || tasks["check"].Attr(string(telemetry.AttrStage)) != "checking" {
		t.Fatalf("task spans' stages: build %v, check %v", tasks["build"].Attrs, tasks["check"].Attrs)
	}
	attempts := map[string]string{}
	for _, a := range tr.Named(telemetry.SpanAttempt) {
		name := a.Attr(string(telemetry.AttrTaskName))
		if p := parent(a); p.SpanID != tasks[name].SpanID {
			t.Fatalf("attempt %v's parent is %s %v, want task %s's span", a.Attrs, p.Name, p.Attrs, name)
		}
		outcome := a.Attr(string(telemetry.AttrOutcome))
		attempts[name+" "+a.Attr(string(telemetry.AttrAttempt))] = outcome
		if a.Attr(string(telemetry.AttrRun)) != rh.ID() || a.Attr(string(telemetry.AttrTask)) == "" || a.Attr(string(telemetry.AttrStage)) != tasks[name].Attr(string(telemetry.AttrStage)) {
			t.Fatalf("attempt span: %v", a.Attrs)
		}
		// The attempt's placement, its run on a session and its gate
		// are its own children.
		kids := map[string]int{}
		for _, k := range tr.Children(a) {
			kids[k.Name]++
		}
		wantGate := 0
		if outcome == "succeeded" {
			wantGate = 1
		}
		if kids[telemetry.SpanPlace] != 1 || kids[telemetry.SpanInvoke+" scripted"] != 1 || kids[telemetry.SpanGate] != wantGate {
			t.Fatalf("attempt %s %s's children: %v, want a placement, an invoke_agent and %d gate:\n%s", name, a.Attr(string(telemetry.AttrAttempt)), kids, wantGate, tr.Tree())
		}
	}
	if want := map[string]string{"build 1": "failed", "build 2": "succeeded", "check 1": "succeeded"}; len(attempts) != 3 ||
		attempts["build 1"] != want["build 1"] || attempts["build 2"] != want["build 2"] || attempts["check 1"] != want["check 1"] {
		t.Fatalf("attempts %v, want %v", attempts, want)
	}
	for label, task := range map[string]string{"midway": "check", "task build succeeded": "build", "task check succeeded": "check"} {
		cs := tr.Named(telemetry.SpanCheckpoint).With(string(telemetry.AttrLabel), label)
		if len(cs) != 1 {
			t.Fatalf("%d checkpoint spans labelled %q, want 1:\n%s", len(cs), label, tr.Tree())
		}
		if p := parent(cs[0]); p.SpanID != tasks[task].SpanID {
			t.Fatalf("checkpoint %q's parent is %s %v, want task %s's span", label, p.Name, p.Attrs, task)
		}
	}
}
