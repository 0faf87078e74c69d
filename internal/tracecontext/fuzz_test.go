package tracecontext_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/hearth-dev/hearth/internal/tracecontext"
)

// FuzzIncoming: whatever traceparent and tracestate a caller sends (the
// daemon's API takes them from any authenticated caller, a plugin's
// callbacks from its plugin), Incoming never panics, and yields either no
// span context or a valid remote one with non-zero IDs that goes out
// again (Outgoing) as the same trace and span.
func FuzzIncoming(f *testing.F) {
	for _, s := range [][2]string{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "congo=t61rcWkgMzE"},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"01-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01-extra", "a=b,c=d"},
		{"", ""},
		{"00-xyz", "=,=,"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, parent, state string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(tracecontext.Header, parent, "tracestate", state))
		sc := trace.SpanContextFromContext(tracecontext.Incoming(ctx))
		if !sc.IsValid() {
			return
		}
		if !sc.IsRemote() || !sc.TraceID().IsValid() || !sc.SpanID().IsValid() {
			t.Fatalf("%q gave %+v", parent, sc)
		}
		out := tracecontext.Outgoing(trace.ContextWithSpanContext(context.Background(), sc))
		md, _ := metadata.FromOutgoingContext(out)
		back := trace.SpanContextFromContext(tracecontext.Incoming(metadata.NewIncomingContext(context.Background(), md)))
		if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() || back.IsSampled() != sc.IsSampled() {
			t.Fatalf("%q: %s/%s went out and came back as %s/%s", parent, sc.TraceID(), sc.SpanID(), back.TraceID(), back.SpanID())
		}
	})
}
