// Package telemetry is hearth's tracing: an OpenTelemetry tracer provider
// made from the config's telemetry block and the standard OTEL_*
// environment variables, exported over OTLP (gRPC, HTTP with protobuf, or
// HTTP with JSON) with the official Go SDK; the W3C trace context carried
// in gRPC metadata across hearth's process boundaries (the plugins' calls,
// the daemon's API, the forward between hosts); and the relay that takes
// the spans a plugin exports over its host connection and sends them on
// with the host's own exporter, so that a plugin needs neither network
// nor the backend's credentials.
//
// # When tracing is on
//
// Tracing is off by default: the provider is then OpenTelemetry's no-op,
// nothing is sampled, nothing is exported, and no connection is made. It
// is on when
//
//   - the config has a telemetry block (its enabled attribute defaults to
//     true), or
//   - the environment asks for OTLP the standard way: OTEL_TRACES_EXPORTER
//     names otlp, or OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
//
// and it is off, whatever the block says, when OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none, or when the block says enabled = false.
//
// # Settings and the environment
//
// Each setting of the block wins over its environment variable, which
// wins over the default, as the OpenTelemetry specification has it for
// programmatic configuration:
//
//	block                 environment                                   default
//	endpoint              OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is),   http://localhost:4318 (HTTP),
//	                      OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces)    http://localhost:4317 (gRPC)
//	protocol              OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,           http/protobuf
//	                      OTEL_EXPORTER_OTLP_PROTOCOL
//	headers               OTEL_EXPORTER_OTLP_(TRACES_)HEADERS           none
//	sampler, sampler_arg  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG  parentbased_always_on
//	service_name          OTEL_SERVICE_NAME                             hearth
//	resource_attributes   OTEL_RESOURCE_ATTRIBUTES                      none
//
// The exporters read the rest of the OTEL_EXPORTER_OTLP_* variables
// themselves (timeout, compression, certificates). The block's endpoint
// is a base URL, like OTEL_EXPORTER_OTLP_ENDPOINT: over HTTP, /v1/traces
// is appended to it; http:// means no TLS.
//
// # Plugins
//
// A host with tracing on tells each plugin so when it attaches, with the
// service name its spans carry ("hearth.<agent>"). The SDK then installs
// a tracer provider in the plugin process whose exporter sends OTLP over
// the plugin's existing, mutually authenticated connection to its host;
// the host's Relay queues what arrives and uploads it with its own
// exporter's client. Each task's context reaches the agent in its Run's
// ctx, so spans the agent starts from it join the task's trace.
package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Protocols the exporter speaks (OTEL_EXPORTER_OTLP_PROTOCOL's values).
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
)

// Protocols lists the protocols, the default first.
var Protocols = []string{ProtocolHTTPProtobuf, ProtocolGRPC, ProtocolHTTPJSON}

// Samplers lists OTEL_TRACES_SAMPLER's values the block may name;
// those ending in traceidratio take sampler_arg, a ratio in [0, 1].
var Samplers = []string{
	"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
	"always_on", "always_off", "traceidratio",
}

// DefaultServiceName is the service.name of a host's spans.
const DefaultServiceName = "hearth"

// TraceIDPlaceholder is what a TraceURL template holds where the trace ID
// goes.
const TraceIDPlaceholder = "{trace_id}"

// Settings are the telemetry block's values; zero values mean "not set"
// (the environment's, or the default). The config decodes them
// (host/config) and checks each at its spot in the file; Start checks
// them again for callers that build them by hand.
type Settings struct {
	// Block is true when the config has a telemetry block.
	Block bool
	// Disabled is the block's enabled = false.
	Disabled bool
	// Endpoint is a base URL: "http://127.0.0.1:4318".
	Endpoint string
	// Protocol is one of Protocols.
	Protocol string
	// Headers go with every export (an API key for a hosted backend).
	Headers map[string]string
	// Sampler is one of Samplers; SamplerArg its ratio, when it takes one
	// (nil: 1).
	Sampler    string
	SamplerArg *float64
	// ServiceName is the host's service.name.
	ServiceName string
	// ResourceAttributes are added to the host's resource.
	ResourceAttributes map[string]string
	// TraceURL, when set, is where the dashboard links a trace ID to: a
	// URL holding TraceIDPlaceholder
	// ("http://localhost:16686/trace/{trace_id}").
	TraceURL string
}

