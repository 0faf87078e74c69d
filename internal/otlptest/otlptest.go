// Package otlptest is a real OTLP trace receiver on loopback for tests and
// for trying hearth's tracing by hand: the OpenTelemetry Collector's
// TraceService over gRPC and the OTLP/HTTP endpoint (/v1/traces, protobuf
// or JSON), both decoding with the official OTLP protocol definitions
// (go.opentelemetry.io/proto/otlp), as a backend does. What it receives is
// kept as flat Spans, which tests query by name, parent and attribute.
package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      string
	// Service is the resource's service.name: which process sent it.
	Service    string
	Scope      string
	Start, End time.Time
	Attrs      map[string]any
	Resource   map[string]any
	// Status is "", "ok" or "error"; StatusMessage the error's text.
	Status, StatusMessage string
	Events                []Event
	Links                 []string // the span IDs linked to
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Attr returns attribute k as a string, "" when absent.
func (s Span) Attr(k string) string {
	v, ok := s.Attrs[k]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// Int returns attribute k as an integer, 0 when absent or not one.
func (s Span) Int(k string) int64 {
	switch v := s.Attrs[k].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 0
}

// Receiver is an OTLP receiver listening on loopback. Its methods are safe
// for concurrent use.
type Receiver struct {
	// GRPCAddr is "127.0.0.1:port" of the gRPC receiver; HTTPURL is the
	// base URL of the HTTP one ("http://127.0.0.1:port"), to which
	// exporters append /v1/traces.
	GRPCAddr string
	HTTPURL  string

	grpcSrv *grpc.Server
	httpSrv *http.Server
	wg      sync.WaitGroup

	// countOnly makes it count spans without keeping them (CountOnly).
	countOnly atomic.Bool
	received  atomic.Int64

	mu       sync.Mutex
	spans    []Span
	requests int
	changed  chan struct{}
}

// CountOnly makes the receiver count the spans it receives (Received)
// without keeping them: a benchmark's backend, whose own cost, in the
// same process, is then only decoding what it is sent.
func (r *Receiver) CountOnly() { r.countOnly.Store(true) }

// Received is how many spans arrived, kept or only counted.
func (r *Receiver) Received() int64 { return r.received.Load() }

// Start starts a receiver; Close stops it.
func Start() (*Receiver, error) {
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("otlptest: listen for gRPC: %w", err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gl.Close()
		return nil, fmt.Errorf("otlptest: listen for HTTP: %w", err)
	}
	r := &Receiver{GRPCAddr: gl.Addr().String(), HTTPURL: "http://" + hl.Addr().String(), changed: make(chan struct{})}
	r.grpcSrv = grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(r.grpcSrv, traceService{r: r})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serveHTTP)
	r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	r.wg.Add(2)
	go func() { defer r.wg.Done(); _ = r.grpcSrv.Serve(gl) }()
	go func() { defer r.wg.Done(); _ = r.httpSrv.Serve(hl) }()
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() {
	r.grpcSrv.Stop()
	_ = r.httpSrv.Close()
	r.wg.Wait()
}

// Env returns the environment that points hearth (or any OpenTelemetry
// SDK) at the receiver with protocol: OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_PROTOCOL.
func (r *Receiver) Env(protocol string) map[string]string {
	endpoint := r.HTTPURL
	if protocol == "grpc" {
		endpoint = "http://" + r.GRPCAddr
	}
	return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
}

// Endpoint is the receiver's endpoint for protocol, as a telemetry
// block's endpoint names it.
func (r *Receiver) Endpoint(protocol string) string {
	return r.Env(protocol)["OTEL_EXPORTER_OTLP_ENDPOINT"]
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var m coltracepb.ExportTraceServiceRequest
	ct := req.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		err = protojson.Unmarshal(body, &m)
	default:
		err = proto.Unmarshal(body, &m)
	}
	if err != nil {
		http.Error(w, "otlptest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.add(&m)
	resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if strings.HasPrefix(ct, "application/json") {
		resp, _ = protojson.Marshal(&coltracepb.ExportTraceServiceResponse{})
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(resp)
}

func (r *Receiver) add(req *coltracepb.ExportTraceServiceRequest) {
	if r.countOnly.Load() {
		n := 0
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				n += len(ss.GetSpans())
			}
		}
		r.received.Add(int64(n))
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		service := fmt.Sprint(res["service.name"])
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, flatten(sp, service, ss.GetScope().GetName(), res))
			}
		}
	}
	r.received.Add(int64(len(got)))
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

