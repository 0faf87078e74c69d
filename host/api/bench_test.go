package api_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// BenchmarkPlace asks where a task would go, in-process (Engine.Place: the
// matcher's indexed decision) and through the daemon (client.Place over
// the unix socket: encode, gRPC, decode), in the same run, over 1,000
// sessions of an external agent with 20 files each. Reported per op:
// p50 and p99 latency; the parallel case, the daemon's throughput with
// 8 callers.
//
//	go test -run '^$' -bench Place -benchtime 20000x ./host/api/
func BenchmarkPlace(b *testing.B) {
	d := startDaemon(b, &config.Config{Agents: []*config.Agent{config.DefaultExternal("claude-code", config.ExternalClaudeCode)},
		Hooks: config.Hooks{Agent: "claude-code"}})
	ctx := context.Background()
	const sessions, files = 1000, 20
	for i := range sessions {
		ref := hearth.ExternalRef{Session: fmt.Sprintf("s%04d", i), Workspace: "/repo"}
		paths := make([]string, files)
		for j := range paths {
			paths[j] = fmt.Sprintf("/repo/pkg%03d/f%02d.go", i%200, j)
		}
		if err := d.h.ReportExternalToolUse(ctx, ref, sdk.ToolUse{Tool: "Read", Paths: paths, Outcome: sdk.OutcomeOK}); err != nil {
			b.Fatal(err)
		}
		if err := d.h.ExternalTurn(ctx, ref, false); err != nil {
			b.Fatal(err)
		}
	}
	hints := sdk.Hints{Directories: []string{"/repo/pkg042"}, Files: []string{"/repo/pkg042/f03.go"}, Technologies: []string{"go"}}
	check := func(dec hearth.Decision) {
		if dec.Action != hearth.ActionResume {
			b.Fatalf("placement %+v; want a session to resume", dec)
		}
	}
	b.Run("side=in-process", func(b *testing.B) {
		timed(b, func() {
			dec, err := d.h.Place(ctx, "claude-code", hints)
			if err != nil {
				b.Fatal(err)
			}
			check(dec)
		})
	})
	b.Run("side=daemon", func(b *testing.B) {
		timed(b, func() {
			dec, err := d.c.Place(ctx, "claude-code", hints)
			if err != nil {
				b.Fatal(err)
			}
			check(dec)
		})
	})
	b.Run("side=daemon-8-callers", func(b *testing.B) {
		b.SetParallelism(8 / max(1, runtimeProcs()))
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := d.c.Place(ctx, "claude-code", hints); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "placements/s")
	})
}

// timed runs fn b.N times and reports its p50 and p99 latency, and the
// rate.
func timed(b *testing.B, fn func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		fn()
		lat = append(lat, time.Since(t0))
	}
	total := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(b.N)/total.Seconds(), "placements/s")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
