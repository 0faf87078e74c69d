package model

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// oneResponse is a Provider that answers every request with r.
type oneResponse struct{ r Response }

func (p oneResponse) Complete(context.Context, Request) (Response, error) { return p.r, nil }

// TestResponseIDIsBounded: the provider's response ID goes on the call's
// span as it came, up to maxResponseID bytes; an endpoint that sends
// megabytes does not put them in every trace.
func TestResponseIDIsBounded(t *testing.T) {
	// Not parallel: the tracer provider is the process's.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)
	for _, id := range []string{"msg_01", strings.Repeat("é", 1<<20)} {
		exp.Reset()
		a := &Agent{s: Settings{Model: "m", Provider: ProviderAnthropic}, provider: oneResponse{Response{ID: id}}}
		if _, err := a.complete(context.Background(), Request{}); err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		var got string
		for _, kv := range spans[0].Attributes {
			if kv.Key == "gen_ai.response.id" {
				got = kv.Value.AsString()
			}
		}
		if len(got) > maxResponseID || !strings.HasPrefix(id, got) || got == "" || (len(id) <= maxResponseID && got != id) {
			t.Errorf("an ID of %d bytes is on the span as %d bytes (%.20q...), want it whole up to %d", len(id), len(got), got, maxResponseID)
		}
	}
}
