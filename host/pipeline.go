package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// Why a pipeline task did not run.
var (
	// ErrSkipped: a task it depends on failed.
	ErrSkipped = errors.New("skipped: a task it depends on failed")
	// ErrCancelled: the run was cancelled first.
	ErrCancelled = errors.New("skipped: the run was cancelled before it started")
)

// TaskReport is one pipeline task, finished.
type TaskReport struct {
	Name    string   `json:"name"`
	Outcome *Outcome `json:"outcome,omitempty"`
	Err     error    `json:"-"`
	Error   string   `json:"error,omitempty"`
}

// PipelineSummary counts what a pipeline run did.
type PipelineSummary struct {
	Pipeline   string        `json:"pipeline"`
	Tasks      int           `json:"tasks"`
	Succeeded  int           `json:"succeeded"`
	Failed     int           `json:"failed"`
	Skipped    int           `json:"skipped"`
	Spawned    int           `json:"spawned"`
	Reused     int           `json:"reused"`
	Rehydrated int           `json:"rehydrated"`
	Duration   time.Duration `json:"duration"`
	// TaskTime is the sum of the tasks' own durations.
	TaskTime time.Duration `json:"task_time"`
}

type taskState int

const (
	taskPending taskState = iota
	taskRunning
	taskDone
	taskFailed
	taskSkipped
)

// RunPipeline runs a pipeline's tasks: each once the tasks it depends on
// have succeeded, at most p.Parallel at a time, and, among tasks ready at
// the same time, in the order the config lists them. A failed task's
// dependents are skipped. onDone, if not nil, is called as each task
// finishes, from one goroutine at a time. The error is non-nil when a task
// failed or ctx ended the run.
func (h *Host) RunPipeline(ctx context.Context, p *config.Pipeline, onDone func(TaskReport)) (PipelineSummary, error) {
	sum := PipelineSummary{Pipeline: p.Name, Tasks: len(p.Tasks)}
	parallel := max(p.Parallel, 1)
	start := h.now()
	var (
		mu       sync.Mutex // guards state, running and sum
		state    = make(map[string]taskState, len(p.Tasks))
		running  int
		reportMu sync.Mutex // serializes onDone
		changed  = make(chan struct{}, len(p.Tasks))
		wg       sync.WaitGroup
	)
	report := func(r TaskReport) {
		if r.Err != nil {
			r.Error = r.Err.Error()
		}
		if onDone != nil {
			reportMu.Lock()
			onDone(r)
			reportMu.Unlock()
		}
	}
	finish := func(r TaskReport) {
		mu.Lock()
		switch {
		case r.Err == nil:
			state[r.Name] = taskDone
			sum.Succeeded++
			sum.TaskTime += r.Outcome.Duration
			switch r.Outcome.Decision.Action {
			case ActionSpawned:
				sum.Spawned++
			case ActionReused:
				sum.Reused++
			case ActionRehydrated:
				sum.Rehydrated++
			}
		case errors.Is(r.Err, ErrSkipped), errors.Is(r.Err, ErrCancelled):
			state[r.Name] = taskSkipped
			sum.Skipped++
		default:
			state[r.Name] = taskFailed
			sum.Failed++
		}
		mu.Unlock()
		report(r)
	}
	for {
		mu.Lock()
		finished := 0
		var skip, cancelled, launch []*config.PipelineTask
		for _, t := range p.Tasks {
			switch state[t.Name] {
			case taskDone, taskFailed, taskSkipped:
				finished++
				continue
			case taskRunning:
				continue
			}
			deps := depState(t, state)
			switch {
			case ctx.Err() != nil:
				state[t.Name] = taskSkipped
				sum.Skipped++
				cancelled = append(cancelled, t)
			case deps == depsBroken:
				state[t.Name] = taskSkipped
				sum.Skipped++
				skip = append(skip, t)
			case deps == depsDone && running < parallel:
				state[t.Name] = taskRunning
				running++
				launch = append(launch, t)
			}
		}
		done := finished == len(p.Tasks)
		mu.Unlock()
		if done {
			break
		}
		for _, t := range skip {
			report(TaskReport{Name: t.Name, Err: ErrSkipped})
		}
		for _, t := range cancelled {
			report(TaskReport{Name: t.Name, Err: ErrCancelled})
		}
		for _, t := range launch {
			wg.Go(func() {
				out, err := h.Submit(ctx, Task{
					Agent: t.Agent, Name: t.Name, Prompt: t.Prompt,
					Hints: sdk.Hints{Files: t.Hints.Files, Directories: t.Hints.Directories, Technologies: t.Hints.Technologies},
				})
				mu.Lock()
				running--
				mu.Unlock()
				finish(TaskReport{Name: t.Name, Outcome: out, Err: err})
				changed <- struct{}{}
			})
		}
		if len(skip) == 0 && len(cancelled) == 0 && len(launch) == 0 {
			// Nothing to do until a running task finishes (and one is
			// running: otherwise this pass would have launched or skipped
			// something). After ctx ends, the next pass skips the rest.
			if ctx.Err() != nil {
				<-changed
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
			}
		}
	}
	wg.Wait()
	sum.Duration = h.now().Sub(start)
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("pipeline %s: %w", p.Name, err)
	}
	if sum.Failed > 0 || sum.Skipped > 0 {
		return sum, fmt.Errorf("pipeline %s: %d of %d tasks failed, %d skipped", p.Name, sum.Failed, sum.Tasks, sum.Skipped)
	}
	return sum, nil
}

type depsStatus int

const (
	depsWaiting depsStatus = iota
	depsDone
	depsBroken
)

func depState(t *config.PipelineTask, state map[string]taskState) depsStatus {
	st := depsDone
	for _, d := range t.DependsOn {
		switch state[d] {
		case taskFailed, taskSkipped:
			return depsBroken
		case taskDone:
		default:
			st = depsWaiting
		}
	}
	return st
}
