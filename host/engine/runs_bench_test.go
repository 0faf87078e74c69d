package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
)

// runBenchTasks is the size of the run BenchmarkRunOverhead measures.
const runBenchTasks = 1000

// runBenchPipeline is a pipeline of n tasks of the scripted agent, each
// echoing its name: independent ones, or a chain (each task depends on
// the one before it, so its prompt carries its ancestors' context).
func runBenchPipeline(n, parallel int, chain bool) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: "bench", Parallel: parallel}
	for i := range n {
		t := &hearth.PipelineTask{Name: fmt.Sprintf("t%04d", i), Agent: "scripted", Prompt: fmt.Sprintf("echo:t%04d", i)}
		if chain && i > 0 {
			t.DependsOn = []string{fmt.Sprintf("t%04d", i-1)}
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

// BenchmarkRunOverhead is the host's overhead per task of a run: a run of
// 1,000 tasks of a trivial agent (a real plugin subprocess that echoes
// its prompt) against the same 1,000 tasks handed to Engine.Submit, with
// no run around them, in the same op and the same host, on a real data
// directory. Both sides place each task, record its decision durably,
// run it and ask for its context artifact. The run adds the graph's
// scheduling, the context chain, its lifecycle events, a durable
// "running" mark before each task starts, and a durable write of the
// task's outcome, output and a checkpoint before the next one starts.
//
// deps=none has independent tasks, deps=chain a chain of 1,000 (each
// task's prompt gets its ancestors' context). At parallel=1 one task runs
// at a time on both sides (Submit in a loop); at parallel=4 the run may
// run four at once, and four goroutines share the 1,000 Submits. No
// session is spawned once the clock runs (spawns/op).
//
// Metrics per op (one run and one round of Submits; ns/op is both):
// run-ns/task and submit-ns/task, their difference (overhead-ns/task)
// and their ratio (run/submit). One op of deps=chain takes about 14 s,
// the others 2-4 s.
func BenchmarkRunOverhead(b *testing.B) {
	for _, shape := range []struct {
		deps     string
		parallel int
	}{{"none", 1}, {"chain", 1}, {"none", 4}} {
		b.Run(fmt.Sprintf("deps=%s/parallel=%d", shape.deps, shape.parallel), func(b *testing.B) {
			ctx := context.Background()
			a := testAgent("scripted", "agent")
			h, err := New(Options{
				Config: &config.Config{DataDir: b.TempDir(), Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher()},
				Logger: hclog.NewNullLogger(),
			})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = h.Close(context.Background()) }()
			p := runBenchPipeline(runBenchTasks, shape.parallel, shape.deps == "chain")
			// Warm up: the sessions either side needs are live before
			// the clock starts.
			submitAll(ctx, b, h, runBenchPipeline(4*shape.parallel, 1, false), shape.parallel)
			var spawned int
			var runTime, submitTime time.Duration
			for b.Loop() {
				start := time.Now()
				spawned += submitAll(ctx, b, h, p, shape.parallel)
				submitTime += time.Since(start)

				start = time.Now()
				rh, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: p, RunOptions: hearth.RunOptions{}})
				if err != nil {
					b.Fatal(err)
				}
				info, err := rh.Wait(ctx)
				runTime += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if info.Succeeded != runBenchTasks {
					b.Fatalf("run %s: %d tasks succeeded, want %d", info.ID, info.Succeeded, runBenchTasks)
				}
				outs, err := h.RunOutputs(context.Background(), info.ID)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					if hearth.Action(o.Action) == hearth.ActionSpawned {
						spawned++
					}
				}
			}
			tasks := float64(b.N * runBenchTasks)
			run := float64(runTime.Nanoseconds()) / tasks
			sub := float64(submitTime.Nanoseconds()) / tasks
			b.ReportMetric(run, "run-ns/task")
			b.ReportMetric(sub, "submit-ns/task")
			b.ReportMetric(run-sub, "overhead-ns/task")
			b.ReportMetric(run/sub, "run/submit")
			b.ReportMetric(float64(spawned)/float64(b.N), "spawns/op")
		})
	}
}

// submitAll submits p's tasks with Engine.Submit, from parallel goroutines,
// and waits for them: the same work as a run of p with none of the run's
// bookkeeping (and no context chaining). It returns the sessions spawned.
func submitAll(ctx context.Context, b *testing.B, h *Engine, p *hearth.Pipeline, parallel int) int {
	b.Helper()
	var spawned atomic.Int64
	var wg sync.WaitGroup
	for g := range parallel {
		wg.Go(func() {
			for i := g; i < len(p.Tasks); i += parallel {
				t := p.Tasks[i]
				out, err := h.Submit(ctx, hearth.Task{Agent: t.Agent, Name: t.Name, Prompt: t.Prompt})
				if err != nil {
					b.Error(err)
					return
				}
				if out.Result.Output == "" {
					b.Errorf("task %s: empty output", t.Name)
					return
				}
				if out.Decision.Action == hearth.ActionSpawned {
					spawned.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return int(spawned.Load())
}
