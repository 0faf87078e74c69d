// Package tracecontext carries the W3C trace context (the traceparent and
// tracestate headers) in gRPC metadata, across the boundaries hearth owns
// both sides of: a host's calls into its plugins and their calls back.
// It is the OpenTelemetry API's TraceContext propagator over a metadata
// carrier, and nothing else, so that the SDK and the daemon's client link
// no more of OpenTelemetry than its API.
//
// Only a valid span context is sent: a ctx without one (tracing off)
// adds nothing to a call, and costs a type assertion.
package tracecontext

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// Propagator is the W3C Trace Context propagator hearth speaks on every
// boundary.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Header is the metadata key that carries a span context.
const Header = "traceparent"

// Outgoing returns ctx with its span context, if it has a valid one, in
// the outgoing gRPC metadata.
func Outgoing(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	c := carrier{}
	Propagator.Inject(ctx, c)
	kv := make([]string, 0, 2*len(c))
	for k, v := range c {
		kv = append(kv, k, v)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// Incoming returns ctx with the remote span context its incoming gRPC
// metadata carries, or ctx as it is when the metadata carries none.
func Incoming(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok || len(md.Get(Header)) == 0 {
		return ctx
	}
	return Propagator.Extract(ctx, mdCarrier(md))
}

// Inject writes ctx's span context into m (traceparent, tracestate), for
// carriers other than gRPC metadata; nothing when it has none.
func Inject(ctx context.Context, m map[string]string) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		Propagator.Inject(ctx, propagation.MapCarrier(m))
	}
}

// Extract returns ctx with the remote span context m carries.
func Extract(ctx context.Context, m map[string]string) context.Context {
	if m[Header] == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier(m))
}

// carrier collects what a propagator injects.
type carrier map[string]string

func (c carrier) Get(k string) string { return c[k] }
func (c carrier) Set(k, v string)     { c[k] = v }
func (c carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// mdCarrier reads incoming metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(k string) string {
	if v := metadata.MD(c).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c mdCarrier) Set(k, v string) { metadata.MD(c).Set(k, v) }
func (c mdCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}