func flatten(sp *tracepb.Span, service, scope string, res map[string]any) Span {
	s := Span{
		TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
		Name: sp.GetName(), Kind: strings.ToLower(strings.TrimPrefix(sp.GetKind().String(), "SPAN_KIND_")),
		Service: service, Scope: scope, Resource: res,
		Start: time.Unix(0, int64(sp.GetStartTimeUnixNano())), End: time.Unix(0, int64(sp.GetEndTimeUnixNano())),
		Attrs: attrs(sp.GetAttributes()),
	}
	if len(sp.GetParentSpanId()) > 0 {
		s.ParentID = hex.EncodeToString(sp.GetParentSpanId())
	}
	switch sp.GetStatus().GetCode() {
	case tracepb.Status_STATUS_CODE_OK:
		s.Status = "ok"
	case tracepb.Status_STATUS_CODE_ERROR:
		s.Status = "error"
	}
	s.StatusMessage = sp.GetStatus().GetMessage()
	for _, e := range sp.GetEvents() {
		s.Events = append(s.Events, Event{Name: e.GetName(), Time: time.Unix(0, int64(e.GetTimeUnixNano())), Attrs: attrs(e.GetAttributes())})
	}
	for _, l := range sp.GetLinks() {
		s.Links = append(s.Links, hex.EncodeToString(l.GetSpanId()))
	}
	return s
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attrs(x.KvlistValue.GetValues())
	}
	return nil
}

// Spans returns every span received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Requests counts the export requests received.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Wait returns the spans received once done reports true of them, or the
// spans so far and an error once ctx is done. It wakes on every export.
func (r *Receiver) Wait(ctx context.Context, done func(Spans) bool) (Spans, error) {
	for {
		r.mu.Lock()
		spans, changed := slices.Clone(r.spans), r.changed
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: %w waiting for spans; got %d: %s", ctx.Err(), len(spans), Spans(spans).Names())
		}
	}
}

// Spans is a set of received spans, with queries.
type Spans []Span

// Named returns the spans named name.
func (ss Spans) Named(name string) Spans {
	var out Spans
	for _, s := range ss {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// With returns the spans whose attribute k is v (compared as text).
func (ss Spans) With(k, v string) Spans {
	var out Spans
	for _, s := range ss {
		if x, ok := s.Attrs[k]; ok && fmt.Sprint(x) == v {
			out = append(out, s)
		}
	}
	return out
}

// ByID returns the span with id, and whether there is one.
func (ss Spans) ByID(id string) (Span, bool) {
	for _, s := range ss {
		if s.SpanID == id {
			return s, true
		}
	}
	return Span{}, false
}

// Parent returns s's parent among ss.
func (ss Spans) Parent(s Span) (Span, bool) {
	if s.ParentID == "" {
		return Span{}, false
	}
	return ss.ByID(s.ParentID)
}

// Children returns the spans whose parent is s.
func (ss Spans) Children(s Span) Spans {
	var out Spans
	for _, c := range ss {
		if c.ParentID == s.SpanID && c.TraceID == s.TraceID {
			out = append(out, c)
		}
	}
	return out
}

// Ancestors returns the names of s's ancestors among ss, nearest first.
func (ss Spans) Ancestors(s Span) []string {
	var out []string
	for p, ok := ss.Parent(s); ok; p, ok = ss.Parent(p) {
		out = append(out, p.Name)
		if len(out) > 1000 {
			break
		}
	}
	return out
}

// Trace returns the spans of trace id.
func (ss Spans) Trace(id string) Spans {
	var out Spans
	for _, s := range ss {
		if s.TraceID == id {
			out = append(out, s)
		}
	}
	return out
}

// Names lists the spans' names, sorted, for messages.
func (ss Spans) Names() string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Tree renders the spans of a trace as an indented tree, children in
// start order, with each span's service and the attributes keys names
// (all when keys is nil): what a person reads to follow a trace.
func (ss Spans) Tree(keys ...string) string {
	var b strings.Builder
	byParent := make(map[string]Spans)
	ids := make(map[string]bool)
	for _, s := range ss {
		ids[s.SpanID] = true
	}
	var roots Spans
	for _, s := range ss {
		if s.ParentID == "" || !ids[s.ParentID] {
			roots = append(roots, s)
			continue
		}
		byParent[s.ParentID] = append(byParent[s.ParentID], s)
	}
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		fmt.Fprintf(&b, "%s%s [%s] %s", strings.Repeat("  ", depth), s.Name, s.Service, s.End.Sub(s.Start).Round(time.Microsecond))
		if s.ParentID != "" && !ids[s.ParentID] {
			fmt.Fprintf(&b, " (parent %s not received)", s.ParentID)
		}
		var parts []string
		for _, k := range sortedKeys(s.Attrs) {
			if keys == nil || slices.Contains(keys, k) {
				parts = append(parts, fmt.Sprintf("%s=%v", k, s.Attrs[k]))
			}
		}
		if s.Status == "error" {
			parts = append(parts, "error="+s.StatusMessage)
		}
		if len(parts) > 0 {
			b.WriteString("  " + strings.Join(parts, " "))
		}
		b.WriteString("\n")
		kids := byParent[s.SpanID]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Start.Before(kids[j].Start) })
		for _, c := range kids {
			walk(c, depth+1)
		}
	}
	sort.SliceStable(roots, func(i, j int) bool { return roots[i].Start.Before(roots[j].Start) })
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
