package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk"
)

// TestDaemonTraceJoinsTheCallersTrace: `hearth serve`, pointed at a real
// OTLP receiver by the standard environment variables, puts the spans of
// a task submitted through the Go client inside the caller's span (the
// client sends its trace context, the daemon takes it), exports them
// before it exits, and hands the trace ID back in the outcome.
func TestDaemonTraceJoinsTheCallersTrace(t *testing.T) {
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := serve(t, r.Env(telemetry.ProtocolGRPC))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{DataDir: s.dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The caller's span: an orchestrator's own, from its own tracer.
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	out, err := c.Submit(trace.ContextWithSpanContext(ctx, caller), hearth.Task{Agent: "gotour", Prompt: "summary net/http", Hints: sdk.Hints{Directories: []string{"net/http"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.TraceID != caller.TraceID().String() {
		t.Fatalf("the outcome's trace is %q, want the caller's %s", out.TraceID, caller.TraceID())
	}
	// The CLI, through the daemon, prints the trace to jump to.
	code, text, stderr := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir}, "submit", "gotour", "summary errors", "--dir", "errors")
	if m := regexp.MustCompile(`\n  trace ([0-9a-f]{32})\n`).FindStringSubmatch(text); code != 0 || m == nil || m[1] == out.TraceID {
		t.Errorf("submit through the daemon: exit %d, want a trace line of its own:\n%s%s", code, text, stderr)
	}
	// Stopping flushes: every span is at the receiver once serve exits.
	if code := s.stop(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, s.stderr)
	}
	tr := otlptest.Spans(r.Spans()).Trace(out.TraceID)
	submits := tr.Named(telemetry.SpanSubmit)
	if len(submits) != 1 || submits[0].ParentID != caller.SpanID().String() || submits[0].Service != "hearth" {
		t.Fatalf("want one %s span under the caller's span %s:\n%s", telemetry.SpanSubmit, caller.SpanID(), tr.Tree())
	}
	invokes := tr.Named(telemetry.SpanInvoke + " gotour")
	if len(invokes) != 1 || invokes[0].ParentID != submits[0].SpanID || invokes[0].Attr("gen_ai.conversation.id") != out.Session {
		t.Fatalf("want the task's invoke_agent span under the submission, on session %s:\n%s", out.Session, tr.Tree())
	}
	if len(tr.Named(telemetry.SpanPlace)) != 1 {
		t.Fatalf("no placement span:\n%s", tr.Tree())
	}
}
