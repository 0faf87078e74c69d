package claude_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// envServe makes the test binary the claude agent's plugin, configured by
// its environment, for the tests that run it under a real host.
const envServe = "HEARTH_TEST_SERVE_CLAUDE"

// TestMain makes the test binary the agents' hook relay too (the agent's
// hooks run its own executable, claude.HookArg), and the plugin a host
// starts (envServe).
func TestMain(m *testing.M) {
	claude.RelayIfRequested()
	if os.Getenv(envHelperHost) != "" {
		helperHost()
	}
	if os.Getenv(envServe) != "" {
		plugin.Serve(claude.NewFromEnv())
		os.Exit(0)
	}
	// The agents these tests run in process make their state directories
	// in TMPDIR, which a plugin process has to itself (host/process) but
	// this test binary shares with everything else on the machine: give
	// it one of its own, removed at the end.
	tmp, err := os.MkdirTemp("", "claudetest")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMPDIR", tmp)
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) {
			_ = os.RemoveAll(tmp)
			os.Exit(code)
		}),
		// The host's process starter lives as long as the process (see
		// host/engine's TestMain); the HTTP client keeps idle connections
		// to the fake servers, which close with them.
		goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
