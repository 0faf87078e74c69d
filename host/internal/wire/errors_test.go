package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestSentinelsCrossTheSocket: every sentinel the daemon maps comes back
// on the client's side as itself, wrapped as deep as it was.
func TestSentinelsCrossTheSocket(t *testing.T) {
	for _, k := range kinds {
		err := fmt.Errorf("agent %q: %w", "a", k.err)
		got := ErrorOf(context.Background(), Status(err))
		if !errors.Is(got, k.err) || got.Error() != err.Error() {
			t.Errorf("%s: got %v (%T), want errors.Is %v with the same text", k.reason, got, got, k.err)
		}
	}
}
