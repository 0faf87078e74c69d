package telemetry_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// Exporters, batch processors and the relay start goroutines; none may
// outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) telemetry.Getenv {
	return func(k string) string { return m[k] }
}

func ptr[T any](v T) *T { return &v }

func TestDecide(t *testing.T) {
	t.Parallel()
	block := telemetry.Settings{Block: true}
	for _, c := range []struct {
		name     string
		s        telemetry.Settings
		env      map[string]string
		on       bool
		protocol string
		err      string
	}{
		{name: "nothing: off", on: false},
		{name: "a block: on, the spec's default protocol", s: block, on: true, protocol: "http/protobuf"},
		{name: "a block saying enabled = false", s: telemetry.Settings{Block: true, Disabled: true}, on: false},
		{name: "OTEL_SDK_DISABLED wins over a block", s: block, env: map[string]string{"OTEL_SDK_DISABLED": "true"}, on: false},
		{name: "OTEL_TRACES_EXPORTER=none wins over a block", s: block, env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, on: false},
		{name: "an endpoint in the environment turns it on", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true, protocol: "http/protobuf"},
		{name: "a traces endpoint too", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true, protocol: "http/protobuf"},
		{name: "OTEL_TRACES_EXPORTER=otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true, protocol: "http/protobuf"},
		{name: "another exporter is refused", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "otlp only"},
		{name: "the protocol from the environment", s: block, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true, protocol: "grpc"},
		{name: "the traces protocol wins over the general one", s: block, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, on: true, protocol: "http/json"},
		{name: "the block wins over the environment", s: telemetry.Settings{Block: true, Protocol: "grpc"}, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, on: true, protocol: "grpc"},
		{name: "an unknown protocol names its variable", s: block, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL \"thrift\""},
		{name: "a bad endpoint", s: telemetry.Settings{Block: true, Endpoint: "127.0.0.1:4317"}, err: "endpoint in the telemetry block"},
		{name: "a bad sampler", s: telemetry.Settings{Block: true, Sampler: "sometimes"}, err: "sampler \"sometimes\""},
		{name: "a ratio for a sampler without one", s: telemetry.Settings{Block: true, Sampler: "always_on", SamplerArg: ptr(0.5)}, err: "takes none"},
		{name: "a ratio past 1", s: telemetry.Settings{Block: true, Sampler: "traceidratio", SamplerArg: ptr(1.5)}, err: "between 0 and 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl, err := telemetry.Decide(c.s, env(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pl.On != c.on || pl.Protocol != c.protocol {
				t.Fatalf("got on=%v protocol=%q (%s), want on=%v protocol=%q", pl.On, pl.Protocol, pl.Why, c.on, c.protocol)
			}
			if pl.Why == "" {
				t.Fatal("the plan does not say why")
			}
		})
	}
}

func receiver(t *testing.T) *otlptest.Receiver {
	t.Helper()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestExports: spans reach a real OTLP receiver over each protocol, with
// the endpoint from the block or from the environment, and carry the
// host's resource.
func TestExports(t *testing.T) {
	t.Parallel()
	r := receiver(t)
	for _, protocol := range telemetry.Protocols {
		for _, from := range []string{"block", "env"} {
			t.Run(protocol+"/"+from, func(t *testing.T) {
				s := telemetry.Settings{Block: true, Protocol: protocol, ServiceName: "hearth-test", ResourceAttributes: map[string]string{"deployment.environment": "test"}}
				e := map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "team=agents,note=a%20b"}
				if from == "block" {
					s.Endpoint = r.Endpoint(protocol)
				} else {
					for k, v := range r.Env(protocol) {
						e[k] = v
					}
				}
				p, err := telemetry.Start(context.Background(), s, telemetry.Options{Getenv: env(e), Version: "1.2.3"})
				if err != nil {
					t.Fatal(err)
				}
				name := "span-" + protocol + "-" + from
				_, sp := p.TracerProvider().Tracer("test").Start(context.Background(), name)
				sp.SetAttributes(attribute.Int("n", 7))
				sp.End()
				if err := p.Shutdown(waitCtx(t)); err != nil {
					t.Fatal(err)
				}
				got, err := r.Wait(waitCtx(t), func(ss otlptest.Spans) bool { return len(ss.Named(name)) > 0 })
				if err != nil {
					t.Fatal(err)
				}
				s0 := got.Named(name)[0]
				if s0.Service != "hearth-test" || s0.Int("n") != 7 || s0.Resource["service.version"] != "1.2.3" ||
					s0.Resource["deployment.environment"] != "test" || s0.Resource["team"] != "agents" || s0.Resource["note"] != "a b" {
					t.Fatalf("got service %q, attrs %v, resource %v", s0.Service, s0.Attrs, s0.Resource)
				}
			})
		}
	}
}

