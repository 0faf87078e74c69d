package pool

import (
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// envPlugin makes the test binary a plugin (the helper-process pattern):
// the scripted agent, with the capacity in envCapacity.
const (
	envPlugin   = "HEARTH_TEST_PLUGIN"
	envCapacity = "HEARTH_TEST_CAPACITY"
)

// The pool starts goroutines (session starts, idle sweeps) and plugin
// processes; none may outlive a test. The one goroutine that starts
// plugins lives as long as the process, locked to its thread: the
// parent-death signal is tied to the thread that started the child
// (golang/go#27505).
func TestMain(m *testing.M) {
	switch os.Getenv(envPlugin) {
	case "agent":
		capacity, _ := strconv.Atoi(os.Getenv(envCapacity))
		agentplugin.Serve(testagent.New("scripted", capacity))
		os.Exit(0)
	case "stateless":
		// The scripted agent, without its StateExporter: its dormant
		// sessions cannot be rehydrated.
		agentplugin.Serve(struct{ sdk.Agent }{testagent.New("scripted", 1)})
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}
