package plugin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/internal/tracecontext"
)

// Tracing in a plugin process.
//
// A host that traces says so when it attaches (AttachRequest's
// telemetry_service), and serves OpenTelemetry's OTLP TraceService beside
// its callbacks. The plugin then gets a tracer provider, installed as
// OpenTelemetry's global one (otel.SetTracerProvider) so that an agent's
// otel.Tracer(...) and the libraries it uses find it, whose exporter
// sends over that same connection: the plugin needs no network of its
// own and no credentials, and its spans reach the host's backend with the
// host's. Each task's Run gets a ctx holding the task's span context, so
// a span the agent starts from it joins the task's trace; the spans a
// task ended are sent before its result.
//
// Only Serve installs the provider: a harness that serves an agent inside
// a test's process (sdktest) leaves the process's globals alone.

// flushTimeout bounds the export of a task's spans before its result goes
// back: a host that does not take them costs the spans, not the task.
const flushTimeout = 2 * time.Second

// pluginTracing is a plugin process's tracing, installed on the first
// attach of a host that traces. A retried attach brings a new
// connection, which the exporter switches to.
type pluginTracing struct {
	mu  sync.Mutex
	tp  *sdktrace.TracerProvider
	exp *connExporter
	// ended counts the spans ended in this process; flushed is what it
	// was when the last flush began. A task whose agent ended no span
	// since then has nothing to send, and its result does not wait on a
	// flush: a round trip through the batch processor's goroutine, which
	// on a busy machine costs milliseconds a task.
	ended   endCounter
	flushed atomic.Uint64
}

// endCounter is a span processor that counts the spans that end.
type endCounter struct{ n atomic.Uint64 }

func (c *endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *endCounter) OnEnd(sdktrace.ReadOnlySpan)                     { c.n.Add(1) }
func (c *endCounter) Shutdown(context.Context) error                  { return nil }
func (c *endCounter) ForceFlush(context.Context) error                { return nil }

// processTracing is the one of this process; Serve enables it.
var processTracing = &pluginTracing{}

// attach installs the provider, or points its exporter at conn.
func (t *pluginTracing) attach(conn *grpc.ClientConn, service, agent, session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tp == nil {
		t.exp = &connExporter{}
		res := resource.NewSchemaless(semconv.ServiceName(service),
			attribute.String("hearth.agent", agent), attribute.String("hearth.session.id", session))
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(t.exp), sdktrace.WithSpanProcessor(&t.ended), sdktrace.WithResource(res),
			// The host decided: a task's span context says whether it is
			// sampled, and the agent's spans follow it.
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		otel.SetTracerProvider(t.tp)
		otel.SetTextMapPropagator(tracecontext.Propagator)
	}
	t.exp.use(conn)
}

// flush sends the spans ended so far, within flushTimeout; it returns at
// once when none ended since the last flush began.
func (t *pluginTracing) flush(ctx context.Context) {
	t.mu.Lock()
	tp := t.tp
	t.mu.Unlock()
	if tp == nil {
		return
	}
	// Every span counted in seen ended before ForceFlush begins, so is
	// in the batch processor's queue, and is sent by it.
	seen := t.ended.n.Load()
	if seen == t.flushed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if tp.ForceFlush(ctx) == nil {
		for {
			f := t.flushed.Load()
			if f >= seen || t.flushed.CompareAndSwap(f, seen) {
				return
			}
		}
	}
}

// connExporter exports over the current host connection.
type connExporter struct {
	mu  sync.Mutex
	exp sdktrace.SpanExporter
}

func (e *connExporter) use(conn *grpc.ClientConn) {
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithGRPCConn(conn))
	if err != nil {
		return
	}
	e.mu.Lock()
	old := e.exp
	e.exp = exp
	e.mu.Unlock()
	if old != nil {
		// It does not close the connection it was given.
		_ = old.Shutdown(context.Background())
	}
}

func (e *connExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	exp := e.exp
	e.mu.Unlock()
	if exp == nil {
		return nil
	}
	return exp.ExportSpans(ctx, spans)
}

func (e *connExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	exp := e.exp
	e.exp = nil
	e.mu.Unlock()
	if exp == nil {
		return nil
	}
	return exp.Shutdown(ctx)
}

// HostOptions are a host's side of the plugins it dispenses.
type HostOptions struct {
	// Agent is the configured agent's name, told to the plugin when it
	// attaches.
	Agent string
	// Traces, when set, takes the spans the plugins export: the host's
	// relay to its trace backend. Plugins are told the host traces only
	// when it is set.
	Traces coltracepb.TraceServiceServer
	// TraceService is the service.name a plugin's spans carry
	// ("hearth.coder").
	TraceService string
}
