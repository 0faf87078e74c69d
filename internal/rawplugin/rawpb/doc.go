// Package rawpb is the generated code of raw.proto, committed so that a
// fresh machine needs no protoc. Regenerate with `go generate`.
package rawpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative raw.proto
