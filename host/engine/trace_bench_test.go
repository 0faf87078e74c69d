package engine

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
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
// decodes and counts what it is sent), each workload's two modes one
// after the other, -tracing.rounds times (off, on, off, on, ...), so
// that a change in the machine's load hits both alike.
//
// The receiver runs in a process of its own (this binary, as
// envReceiver): a trace backend is another machine in a deployment, and
// its decoding is not the host's cost. It still shares this machine's
// cores, so the figures are, if anything, the worse for it.
//
// Beside each workload's figure, host-cpu is the CPU time this process
// (the host; not the plugin, not the receiver) spent per event or task:
// the cost itself, which the machine's load moves far less than the
// wall-clock figures.
//
//   - pre-tool-use: the round trip of a question from the agent in a
//     plugin to the host's answer (p50, p99), no guard;
//   - tool-use-stream: tool-use reports streamed from the agent into the
//     host, persisted (events/s), and the spans that reached the
//     receiver per report;
//   - run: a run of 1,000 tasks of the scripted agent on a warm session
//     (ns/task; the difference is the cost of a task's spans), and the
//     spans that reached the receiver per task.
func BenchmarkTracing(b *testing.B) {
	// each runs f for each round and mode, interleaved.
	each := func(workload string, f func(b *testing.B, on bool)) {
		for round := 1; round <= *tracingRounds; round++ {
			for _, mode := range []string{"off", "on"} {
				b.Run(fmt.Sprintf("%s/round=%d/tracing=%s", workload, round, mode), func(b *testing.B) { f(b, mode == "on") })
			}
		}
	}
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envReceiver+"=1")
	cmd.Stderr = os.Stderr
	recv, err := otlptest.StartProcess(cmd)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := recv.Close(); err != nil {
			b.Error(err)
		}
	})
	// host starts a host, tracing to the receiver when on.
	host := func(b *testing.B, on bool) (*Engine, *telemetry.Provider) {
		cfg := &config.Config{Agents: []*config.Agent{testAgent("scripted", "agent")}}
		if on {
			return tracedHostAt(b, recv.Endpoint(telemetry.ProtocolGRPC), telemetry.ProtocolGRPC, cfg)
		}
		cfg.DataDir, cfg.Matcher = b.TempDir(), config.DefaultMatcher()
		h, err := New(Options{Config: cfg, Logger: hclog.NewNullLogger()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = h.Close(context.Background()) })
		return h, nil
	}
	warm := func(b *testing.B, h *Engine) {
		if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:warm"}); err != nil {
			b.Fatal(err)
		}
	}
	// spans returns what has reached the receiver, after flushing tp.
	spans := func(b *testing.B, tp *telemetry.Provider) int64 {
		if tp == nil {
			return 0
		}
		if err := tp.ForceFlush(ctx); err != nil {
			b.Fatal(err)
		}
		n, err := recv.Received()
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	each("pre-tool-use", func(b *testing.B, on bool) {
		h, tp := host(b, on)
		warm(b, h)
		b.ResetTimer()
		cpu := hostCPU(b)
		out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("checks:%d", b.N)})
		if err != nil {
			b.Fatal(err)
		}
		if on != (out.TraceID != "") {
			b.Fatalf("tracing on is %v, yet the task's trace is %q", on, out.TraceID)
		}
		b.ReportMetric(out.Result.Metrics["p50_ns"]/1e3, "p50-µs")
		b.ReportMetric(out.Result.Metrics["p99_ns"]/1e3, "p99-µs")
		spans(b, tp) // the spans' export is part of their cost
		b.ReportMetric(float64((hostCPU(b)-cpu).Microseconds())/float64(b.N), "host-cpu-µs/op")
	})
	each("tool-use-stream", func(b *testing.B, on bool) {
		h, tp := host(b, on)
		warm(b, h)
		before := spans(b, tp)
		b.ResetTimer()
		cpu := hostCPU(b)
		b.ReportMetric(streamToolUses(b, h), "events/s")
		b.StopTimer()
		arrived := spans(b, tp) - before
		b.ReportMetric(float64((hostCPU(b)-cpu).Microseconds())/float64(b.N), "host-cpu-µs/event")
		if tp != nil {
			b.ReportMetric(float64(arrived)/float64(b.N), "spans/event")
		}
	})
	each("run", func(b *testing.B, on bool) {
		h, tp := host(b, on)
		warm(b, h)
		before := spans(b, tp)
		p := runBenchPipeline(runBenchTasks, 1, false)
		b.ResetTimer()
		cpu := hostCPU(b)
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
		arrived := spans(b, tp) - before
		b.ReportMetric(float64((hostCPU(b)-cpu).Microseconds())/tasks, "host-cpu-µs/task")
		if tp != nil {
			b.ReportMetric(float64(arrived)/tasks, "spans/task")
		}
	})
}

// hostCPU is the CPU time this process has used, user and system.
func hostCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tracingRounds is how many times BenchmarkTracing measures each
// workload off and on.
var tracingRounds = flag.Int("tracing.rounds", 1, "BenchmarkTracing: rounds of each workload, tracing off then on")
