package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// The telemetry block turns on tracing over OTLP (package
// internal/telemetry says how it meets the standard OTEL_* variables):
//
//	telemetry {
//	  enabled             = true             the block's presence turns it on
//	  endpoint            = (environment)    OTEL_EXPORTER_OTLP_ENDPOINT, else
//	                                         http://localhost:4318 (4317 for grpc)
//	  protocol            = (environment)    "http/protobuf", "grpc", "http/json"
//	  headers             = {}               sent with every export
//	  sampler             = (environment)    OTEL_TRACES_SAMPLER's names; default
//	                                         "parentbased_always_on"
//	  sampler_arg         = 1                the ratio of a *traceidratio sampler
//	  service_name        = "hearth"
//	  resource_attributes = {}
//	  trace_url           = (none)           "http://localhost:16686/trace/{trace_id}":
//	                                         where the dashboard links a trace ID
//	}
type rawTelemetry struct {
	Enabled            *bool             `hcl:"enabled,optional"`
	Endpoint           *string           `hcl:"endpoint,optional"`
	Protocol           *string           `hcl:"protocol,optional"`
	Headers            map[string]string `hcl:"headers,optional"`
	Sampler            *string           `hcl:"sampler,optional"`
	SamplerArg         *float64          `hcl:"sampler_arg,optional"`
	ServiceName        *string           `hcl:"service_name,optional"`
	ResourceAttributes map[string]string `hcl:"resource_attributes,optional"`
	TraceURL           *string           `hcl:"trace_url,optional"`
	Body               hcl.Body          `hcl:",body"`
	DefRange           hcl.Range         `hcl:",def_range"`
}

func (v *validator) telemetry(rt *rawTelemetry) telemetry.Settings {
	var s telemetry.Settings
	if rt == nil {
		return s
	}
	at := func(name string) hcl.Range { return hclspot.Attr(rt.Body, name, rt.DefRange) }
	s.Block = true
	s.Disabled = rt.Enabled != nil && !*rt.Enabled
	if rt.Endpoint != nil {
		s.Endpoint = strings.TrimSpace(*rt.Endpoint)
		if err := telemetry.CheckEndpoint(s.Endpoint); err != nil {
			v.errorf(at("endpoint"), "Invalid telemetry endpoint", "endpoint %s. It is the OTLP receiver's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it; over HTTP, /v1/traces is added.", err)
		}
	}
	if rt.Protocol != nil {
		s.Protocol = *rt.Protocol
		if !slices.Contains(telemetry.Protocols, s.Protocol) {
			v.errorf(at("protocol"), "Invalid telemetry protocol", "protocol %q is not an OTLP protocol hearth exports with; use %s.", s.Protocol, strings.Join(quoted(telemetry.Protocols), ", "))
		}
	}
	if len(rt.Headers) > 0 {
		s.Headers = maps.Clone(rt.Headers)
		for _, k := range slices.Sorted(maps.Keys(rt.Headers)) {
			if !validHeader(k) {
				v.errorf(at("headers"), "Invalid telemetry header", "headers: %q is not a header name; use letters, digits and '-'.", k)
			}
		}
	}
	if rt.Sampler != nil {
		s.Sampler = *rt.Sampler
		if !slices.Contains(telemetry.Samplers, s.Sampler) {
			v.errorf(at("sampler"), "Invalid sampler", "sampler %q is not one of %s.", s.Sampler, strings.Join(quoted(telemetry.Samplers), ", "))
		}
	}
	if rt.SamplerArg != nil {
		s.SamplerArg = rt.SamplerArg
		switch {
		case rt.Sampler == nil:
			v.errorf(at("sampler_arg"), "Sampler argument without a sampler", "sampler_arg is the ratio of a traceidratio sampler; set sampler = \"parentbased_traceidratio\" beside it.")
		case slices.Contains(telemetry.Samplers, s.Sampler):
			if err := telemetry.CheckSampler(s.Sampler, s.SamplerArg); err != nil {
				v.errorf(at("sampler_arg"), "Invalid sampler argument", "%s.", err)
			}
		}
	}
	if rt.ServiceName != nil {
		s.ServiceName = strings.TrimSpace(*rt.ServiceName)
		if s.ServiceName == "" {
			v.errorf(at("service_name"), "Empty service name", "service_name is empty. Remove the line to use %q, or name the service.", telemetry.DefaultServiceName)
		}
	}
	if len(rt.ResourceAttributes) > 0 {
		s.ResourceAttributes = maps.Clone(rt.ResourceAttributes)
		for _, k := range slices.Sorted(maps.Keys(rt.ResourceAttributes)) {
			if strings.TrimSpace(k) == "" {
				v.errorf(at("resource_attributes"), "Empty resource attribute name", "resource_attributes has an empty key; name each attribute, as in { \"deployment.environment\" = \"prod\" }.")
			}
		}
	}
	if rt.TraceURL != nil {
		s.TraceURL = *rt.TraceURL
		if err := telemetry.CheckTraceURL(s.TraceURL); err != nil {
			v.errorf(at("trace_url"), "Invalid trace URL", "trace_url %s; write the backend's page for one trace, as in \"http://localhost:16686/trace/{trace_id}\".", err)
		}
	}
	return s
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = `"` + s + `"`
	}
	return out
}

// validHeader reports whether k can be an HTTP header (and gRPC metadata)
// name.
func validHeader(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
