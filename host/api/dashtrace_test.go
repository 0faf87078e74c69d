package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestDashboardLinksRunsToTheirTraces: a daemon that traces (to a real
// OTLP receiver on loopback) with a trace_url in its telemetry block
// shows, in a real headless chromium, each run's trace ID beside the run
// and each task's beside the task, linked to the trace backend; the IDs
// are the ones the run records and its spans were exported under.
func TestDashboardLinksRunsToTheirTraces(t *testing.T) {
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const tmpl = "http://localhost:16686/trace/{trace_id}"
	settings := telemetry.Settings{Block: true, Protocol: telemetry.ProtocolGRPC, Endpoint: r.Endpoint(telemetry.ProtocolGRPC), TraceURL: tmpl}
	tp, err := telemetry.Start(context.Background(), settings, telemetry.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p := page{t, browser(t)}
	d := startTracedDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}, Telemetry: settings}, tp)

	rs, err := d.c.StartRun(context.Background(), hearth.RunSpec{RunOptions: hearth.RunOptions{Config: pipelineFile(t, t.TempDir(), "")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	detail, err := d.c.Run(context.Background(), rs.ID())
	if err != nil {
		t.Fatal(err)
	}
	id := detail.TraceID
	if len(id) != 32 {
		t.Fatalf("the run's trace ID through the daemon is %q, want 32 hex digits", id)
	}
	for _, task := range detail.TaskList {
		if task.TraceID != id {
			t.Fatalf("task %s's trace ID through the daemon is %q, want the run's %s", task.Name, task.TraceID, id)
		}
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := otlptest.Spans(r.Spans()).Trace(id).Named(telemetry.SpanRun); len(got) != 1 {
		t.Fatalf("%d hearth.run spans exported under trace %s, want 1", len(got), id)
	}

	link, _, err := d.l.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	p.do("its page", chromedp.Navigate(link))
	run := fmt.Sprintf(`#runs tr[data-run=%q][data-status="completed"]`, rs.ID())
	p.wait("the completed run", run)
	want := "http://localhost:16686/trace/" + id
	if href := p.attr(run+" .trace a", "href"); href != want {
		t.Errorf("the run's trace link is %q, want %q", href, want)
	}
	if txt := p.text(run + " .trace"); !contains(txt, id) {
		t.Errorf("the run's row shows %q, want its trace ID %s", txt, id)
	}
	for _, task := range []string{"a", "b", "c", "d"} {
		sel := fmt.Sprintf(`#task-traces li[data-task=%q] .trace a`, task)
		p.wait("task "+task+"'s trace", sel)
		if href := p.attr(sel, "href"); href != want {
			t.Errorf("task %s's trace link is %q, want %q", task, href, want)
		}
	}
}
