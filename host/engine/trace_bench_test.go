package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/otlptest"
	"github.com/hearth-dev/hearth/internal/telemetry"
)

// BenchmarkTracing is what tracing costs, off against on (every span
// sampled, exported over OTLP/gRPC to a real receiver on loopback that
// decodes and counts what it is sent, in this process: a collector on the
// same machine), each workload's two modes one after the other:
//
//   - pre-tool-use: the round trip of a question from the agent in a
//     plugin to the host's answer (p50, p99), no guard;
//   - tool-use-stream: tool-use reports streamed from the agent into the
//     host, persisted (events/s);
//   - run: a run of 1,000 tasks of the scripted agent on a warm session
//     (ns/task; the difference is the cost of a task's spans), and the
//     spans that reached the receiver per task.
func BenchmarkTracing(b *testing.B) {
	ctx := context.Background()
	// host starts a host, tracing to a receiver when on.
	host := func(b *testing.B, on bool) (*Engine, *otlptest.Receiver, *telemetry.Provider) {
		cfg := &config.Config{Agents: []*config.Agent{testAgent("scripted", "agent")}}
		if on {
			r, err := otlptest.Start()
			if err != nil {
				b.Fatal(err)
			}
			r.CountOnly()
			b.Cleanup(r.Close)
			h, tp := tracedHost(b, r, telemetry.ProtocolGRPC, cfg)
			return h, r, tp
		}
		cfg.DataDir, cfg.Matcher = b.TempDir(), config.DefaultMatcher()
		h, err := New(Options{Config: cfg, Logger: hclog.NewNullLogger()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.Close(context.Background()) })
		return h, nil, nil
	}
	warm := func(b *testing.B, h *Engine) {
		if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:warm"}); err != nil {
			b.Fatal(err)
		}
	}
	modes := []string{"off", "on"}
	for _, mode := range modes {
		b.Run("pre-tool-use/tracing="+mode, func(b *testing.B) {
			h, _, _ := host(b, mode == "on")
			warm(b, h)
			b.ResetTimer()
			out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("checks:%d", b.N)})
			if err != nil {
				b.Fatal(err)
			}
			if (mode == "on") != (out.TraceID != "") {
				b.Fatalf("tracing %s, yet the task's trace is %q", mode, out.TraceID)
			}
			b.ReportMetric(out.Result.Metrics["p50_ns"]/1e3, "p50-µs")
			b.ReportMetric(out.Result.Metrics["p99_ns"]/1e3, "p99-µs")
		})
	}
	for _, mode := range modes {
		b.Run("tool-use-stream/tracing="+mode, func(b *testing.B) {
			h, _, _ := host(b, mode == "on")
			warm(b, h)
			b.ResetTimer()
			start := time.Now()
			out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("tools:%d", b.N)})
			if err != nil {
				b.Fatal(err)
			}
			if out.ToolUses != uint64(b.N) {
				b.Fatalf("acknowledged %d tool uses, want %d", out.ToolUses, b.N)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
	for _, mode := range modes {
		b.Run("run/tracing="+mode, func(b *testing.B) {
			h, r, tp := host(b, mode == "on")
			warm(b, h)
			p := runBenchPipeline(runBenchTasks, 1, false)
			for b.Loop() {
				rh, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: p})
				if err != nil {
					b.Fatal(err)
				}
				info, err := rh.Wait(ctx)
				if err != nil || info.Succeeded != runBenchTasks {
					b.Fatalf("run: %d succeeded, %v", info.Succeeded, err)
				}
			}
			b.StopTimer()
			tasks := float64(b.N * runBenchTasks)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
			if r != nil {
				if err := tp.ForceFlush(ctx); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.Received())/tasks, "spans/task")
			}
		})
	}
}
