package api

import (
	"testing"
	"time"
)

// HoldStalledStreams lets an event stream's write block for d instead of
// sseWrite, until the test ends: a test that stalls a stream and then
// publishes past what it may miss must not find it cut by the write
// deadline because the machine was slow to publish. Call it before the
// daemon starts, and only from a test that does not call t.Parallel:
// sseWrite is the package's, read by every daemon the process runs.
func HoldStalledStreams(t testing.TB, d time.Duration) {
	old := sseWrite
	sseWrite = d
	t.Cleanup(func() { sseWrite = old })
}
