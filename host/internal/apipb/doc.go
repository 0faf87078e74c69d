// Package apipb holds the generated protobuf and gRPC code of the hearth
// daemon's API (api.proto). The generated files are committed so that a
// fresh machine builds hearth with nothing but Go; regenerate them with
// `go generate ./host/internal/...` after editing api.proto (needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH).
//
// Orchestrators do not import it: package host/api/client speaks the
// vocabulary's plain Go types and translates at the boundary. It lives
// under host/internal, not host/api, because the cluster's peer API
// (host/cluster/peer, peer.proto) carries tasks, outcomes and runs in
// these messages too.
package apipb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative api.proto
