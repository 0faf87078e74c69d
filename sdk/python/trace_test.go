package python

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
