package plugin

import (
	"testing"

	"go.uber.org/goleak"
)

// Serve and Remote start goroutines (the broker, streams); none may
// outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
