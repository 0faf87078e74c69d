package pool

import (
	"testing"

	"go.uber.org/goleak"
)

// The pool starts goroutines (session starts, idle sweeps); none may
// outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
