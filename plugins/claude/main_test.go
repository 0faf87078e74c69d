package claude_test

import (
	"os"
	"testing"

	"github.com/hearth-dev/hearth/plugins/claude"
)

// TestMain makes the test binary the agents' hook relay too: the agent's
// hooks run its own executable (claude.HookArg).
func TestMain(m *testing.M) {
	claude.RelayIfRequested()
	os.Exit(m.Run())
}
