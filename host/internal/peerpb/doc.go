// Package peerpb holds the generated protobuf and gRPC code of the hosts'
// API to one another (peer.proto): forwarding a task, asking about an
// idempotency key, listing a host's runs and the cluster's members.
// host/cluster/peer serves and calls it; host/api/client asks a daemon
// for its cluster's members and runs through it. The generated files are
// committed; regenerate them with `go generate ./host/internal/...` after
// editing peer.proto (needs protoc, protoc-gen-go and protoc-gen-go-grpc
// on PATH).
package peerpb

//go:generate protoc -I . -I ../apipb --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative peer.proto
