// Package agentpb holds the generated protobuf and gRPC code for the hearth
// agent protocol (agent.proto). The generated files are committed so that a
// fresh machine builds hearth with nothing but Go; regenerate them with
// `go generate ./sdk/...` after editing agent.proto (needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH).
//
// Nothing outside the sdk tree imports this package: the SDK's Go API speaks
// plain Go types and translates at the boundary.
package agentpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative agent.proto