// TestOffExportsNothing: with tracing off, by each switch, the receiver
// the environment points at hears nothing, however many spans are
// started, and the tracer provider is the no-op one.
func TestOffExportsNothing(t *testing.T) {
	t.Parallel()
	r := receiver(t)
	point := r.Env("grpc")
	for name, c := range map[string]struct {
		s   telemetry.Settings
		env map[string]string
	}{
		"no block, no variable":     {},
		"enabled = false":           {s: telemetry.Settings{Block: true, Disabled: true, Endpoint: r.Endpoint("grpc"), Protocol: "grpc"}, env: point},
		"OTEL_SDK_DISABLED=true":    {s: telemetry.Settings{Block: true, Endpoint: r.Endpoint("grpc"), Protocol: "grpc"}, env: merge(point, map[string]string{"OTEL_SDK_DISABLED": "true"})},
		"OTEL_TRACES_EXPORTER=none": {s: telemetry.Settings{Block: true, Endpoint: r.Endpoint("grpc"), Protocol: "grpc"}, env: merge(point, map[string]string{"OTEL_TRACES_EXPORTER": "none"})},
	} {
		p, err := telemetry.Start(context.Background(), c.s, telemetry.Options{Getenv: env(c.env)})
		if err != nil {
			t.Fatal(err)
		}
		if p.On() || p.Relay() != nil {
			t.Fatalf("%s: tracing is on (%s)", name, p.Plan().Why)
		}
		for range 100 {
			_, sp := p.TracerProvider().Tracer("test").Start(context.Background(), "off")
			if sp.SpanContext().IsValid() || sp.IsRecording() {
				t.Fatalf("%s: a span was recorded", name)
			}
			sp.End()
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A provider that is on, flushed, proves the receiver was listening:
	// without it, "nothing arrived" could mean a dead receiver.
	on, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true}, telemetry.Options{Getenv: env(point)})
	if err != nil {
		t.Fatal(err)
	}
	_, sp := on.TracerProvider().Tracer("test").Start(context.Background(), "on")
	sp.End()
	if err := on.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Wait(waitCtx(t), func(ss otlptest.Spans) bool { return len(ss) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "on" {
		t.Fatalf("the receiver got %s, want only the span of the provider that was on", got.Names())
	}
}

func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string)
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestSampler: the block's sampler applies; a ratio of 0 samples nothing
// at the root, and a parent-based sampler follows a sampled parent.
func TestSampler(t *testing.T) {
	t.Parallel()
	p, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Endpoint: "http://127.0.0.1:1", Sampler: "parentbased_traceidratio", SamplerArg: ptr(0.0)}, telemetry.Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	_, root := p.TracerProvider().Tracer("test").Start(context.Background(), "root")
	if root.SpanContext().IsSampled() {
		t.Fatal("a root span was sampled at ratio 0")
	}
	root.End()
	if _, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true}, telemetry.Options{Getenv: env(map[string]string{"OTEL_TRACES_SAMPLER": "most"})}); err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Fatalf("got %v, want OTEL_TRACES_SAMPLER refused", err)
	}
}

// TestRelay: a plugin's SDK exports over its connection to the host, to
// the relay; the relay uploads with the host's exporter client, and the
// plugin's spans reach the backend with the plugin's own resource.
func TestRelay(t *testing.T) {
	t.Parallel()
	r := receiver(t)
	host, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Protocol: "grpc", Endpoint: r.Endpoint("grpc")}, telemetry.Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The host's side of the plugin connection.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, host.Relay())
	go srv.Serve(l)
	defer srv.Stop()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The plugin's side.
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	ptp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("hearth.coder"))))
	for range 3 {
		_, sp := ptp.Tracer("agent").Start(context.Background(), "agent-span")
		sp.End()
	}
	if err := ptp.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := host.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Wait(waitCtx(t), func(ss otlptest.Spans) bool { return len(ss.Named("agent-span")) == 3 })
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s.Service != "hearth.coder" {
			t.Fatalf("relayed span from service %q, want the plugin's hearth.coder", s.Service)
		}
	}
	if st := host.Relay().Stats(); st.Spans != 3 || st.Dropped != 0 || st.FailedBatches != 0 {
		t.Fatalf("relay stats %+v, want 3 spans relayed", st)
	}
}

// TestTraceURL: the dashboard's link, made from the template.
func TestTraceURL(t *testing.T) {
	t.Parallel()
	p, err := telemetry.Start(context.Background(), telemetry.Settings{Block: true, Disabled: true, TraceURL: "http://localhost:16686/trace/{trace_id}"}, telemetry.Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.TraceURL("abc"); got != "http://localhost:16686/trace/abc" {
		t.Fatalf("got %q", got)
	}
	if got := p.TraceURL(""); got != "" {
		t.Fatalf("got %q for no trace", got)
	}
	for _, bad := range []string{"http://localhost:16686/trace/", "localhost/{trace_id}"} {
		if telemetry.CheckTraceURL(bad) == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
