package model_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// Sonnet 4.5's published list prices, dollars per million tokens: input,
// cache read, 5-minute cache write, output.
const priceList = `prices {
      input        = 3
      cached_input = 0.3
      cache_write  = 3.75
      output       = 15
    }`

// modelLatency is how long a hosted model takes to answer, roughly: 0.3 s
// to the first token, prefill at 10,000 uncached and 100,000 cached input
// tokens a second, and 60 output tokens a second.
func modelLatency(u fakeapi.Usage) time.Duration {
	s := 0.3 + float64(u.Input+u.CacheWrite)/10_000 + float64(u.CachedInput)/100_000 + float64(u.Output)/60
	return time.Duration(s * float64(time.Second))
}

// latencyScale shrinks the model's latency in the benchmark, which
// reports model seconds scaled back.
const latencyScale = 20

// tourTree lays out a code-tour-like tree: packages of four Go files of
// about 1,500 tokens each.
func tourTree(b *testing.B, packages int) (string, []string) {
	dir := b.TempDir()
	var pkgs []string
	for p := range packages {
		pkg := fmt.Sprintf("pkg/p%d", p)
		pkgs = append(pkgs, pkg)
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 4 {
			var src strings.Builder
			fmt.Fprintf(&src, "package p%d\n\n", p)
			for fn := range 60 {
				fmt.Fprintf(&src, "// F%d_%d does its part of the package's work.\nfunc F%d_%d(x int) int { return x*%d + %d }\n\n", f, fn, f, fn, fn, f)
			}
			if err := os.WriteFile(filepath.Join(dir, pkg, fmt.Sprintf("f%d.go", f)), []byte(src.String()), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir, pkgs
}

// BenchmarkModelTour runs a code-tour-like workload (6 packages, 4
// questions each, 24 in all, interleaved: each round asks one question
// per package, in an order shuffled per round) against the scripted fake
// Anthropic API, three ways in one run, by the pool's placement:
//
//   - naive (placement = "fresh"): a new session, so a new conversation,
//     per task;
//   - roundrobin: 6 warm sessions in rotation, whatever they know;
//   - matcher: hearth's placement.
//
// The fake model reads a package's files only when their content is not
// already in the conversation it is sent, and its API caches prefixes as
// Anthropic documents (see package fakeapi). Reported per task: uncached
// input tokens (billed at the input price, cache writes included), cached
// input tokens, output tokens, tool calls, cost at Sonnet 4.5's list
// prices, and model seconds (modelLatency, run 20x faster and scaled
// back). Target: matcher >= 3x fewer uncached input tokens and tool calls
// than naive, and fewer than roundrobin.
func BenchmarkModelTour(b *testing.B) {
	ws, pkgs := tourTree(b, 6)
	f := fakeapi.New(testKey)
	defer f.Close()
	f.Latency = func(u fakeapi.Usage) time.Duration { return modelLatency(u) / latencyScale }
	b.Setenv("FAKE_MODEL_KEY", testKey)
	rng := rand.New(rand.NewPCG(1, 2))
	var order []string
	for range 4 {
		round := append([]string(nil), pkgs...)
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		order = append(order, round...)
	}
	for _, way := range []string{"naive", "roundrobin", "matcher"} {
		b.Run(way, func(b *testing.B) {
			placement := map[string]string{"naive": "fresh", "roundrobin": "round_robin", "matcher": "matcher"}[way]
			src := fmt.Sprintf(`
agent "ask" {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  pool {
    max_sessions = 6
    placement    = %q
  }
  model {
    model       = "claude-sonnet-4-5"
    base_url    = %q
    api_key_env = "FAKE_MODEL_KEY"
    %s
  }
}`, os.Args[0], envServe, ws, placement, f.URL+"/", priceList)
			cfg, err := config.Parse([]byte(src), filepath.Join(b.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
			if err != nil {
				b.Fatal(err)
			}
			var sum map[string]float64
			var cost float64
			var tasks int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f.Reset()
				c := *cfg
				c.DataDir = b.TempDir()
				h, err := engine.New(engine.Options{Config: &c, Logger: hclog.NewNullLogger()})
				if err != nil {
					b.Fatal(err)
				}
				sum, cost, tasks = map[string]float64{}, 0, 0
				b.StartTimer()
				for q, pkg := range order {
					out, err := h.Submit(context.Background(), hearth.Task{Agent: "ask", Prompt: fmt.Sprintf("Question %d about %s: ask:%s", q, pkg, pkg), Hints: sdk.Hints{Directories: []string{pkg}}})
					if err != nil {
						b.Fatal(err)
					}
					for k, v := range out.Result.Metrics {
						sum[k] += v
					}
					cost += out.Result.Cost
					tasks++
				}
				b.StopTimer()
				if err := h.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(tasks)
			b.ReportMetric(sum["input_tokens"]/n, "uncached-in/task")
			b.ReportMetric(sum["cached_input_tokens"]/n, "cached-in/task")
			b.ReportMetric(sum["output_tokens"]/n, "out/task")
			b.ReportMetric(sum["tool_calls"]/n, "tools/task")
			b.ReportMetric(sum["model_calls"]/n, "calls/task")
			b.ReportMetric(cost/n*1000, "m$/task")
			b.ReportMetric(sum["model_seconds"]*latencyScale/n, "model-s/task")
		})
	}
}
