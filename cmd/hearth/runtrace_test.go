package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestRunsShowTheirTrace: a run made by `hearth run` with a telemetry
// block that exports to a real OTLP receiver records its trace; `runs
// show` prints the trace ID with the trace_url link, and --json gives it
// for the run and each task; the run's spans reached the receiver under
// that ID before the command exited.
func TestRunsShowTheirTrace(t *testing.T) {
	t.Parallel()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	cfg := writeConfigIn(t, dir, `telemetry {
  endpoint  = "`+r.Endpoint(telemetry.ProtocolGRPC)+`"
  protocol  = "grpc"
  trace_url = "http://localhost:16686/trace/{trace_id}"
}

agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}

pipeline "pair" {
  agent = "scripted"
  task "first" {
    prompt = "echo:first"
  }
  task "second" {
    prompt     = "echo:second"
    depends_on = ["first"]
  }
}
`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": t.TempDir()}
	var res runResult
	runJSON(t, env, &res, "run", "pair", "--json")
	id := res.Run.TraceID
	if len(id) != 32 {
		t.Fatalf("the run's trace ID is %q, want 32 hex digits", id)
	}
	var shown runShowJSON
	runJSON(t, env, &shown, "runs", "show", res.Run.ID, "--json")
	if shown.TraceID != id || len(shown.TaskList) != 2 {
		t.Fatalf("runs show --json: trace %q with %d tasks, want %s with 2", shown.TraceID, len(shown.TaskList), id)
	}
	for _, task := range shown.TaskList {
		if task.TraceID != id {
			t.Fatalf("runs show --json: task %s's trace is %q, want the run's %s", task.Name, task.TraceID, id)
		}
	}
	code, out, errOut := run(t, env, "runs", "show", res.Run.ID)
	if want := "trace       " + id + " (http://localhost:16686/trace/" + id + ")"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("runs show: exit %d, want the line %q:\n%s%s", code, want, out, errOut)
	}
	tr := otlptest.Spans(r.Spans()).Trace(id)
	if len(tr.Named(telemetry.SpanRun)) != 1 || len(tr.Named(telemetry.SpanTask)) != 2 || len(tr.Named(telemetry.SpanAttempt)) != 2 {
		t.Fatalf("the run's spans at the receiver under trace %s:\n%s", id, tr.Tree())
	}
}
