package sdktest_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

// Nothing New starts outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNewClosesTheHarnessWhenTheTestEnds: the harness New returns runs
// tasks through the real protocol, and is closed (its agent's server
// stopped) once the test that made it ends.
func TestNewClosesTheHarnessWhenTheTestEnds(t *testing.T) {
	ctx := context.Background()
	var h *conformance.Harness
	t.Run("inner", func(t *testing.T) {
		h = sdktest.New(t, testagent.New("scripted", 0), conformance.Options{})
		res, err := h.Run(ctx, sdk.Task{ID: "t1", Prompt: "read:a.go;echo:hi"})
		if err != nil || res.Output != "hi" || len(h.Recorder.ToolUses("t1")) != 1 {
			t.Fatalf("got %+v, %v, %d tool uses; want hi and one tool use", res, err, len(h.Recorder.ToolUses("t1")))
		}
	})
	if _, err := h.Run(ctx, sdk.Task{Prompt: "echo:again"}); err == nil {
		t.Error("the harness ran a task after its test ended")
	}
}