// Plan is what Settings and the environment come to: whether tracing is
// on, why, and how it exports.
type Plan struct {
	On bool
	// Why says what turned tracing on or off, for the log.
	Why      string
	Protocol string
	// Endpoint is the URL exported to, "" for the protocol's default;
	// FullURL says it is used as it is (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
	// rather than as a base URL.
	Endpoint string
	FullURL  bool
	// Headers go with every export: the environment's, then the block's.
	Headers map[string]string
	// Sampler is the block's sampler and its arg; "" leaves it to
	// OTEL_TRACES_SAMPLER or the default.
	Sampler    string
	SamplerArg *float64
}

// Getenv reads an environment variable; os.Getenv in hearth.
type Getenv func(string) string

// Decide works out the plan for s in the environment getenv reads. Its
// errors name the setting or the variable that is wrong.
func Decide(s Settings, getenv Getenv) (Plan, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var pl Plan
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	switch {
	case strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true"):
		pl.Why = "OTEL_SDK_DISABLED=true"
		return pl, nil
	case exporter == "none":
		pl.Why = "OTEL_TRACES_EXPORTER=none"
		return pl, nil
	case s.Block && s.Disabled:
		pl.Why = "the telemetry block says enabled = false"
		return pl, nil
	case s.Block:
		pl.Why = "the config's telemetry block"
	case exporter != "":
		if !slices.Contains(strings.Split(exporter, ","), "otlp") {
			return pl, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: hearth exports traces with otlp only; set it to otlp, or to none to turn tracing off", exporter)
		}
		pl.Why = "OTEL_TRACES_EXPORTER=" + exporter
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		pl.Why = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set"
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		pl.Why = "OTEL_EXPORTER_OTLP_ENDPOINT is set"
	default:
		pl.Why = "no telemetry block, and no OTEL_TRACES_EXPORTER or OTLP endpoint in the environment"
		return pl, nil
	}
	pl.On = true
	pl.Protocol = s.Protocol
	from := "protocol in the telemetry block"
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if pl.Protocol == "" {
			pl.Protocol, from = strings.TrimSpace(getenv(name)), name
		}
	}
	if pl.Protocol == "" {
		pl.Protocol = ProtocolHTTPProtobuf
	}
	if !slices.Contains(Protocols, pl.Protocol) {
		return pl, fmt.Errorf("%s %q is not an OTLP protocol hearth exports with; use %s", from, pl.Protocol, strings.Join(Protocols, ", "))
	}
	switch {
	case s.Endpoint != "":
		if err := CheckEndpoint(s.Endpoint); err != nil {
			return pl, fmt.Errorf("endpoint in the telemetry block: %w", err)
		}
		pl.Endpoint = s.Endpoint
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
		if err := CheckEndpoint(e); err != nil {
			return pl, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: %w", err)
		}
		pl.Endpoint, pl.FullURL = e, true
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		if err := CheckEndpoint(e); err != nil {
			return pl, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
		pl.Endpoint = e
	}
	headers, err := parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS"), "OTEL_EXPORTER_OTLP_HEADERS")
	if err != nil {
		return pl, err
	}
	traceHeaders, err := parseHeaders(getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	if err != nil {
		return pl, err
	}
	maps.Copy(headers, traceHeaders)
	maps.Copy(headers, s.Headers)
	if len(headers) > 0 {
		pl.Headers = headers
	}
	if s.Sampler != "" {
		if err := CheckSampler(s.Sampler, s.SamplerArg); err != nil {
			return pl, fmt.Errorf("telemetry block: %w", err)
		}
		pl.Sampler, pl.SamplerArg = s.Sampler, s.SamplerArg
	}
	return pl, nil
}

// parseHeaders reads an OTEL_EXPORTER_OTLP_HEADERS value: key=value
// pairs, comma-separated, values percent-encoded.
func parseHeaders(v, name string) (map[string]string, error) {
	out := make(map[string]string)
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for pair := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q is not key=value; separate pairs with commas", name, pair)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%s: the value of %q is not percent-encoded properly: %w", name, k, err)
		}
		out[k] = dec
	}
	return out, nil
}

// CheckEndpoint checks an endpoint setting: an http or https URL with a
// host.
func CheckEndpoint(e string) error {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not a URL such as \"http://127.0.0.1:4318\" (http:// for no TLS, https:// with it)", e)
	}
	return nil
}

