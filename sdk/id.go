package sdk

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random identifier with the given prefix, such as
// "task-3f9a0c1e2b7d4a58".
func NewID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
