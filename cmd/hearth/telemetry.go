package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// startTelemetry starts the host's tracing as cfg's telemetry block and
// the OTEL_* variables of m's environment call for (internal/telemetry):
// off, exporting nothing, unless one of them asks for it. A backend that
// is down never stops the host; only settings that are wrong do.
func (m *Main) startTelemetry(ctx context.Context, cfg *config.Config) (*telemetry.Provider, error) {
	o := telemetry.Options{Getenv: m.Getenv, Version: buildInfo().Version}
	if cfg.Cluster != nil && cfg.Cluster.HostID != "" {
		o.Attributes = []attribute.KeyValue{telemetry.AttrHost.String(cfg.Cluster.HostID)}
	}
	tp, err := telemetry.Start(ctx, cfg.Telemetry, o)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return tp, nil
}

// stopTelemetry exports the spans still queued, within a bounded time, and
// says so when it could not.
func (m *Main) stopTelemetry(tp *telemetry.Provider) {
	if err := tp.ShutdownTimeout(); err != nil {
		fmt.Fprintf(m.Stderr, "hearth: warning: telemetry: %v; spans of the last tasks may be missing from the trace backend\n", err)
	}
}

// tracesLine is what `hearth serve` prints about tracing: where its
// spans go, or nothing when it does not trace.
func tracesLine(tp *telemetry.Provider) string {
	pl := tp.Plan()
	if !pl.On {
		return ""
	}
	return fmt.Sprintf("OTLP %s to %s (%s)", pl.Protocol, endpointOf(pl), pl.Why)
}

func endpointOf(pl telemetry.Plan) string {
	if pl.Endpoint != "" {
		return pl.Endpoint
	}
	if pl.Protocol == telemetry.ProtocolGRPC {
		return "http://localhost:4317"
	}
	return "http://localhost:4318"
}
