#!/bin/sh
# Regenerates the protobuf messages in hearth_agent/_pb (or in the
# directory given) from the protocol's .proto files: hearth's own
# (sdk/internal/agentpb/agent.proto), and, in proto/, go-plugin's broker,
# controller and stdio messages and gRPC's health check. Only messages are
# generated (protoc's python and pyi outputs, Debian's protobuf-compiler):
# the services are wired by hand in hearth_agent/_services.py, so they are
# typed and need no grpcio-tools. TestGeneratedCodeIsCurrent runs this
# into a temporary directory and compares.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/hearth_agent/_pb}
mkdir -p "$out"
cd "$here/proto"
protoc -I "$here/../internal/agentpb" -I . --python_out="$out" --pyi_out="$out" \
	agent.proto grpc_broker.proto grpc_controller.proto grpc_stdio.proto health.proto
