package host

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
)

func TestRunPipeline(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := &config.Pipeline{Name: "p", Parallel: 0, Tasks: []*config.PipelineTask{
		{Name: "a", Agent: "scripted", Prompt: "echo:a"},
		{Name: "b", Agent: "scripted", Prompt: "fail:broken", DependsOn: []string{"a"}},
		{Name: "c", Agent: "scripted", Prompt: "echo:c", DependsOn: []string{"b"}},
		{Name: "d", Agent: "scripted", Prompt: "echo:d", DependsOn: []string{"a"}},
	}}
	var mu sync.Mutex
	got := map[string]error{}
	sum, err := h.RunPipeline(context.Background(), p, func(r TaskReport) {
		mu.Lock()
		got[r.Name] = r.Err
		mu.Unlock()
	})
	if err == nil || sum.Succeeded != 2 || sum.Failed != 1 || sum.Skipped != 1 {
		t.Fatalf("got %+v, %v; want a and d done, b failed, c skipped", sum, err)
	}
	if got["a"] != nil || got["d"] != nil || got["b"] == nil || !errors.Is(got["c"], ErrSkipped) {
		t.Errorf("reports: %v", got)
	}
}

func TestRunPipelineCancelled(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &config.Pipeline{Name: "p", Parallel: 1, Tasks: []*config.PipelineTask{{Name: "a", Agent: "scripted", Prompt: "echo:a"}}}
	var reported error
	sum, err := h.RunPipeline(ctx, p, func(r TaskReport) { reported = r.Err })
	if !errors.Is(err, context.Canceled) || sum.Skipped != 1 || !errors.Is(reported, ErrCancelled) {
		t.Errorf("got %+v, %v, %v; want the task skipped as cancelled", sum, err, reported)
	}
}
