// Package storepb holds the generated code of store.proto: the records
// hearth keeps in Badger. Committed so that a fresh machine needs no
// protoc; regenerate with `go generate`.
package storepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative store.proto