// CheckSampler checks a sampler and its argument.
func CheckSampler(name string, arg *float64) error {
	if !slices.Contains(Samplers, name) {
		return fmt.Errorf("sampler %q is not one of %s", name, strings.Join(Samplers, ", "))
	}
	if arg == nil {
		return nil
	}
	if !strings.HasSuffix(name, "traceidratio") {
		return fmt.Errorf("sampler_arg is a ratio for the traceidratio samplers; sampler %q takes none", name)
	}
	if *arg < 0 || *arg > 1 {
		return fmt.Errorf("sampler_arg %v is not a ratio between 0 and 1", *arg)
	}
	return nil
}

// CheckTraceURL checks a trace_url template.
func CheckTraceURL(t string) error {
	if !strings.Contains(t, TraceIDPlaceholder) {
		return fmt.Errorf("%q does not hold %s, where the trace ID goes", t, TraceIDPlaceholder)
	}
	u, err := url.Parse(strings.ReplaceAll(t, TraceIDPlaceholder, "0"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL", t)
	}
	return nil
}

// Options are what the running hearth adds to Settings.
type Options struct {
	// Getenv reads the environment; os.Getenv when nil.
	Getenv Getenv
	// Version is hearth's version: service.version.
	Version string
	// Attributes are added to the resource (the cluster's host ID).
	Attributes []attribute.KeyValue
}

// Provider is the host's tracing: a tracer provider, and the relay for
// its plugins' spans. A Provider with tracing off hands out the no-op
// tracer provider and exports nothing. Its methods are safe for
// concurrent use.
type Provider struct {
	plan     Plan
	settings Settings
	// service is the host's service.name.
	service string
	tp      trace.TracerProvider
	sdk     *sdktrace.TracerProvider
	relay   *Relay
}

// Off is the provider with tracing off.
func Off() *Provider { return &Provider{tp: noop.NewTracerProvider()} }

// Start makes the provider s and the environment call for. With tracing
// off it makes no connection and starts no goroutine. Shutdown flushes and
// stops it.
func Start(ctx context.Context, s Settings, o Options) (*Provider, error) {
	pl, err := Decide(s, o.Getenv)
	if err != nil {
		return nil, err
	}
	if !pl.On {
		p := Off()
		p.plan, p.settings = pl, s
		return p, nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if pl.Sampler == "" {
		if pl.Sampler, pl.SamplerArg, err = samplerEnv(getenv); err != nil {
			return nil, err
		}
	}
	res, err := hostResource(ctx, s, o, getenv)
	if err != nil {
		return nil, err
	}
	client, err := newClient(pl)
	if err != nil {
		return nil, err
	}
	// The client connects lazily: a backend that is down costs dropped
	// spans, never a host that does not start.
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("telemetry: start the OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler(pl.Sampler, pl.SamplerArg)))
	service := cmp.Or(s.ServiceName, strings.TrimSpace(getenv("OTEL_SERVICE_NAME")), DefaultServiceName)
	return &Provider{plan: pl, settings: s, service: service, tp: tp, sdk: tp, relay: newRelay(client, relayQueue)}, nil
}

// samplerEnv reads OTEL_TRACES_SAMPLER and its argument, refusing what
// the SDK would quietly replace with its default.
func samplerEnv(getenv Getenv) (string, *float64, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	if name == "" {
		return "parentbased_always_on", nil, nil
	}
	var arg *float64
	if a := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); a != "" && strings.HasSuffix(name, "traceidratio") {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return "", nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q is not a number; give a ratio between 0 and 1", a)
		}
		arg = &f
	}
	if err := CheckSampler(name, arg); err != nil {
		return "", nil, fmt.Errorf("OTEL_TRACES_SAMPLER: %w", err)
	}
	return name, arg, nil
}

func sampler(name string, arg *float64) sdktrace.Sampler {
	ratio := 1.0
	if arg != nil {
		ratio = *arg
	}
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// hostResource is the host's resource: service name and version, the
// environment's attributes, the block's.
func hostResource(ctx context.Context, s Settings, o Options, getenv Getenv) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(DefaultServiceName)}
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	// resource.WithFromEnv reads the process's environment, which a test
	// cannot set per call: the two variables are read here instead.
	fromEnv, err := envAttributes(getenv)
	if err != nil {
		return nil, err
	}
	attrs = append(attrs, fromEnv...)
	attrs = append(attrs, o.Attributes...)
	for _, k := range slices.Sorted(maps.Keys(s.ResourceAttributes)) {
		attrs = append(attrs, attribute.String(k, s.ResourceAttributes[k]))
	}
	if s.ServiceName != "" {
		attrs = append(attrs, semconv.ServiceName(s.ServiceName))
	}
	// Later attributes win over earlier ones with the same key.
	r, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID(), resource.WithAttributes(attrs...))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: describe this host: %w", err)
	}
	return r, nil
}

