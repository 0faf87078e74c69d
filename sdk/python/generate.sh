#!/bin/sh
# Regenerates the protobuf messages in hearth_agent/_pb (or in the
# directory given) from the protocol's .proto files: hearth's own
# (sdk/internal/agentpb/agent.proto), and, in proto/, go-plugin's broker,
# controller and stdio messages and gRPC's health check. Only messages are
# generated (protoc's python and pyi outputs, Debian's protobuf-compiler):
# the services are wired by hand in hearth_agent/_services.py, so they are
# typed and need no grpcio-tools. OpenTelemetry's OTLP trace messages
# (proto/opentelemetry, from opentelemetry-proto v1.11.0, the version of
# the Go module go.opentelemetry.io/proto/otlp hearth builds with), which
# an agent's spans are relayed to the host in, are kept as a descriptor
# set that hearth_agent/trace.py loads into a pool of its own: generated
# modules would claim the opentelemetry.proto names in protobuf's global
# pool, where an agent that also imports opentelemetry-proto has them.
# TestGeneratedCodeIsCurrent runs this into a temporary directory and
# compares.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/hearth_agent/_pb}
mkdir -p "$out"
cd "$here/proto"
protoc -I "$here/../internal/agentpb" -I . --python_out="$out" --pyi_out="$out" \
	agent.proto grpc_broker.proto grpc_controller.proto grpc_stdio.proto health.proto
protoc -I . --descriptor_set_out="$out/otlp_trace.binpb" --include_imports \
	opentelemetry/proto/collector/trace/v1/trace_service.proto
