package main

import (
	"context"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestClusterForwardIsOneTrace: two real hosts on an embedded etcd,
// exporting to one real OTLP receiver. A task submitted to a and
// forwarded to b, where its context is, is one trace: a's submission,
// its send to b (hearth.forward, attempt 1, naming b), b's taking of it
// (hearth.forwarded) under a's send, and b's placement and invoke_agent
// under that; each span comes from the host that made it.
func TestClusterForwardIsOneTrace(t *testing.T) {
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := newTestCluster(t)
	c.agents = `telemetry {
  endpoint = "` + r.Endpoint(telemetry.ProtocolGRPC) + `"
  protocol = "grpc"
}
` + c.agents
	a, b := c.host("a"), c.host("b")

	warm := b.submit(t, "read:pkg/bytes/buffer.go;echo:warm", "pkg/bytes")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m)
	})
	o := a.submit(t, "read:pkg/bytes/reader.go;echo:forwarded", "pkg/bytes")
	if o.Decision.Host != "b" || o.Session != warm.Session {
		t.Fatalf("submitted to a: ran on %s of host %q (%s), want %s of b", o.Session, o.Decision.Host, o.Decision.Reason, warm.Session)
	}
	if len(o.TraceID) != 32 {
		t.Fatalf("the outcome's trace ID is %q", o.TraceID)
	}
	// Each host exports on its batch processor's schedule.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	invoke := telemetry.SpanInvoke + " scripted"
	got, err := r.Wait(ctx, func(ss otlptest.Spans) bool {
		tr := ss.Trace(o.TraceID)
		return len(tr.Named(telemetry.SpanSubmit)) == 1 && len(tr.Named(telemetry.SpanForward)) == 1 &&
			len(tr.Named(telemetry.SpanForwarded)) == 1 && len(tr.Named(invoke)) == 1
	})
	if err != nil {
		t.Fatalf("%v; the receiver has:\n%s", err, otlptest.Spans(r.Spans()).Trace(o.TraceID).Tree())
	}
	tr := got.Trace(o.TraceID)
	t.Logf("the trace:\n%s", tr.Tree(string(telemetry.AttrPlacedHost), string(telemetry.AttrAttempt), string(telemetry.AttrFrom)))
	host := func(s otlptest.Span) any { return s.Resource[string(telemetry.AttrHost)] }
	chain := []struct {
		name, host string
	}{{invoke, "b"}, {telemetry.SpanForwarded, "b"}, {telemetry.SpanForward, "a"}, {telemetry.SpanSubmit, "a"}}
	for i, want := range chain {
		s := tr.Named(want.name)[0]
		if host(s) != want.host {
			t.Errorf("%s came from host %v, want %s", s.Name, host(s), want.host)
		}
		if i+1 == len(chain) {
			break
		}
		if p, ok := tr.Parent(s); !ok || p.Name != chain[i+1].name {
			t.Errorf("%s's parent is %q, want %s:\n%s", s.Name, p.Name, chain[i+1].name, tr.Tree())
		}
	}
	fwd := tr.Named(telemetry.SpanForward)[0]
	if fwd.Attr(string(telemetry.AttrPlacedHost)) != "b" || fwd.Attr(string(telemetry.AttrAttempt)) != "1" || fwd.Attr(string(telemetry.AttrOutcome)) != "succeeded" {
		t.Errorf("forward span: %v", fwd.Attrs)
	}
	if from := tr.Named(telemetry.SpanForwarded)[0].Attr(string(telemetry.AttrFrom)); from != "a" {
		t.Errorf("the forwarded span says it came from %q, want a", from)
	}
	if place := tr.Named(telemetry.SpanPlace); len(place) != 1 || host(place[0]) != "b" {
		t.Errorf("want b's one placement span in the trace:\n%s", tr.Tree())
	}
}
