package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

// runAgent uses every method of its RunCallbacks, over the real plugin
// protocol, and returns what it saw.
type runAgent struct{}

func (runAgent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "runner", Version: "1"}, nil
}

// errNotARun is what runAgent returns when its Callbacks are not RunCallbacks.
var errNotARun = errors.New("runner: the task is not part of a run")

func (runAgent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	rcb, ok := cb.(sdk.RunCallbacks)
	if !ok {
		return sdk.Result{}, sdk.Permanent(errNotARun)
	}
	in, err := rcb.State(ctx, "inputs")
	if err != nil {
		return sdk.Result{}, err
	}
	files, err := rcb.Files(ctx)
	if err != nil {
		return sdk.Result{}, err
	}
	done, err := rcb.DoneChunks(ctx, files[0].Name)
	if err != nil {
		return sdk.Result{}, err
	}
	for c := len(done); c < 3; c++ {
		if err := rcb.MarkChunk(ctx, files[0].Name, c); err != nil {
			return sdk.Result{}, err
		}
	}
	if err := rcb.SetState(ctx, "output", map[string]any{"seen": json.RawMessage(in), "skipped": len(done)}); err != nil {
		return sdk.Result{}, err
	}
	n, err := rcb.Checkpoint(ctx, "after-output")
	if err != nil {
		return sdk.Result{}, err
	}
	// A write outside the agent's sections must come back as ErrNotOwner,
	// with the host's message.
	err = rcb.SetState(ctx, "plan", 1)
	if !errors.Is(err, sdk.ErrNotOwner) {
		return sdk.Result{}, fmt.Errorf("write outside the owned sections: got %v, want ErrNotOwner", err)
	}
	return sdk.Result{Output: fmt.Sprintf("checkpoint %d; %s", n, err)}, nil
}

func TestRunMethodsCrossThePluginBoundary(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, runAgent{}, conformance.Options{Logger: hclog.NewNullLogger()})
	run := conformance.NewRun()
	run.Set("inputs", map[string]int{"courses": 2})
	run.AddFile(sdk.File{Name: "syllabus.md", Path: "/data/files/ab", SHA256: "ab", Size: 10})
	run.Own("output")
	h.Recorder.SetRun(run)

	res, err := h.Run(context.Background(), sdk.Task{Run: "run-1", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Output, "checkpoint 1; ") || !strings.Contains(res.Output, `section "plan"`) {
		t.Errorf("output = %q, want checkpoint 1 and the refusal naming section plan", res.Output)
	}
	var out struct {
		Seen    map[string]int `json:"seen"`
		Skipped int            `json:"skipped"`
	}
	if err := json.Unmarshal(run.Get("output"), &out); err != nil {
		t.Fatal(err)
	}
	if out.Seen["courses"] != 2 || out.Skipped != 0 {
		t.Errorf("output section = %+v, want the inputs seen and nothing skipped", out)
	}

	// A second task resumes: the three chunks are done.
	if _, err := h.Run(context.Background(), sdk.Task{Run: "run-1", Prompt: "again"}); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(run.Get("output"), &out); err != nil {
		t.Fatal(err)
	}
	if out.Skipped != 3 {
		t.Errorf("second task skipped %d chunks, want 3", out.Skipped)
	}
	if got := run.Checkpoints(); len(got) != 2 || got[0] != "after-output" {
		t.Errorf("checkpoints = %q", got)
	}
}

func TestRunMethodsOutsideARun(t *testing.T) {
	t.Parallel()
	h := sdktest.New(t, runAgent{}, conformance.Options{})
	// A task outside a run is not given RunCallbacks.
	_, err := h.Run(context.Background(), sdk.Task{Prompt: "go"})
	if err == nil || !strings.Contains(err.Error(), errNotARun.Error()) {
		t.Fatalf("err = %v, want the agent to find no RunCallbacks", err)
	}
	// A host that answers the run calls of a task it does not count as
	// part of a run refuses them for good, whatever the task says.
	_, err = h.Agent.Run(context.Background(), sdk.Task{ID: "t", Run: "run-1", Prompt: "go"}, h.Recorder.For("t"))
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "task t is not part of a run") {
		t.Fatalf("err = %v, want a permanent failure saying the task is not part of a run", err)
	}
}