// envAttributes reads OTEL_RESOURCE_ATTRIBUTES (key=value pairs,
// comma-separated, values percent-encoded) and OTEL_SERVICE_NAME.
func envAttributes(getenv Getenv) ([]attribute.KeyValue, error) {
	var out []attribute.KeyValue
	if v := strings.TrimSpace(getenv("OTEL_RESOURCE_ATTRIBUTES")); v != "" {
		for pair := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value; separate pairs with commas", pair)
			}
			dec, err := url.PathUnescape(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: the value of %q is not percent-encoded properly: %w", k, err)
			}
			out = append(out, attribute.String(k, dec))
		}
	}
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		out = append(out, semconv.ServiceName(v))
	}
	return out, nil
}

// newClient makes the OTLP client of pl: what the exporter and the relay
// upload with.
//
// The endpoint and headers are always passed as options, read from the
// environment by Decide: the exporters would read the same variables from
// the process's environment, which would make Options.Getenv a half
// truth.
func newClient(pl Plan) (otlptrace.Client, error) {
	endpoint := pl.Endpoint
	switch pl.Protocol {
	case ProtocolGRPC:
		if endpoint == "" {
			endpoint = "http://localhost:4317"
		}
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(endpoint)}
		if len(pl.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(pl.Headers))
		}
		return otlptracegrpc.NewClient(opts...), nil
	default:
		if endpoint == "" {
			endpoint = "http://localhost:4318"
		}
		u, _ := url.Parse(endpoint) // checked by Decide
		urlPath := u.Path
		if !pl.FullURL {
			urlPath = path.Join("/", u.Path, "v1/traces")
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(urlPath)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		if len(pl.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(pl.Headers))
		}
		if pl.Protocol == ProtocolHTTPJSON {
			opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}
		return otlptracehttp.NewClient(opts...), nil
	}
}

// On reports whether tracing is on.
func (p *Provider) On() bool { return p.plan.On }

// Plan is what the settings and the environment came to.
func (p *Provider) Plan() Plan { return p.plan }

// TracerProvider is the provider spans are started from: the no-op one
// when tracing is off.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.tp }

// PluginService is the service.name of agent's plugins' spans:
// "<service>.<agent>" ("hearth.coder").
func (p *Provider) PluginService(agent string) string {
	return cmp.Or(p.service, DefaultServiceName) + "." + agent
}

// Relay is where plugins' spans go; nil when tracing is off.
func (p *Provider) Relay() *Relay { return p.relay }

// TraceURL is where the trace with id is shown, or "" when the settings
// name no trace_url.
func (p *Provider) TraceURL(id string) string { return TraceLink(p.settings.TraceURL, id) }

// TraceLink is template (a trace_url) with id in it, or "" when either
// is empty. (The dashboard fills the template in the page itself.)
func TraceLink(template, id string) string {
	if template == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(template, TraceIDPlaceholder, id)
}

// ForceFlush exports every span ended so far, the plugins' relayed ones
// included.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	err := p.sdk.ForceFlush(ctx)
	if p.relay != nil {
		err = errors.Join(err, p.relay.Flush(ctx))
	}
	return err
}

// Shutdown exports what is left, within ctx, and stops the exporter. The
// relay stops first: what it uploads goes through the exporter's client.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.sdk == nil {
		return nil
	}
	var err error
	if p.relay != nil {
		err = p.relay.Close(ctx)
	}
	return errors.Join(err, p.sdk.Shutdown(ctx))
}

// shutdownTimeout bounds the final flush when a caller has no deadline.
const shutdownTimeout = 5 * time.Second

// ShutdownTimeout is Shutdown within the default time.
func (p *Provider) ShutdownTimeout() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return p.Shutdown(ctx)
}
