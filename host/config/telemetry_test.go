package config

import (
	"reflect"
	"testing"

	"github.com/hearth-dev/hearth/internal/telemetry"
)

// TestTelemetryBlock: the block decodes into the settings the telemetry
// package takes; without one, tracing is left to the environment; and
// enabled = false is kept apart from no block.
func TestTelemetryBlock(t *testing.T) {
	t.Parallel()
	cfg, err := Load("testdata/valid/telemetry.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	half := 0.25
	want := telemetry.Settings{
		Block: true, Endpoint: "http://127.0.0.1:4317", Protocol: "grpc", Headers: map[string]string{"x-api-key": "k"},
		Sampler: "parentbased_traceidratio", SamplerArg: &half, ServiceName: "hearth-ci",
		ResourceAttributes: map[string]string{"deployment.environment": "ci"}, TraceURL: "http://localhost:16686/trace/{trace_id}",
	}
	if !reflect.DeepEqual(cfg.Telemetry, want) {
		t.Fatalf("got %+v, want %+v", cfg.Telemetry, want)
	}
	for src, w := range map[string]telemetry.Settings{
		`agent "a" { bundled = "gotour" }`:           {},
		"telemetry {}":                               {Block: true},
		"telemetry {\n  enabled = false\n}":          {Block: true, Disabled: true},
		"telemetry {\n  protocol = \"http/json\"\n}": {Block: true, Protocol: "http/json"},
	} {
		cfg, err := Parse([]byte(src), "hearth.hcl", opts)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !reflect.DeepEqual(cfg.Telemetry, w) {
			t.Errorf("%s: got %+v, want %+v", src, cfg.Telemetry, w)
		}
	}
	if _, err := Parse([]byte("telemetry {\n  sampler_arg = 0.5\n}"), "hearth.hcl", opts); err == nil {
		t.Fatal("a sampler_arg without a sampler loaded")
	}
}
