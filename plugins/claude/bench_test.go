package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// fleetTree lays out packages of four Go files of about 1,500 tokens
// each.
func fleetTree(b *testing.B, packages int) (string, []string) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
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

// fleetTask is one question of the workload: the files it names, in one
// package.
type fleetTask struct {
	pkg    string
	prompt string
}

// fleetWorkload is 4 rounds over the packages, in an order shuffled per
// round; each question names two of its package's four files, so that
// over the rounds each file is named twice: 16 distinct files, 16
// questions.
func fleetWorkload(pkgs []string) []fleetTask {
	rng := rand.New(rand.NewPCG(3, 4))
	var out []fleetTask
	for r := range 4 {
		round := append([]string(nil), pkgs...)
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		for _, pkg := range round {
			a, c := r%4, (r+1)%4
			out = append(out, fleetTask{pkg: pkg, prompt: fmt.Sprintf("Round %d: how do %s/f%d.go and %s/f%d.go fit together?", r, pkg, a, pkg, c)})
		}
	}
	return out
}

// BenchmarkClaudeFleet runs the workload (fleetWorkload: 16 questions
// naming files in 4 packages, interleaved) on the managed Claude Code
// agent, with the real CLI against the scripted fake Anthropic API, five
// ways in one run:
//
//   - fresh (placement = "fresh"): a new Claude Code session per task;
//   - roundrobin: 4 warm sessions in rotation, whatever they know;
//   - matcher: hearth's placement;
//   - best: one agent per package with one session each, so every
//     question lands on the session that read its package: the best any
//     placement can do here (each distinct file read once: 1 tool call a
//     task);
//   - bare: `claude -p` alone, a new session per task, no hooks, no
//     hearth: what hearth's overhead per invocation is measured against
//     (compare with fresh).
//
// Reported per task: uncached input tokens (input billed at the full
// price, cache writes included), cached input tokens, tool calls, cost as
// Claude Code reports it (list prices, in thousandths of a dollar), and
// wall seconds.
//
//	go test -run '^$' -bench ClaudeFleet -benchtime 1x ./plugins/claude/
func BenchmarkClaudeFleet(b *testing.B) {
	bin := claudetest.Binary(b)
	ws, pkgs := fleetTree(b, 4)
	work := fleetWorkload(pkgs)
	api := fakeapi.New(key)
	defer api.Close()
	b.Setenv("FAKE_CLAUDE_KEY", key)
	for _, way := range []string{"fresh", "roundrobin", "matcher", "best", "bare"} {
		b.Run(way, func(b *testing.B) {
			var sum map[string]float64
			var cost, wall float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				api.Reset()
				sum, cost, wall = map[string]float64{}, 0, 0
				b.StartTimer()
				if way == "bare" {
					for _, t := range work {
						began := time.Now()
						res := bareClaude(b, bin, api.URL, ws, t.prompt)
						wall += time.Since(began).Seconds()
						sum["input_tokens"] += res.Usage.Input + res.Usage.CacheWrite
						sum["cached_input_tokens"] += res.Usage.CacheRead
						sum["tool_calls"] += float64(res.toolCalls)
						cost += res.Cost
					}
					continue
				}
				h := fleetHost(b, way, bin, api.URL, ws, pkgs)
				for _, t := range work {
					agent := "coder"
					if way == "best" {
						agent = strings.ReplaceAll(t.pkg, "/", "-")
					}
					began := time.Now()
					out, err := h.Submit(context.Background(), hearth.Task{Agent: agent, Prompt: t.prompt, Hints: sdk.Hints{Directories: []string{t.pkg}}})
					if err != nil {
						b.Fatal(err)
					}
					wall += time.Since(began).Seconds()
					for k, v := range out.Result.Metrics {
						sum[k] += v
					}
					cost += out.Result.Cost
				}
				b.StopTimer()
				if err := h.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(len(work))
			b.ReportMetric(sum["input_tokens"]/n, "uncached-in/task")
			b.ReportMetric(sum["cached_input_tokens"]/n, "cached-in/task")
			b.ReportMetric(sum["tool_calls"]/n, "tools/task")
			b.ReportMetric(cost/n*1000, "m$/task")
			b.ReportMetric(wall/n, "wall-s/task")
			if way != "bare" {
				b.ReportMetric(sum["claude_seconds"]/n, "claude-s/task")
			}
		})
	}
}

// fleetHost is a host running the managed agent placed one way: one
// agent "coder" with 4 sessions, or (best) one agent per package.
func fleetHost(b *testing.B, way, bin, url, ws string, pkgs []string) *engine.Engine {
	b.Helper()
	agent := func(name, placement string, sessions int) string {
		return fmt.Sprintf(`
agent %q {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  pool {
    max_sessions = %d
    placement    = %q
  }
  claude_code {
    command     = %q
    model       = "claude-sonnet-4-5"
    base_url    = %q
    api_key_env = "FAKE_CLAUDE_KEY"
  }
}
`, name, os.Args[0], envServe, ws, sessions, placement, bin, url)
	}
	var src string
	if way == "best" {
		for _, p := range pkgs {
			src += agent(strings.ReplaceAll(p, "/", "-"), "matcher", 1)
		}
	} else {
		src = agent("coder", map[string]string{"fresh": "fresh", "roundrobin": "round_robin", "matcher": "matcher"}[way], 4)
	}
	cfg, err := config.Parse([]byte(src), filepath.Join(b.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
	if err != nil {
		b.Fatal(err)
	}
	cfg.DataDir = b.TempDir()
	h, err := engine.New(engine.Options{Config: cfg, Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// bareResult is what a bare `claude -p --output-format json` says.
type bareResult struct {
	Usage struct {
		Input      float64 `json:"input_tokens"`
		CacheWrite float64 `json:"cache_creation_input_tokens"`
		CacheRead  float64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Cost      float64 `json:"total_cost_usd"`
	NumTurns  int     `json:"num_turns"`
	toolCalls int
}

// bareClaude runs `claude -p` alone, as a person scripting it would:
// its own config directory, no hooks.
func bareClaude(b *testing.B, bin, url, ws, prompt string) bareResult {
	b.Helper()
	home := b.TempDir()
	cmd := exec.Command(bin, "-p", "--output-format", "json", "--model", "claude-sonnet-4-5")
	cmd.Dir = ws
	cmd.Stdin = strings.NewReader(prompt)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + key,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"}
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("claude -p: %v\n%s", err, out)
	}
	var r bareResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("claude -p: %v in %s", err, out)
	}
	// Each turn but the last called tools; the workload's questions
	// make one round of two reads.
	if r.NumTurns > 1 {
		r.toolCalls = 2
	}
	return r
}

// BenchmarkClaudeOverhead measures hearth's overhead per invocation
// against `claude -p` alone, in pairs: for each question of a workload
// that reads one file (so two hook calls, PreToolUse and PostToolUse,
// per run), `claude -p` alone (no hooks), then the same question as a
// hearth task on a new session (placement "fresh": the same model work),
// its hooks relayed by the agent's own program (the test binary, which
// links the whole host, as the hearth binary does), then the same with
// hook_relay = hearth-hook. Reported: the median wall of each, and the
// median difference of each hearth way from its pair's bare run.
//
//	go test -run '^$' -bench ClaudeOverhead -benchtime 20x ./plugins/claude/
func BenchmarkClaudeOverhead(b *testing.B) {
	bin := claudetest.Binary(b)
	ws, pkgs := fleetTree(b, 1)
	relay := filepath.Join(b.TempDir(), "hearth-hook")
	if out, err := exec.Command("go", "build", "-o", relay, "../../cmd/hearth-hook").CombinedOutput(); err != nil {
		b.Fatalf("build hearth-hook: %v\n%s", err, out)
	}
	api := fakeapi.New(key)
	defer api.Close()
	b.Setenv("FAKE_CLAUDE_KEY", key)
	host := func(extra string) *engine.Engine {
		src := fmt.Sprintf(`
agent "coder" {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  pool {
    placement = "fresh"
  }
  claude_code {
    command     = %q
    model       = "claude-sonnet-4-5"
    base_url    = %q
    api_key_env = "FAKE_CLAUDE_KEY"
    %s
  }
}
`, os.Args[0], envServe, ws, bin, api.URL, extra)
		cfg, err := config.Parse([]byte(src), filepath.Join(b.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
		if err != nil {
			b.Fatal(err)
		}
		cfg.DataDir = b.TempDir()
		h, err := engine.New(engine.Options{Config: cfg, Logger: hclog.NewNullLogger()})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	self, relayed := host(""), host(fmt.Sprintf("hook_relay = %q", relay))
	defer self.Close(context.Background())
	defer relayed.Close(context.Background())
	timeTask := func(h *engine.Engine, prompt string) float64 {
		began := time.Now()
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: prompt})
		if err != nil {
			b.Fatal(err)
		}
		if out.Result.Metrics["tool_calls"] != 1 {
			b.Fatalf("%v tool calls, want 1", out.Result.Metrics["tool_calls"])
		}
		return time.Since(began).Seconds()
	}
	var bare, viaSelf, viaRelay, dSelf, dRelay []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		prompt := fmt.Sprintf("Question %d: what is in %s/f%d.go?", i, pkgs[0], i%4)
		began := time.Now()
		bareClaude(b, bin, api.URL, ws, prompt)
		t0 := time.Since(began).Seconds()
		t1 := timeTask(self, prompt)
		t2 := timeTask(relayed, prompt)
		bare, viaSelf, viaRelay = append(bare, t0), append(viaSelf, t1), append(viaRelay, t2)
		dSelf, dRelay = append(dSelf, t1-t0), append(dRelay, t2-t0)
	}
	b.StopTimer()
	b.ReportMetric(median(bare)*1000, "bare-ms")
	b.ReportMetric(median(viaSelf)*1000, "hearth-ms")
	b.ReportMetric(median(viaRelay)*1000, "hearth-relay-ms")
	b.ReportMetric(median(dSelf)*1000, "overhead-ms")
	b.ReportMetric(median(dRelay)*1000, "overhead-relay-ms")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
