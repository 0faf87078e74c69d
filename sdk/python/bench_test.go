package python

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/process"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// The benchmarks put the Python scripted agent (testdata/scripted.py)
// next to the Go test agent (internal/testagent, served by this test
// binary) in the same run, through the same host code. Results and the
// command are in BENCHMARKS.md ("Python agents").

// agentKinds are the two agents compared: name, argv and env.
func agentKinds(b *testing.B) []struct {
	name string
	argv []string
	env  []string
} {
	python := needPython(b)
	return []struct {
		name string
		argv []string
		env  []string
	}{
		{"go", []string{os.Args[0]}, []string{envGoAgent + "=1", "GORACE=atexit_sleep_ms=0"}},
		{"python", []string{python, filepath.Join(sdkDir(b), "testdata", "scripted.py")}, nil},
	}
}

// rawPython is the floor under the Python SDK: a plugin written straight
// against grpcio (testdata/raw.py), for the cold start only.
func rawPython(b *testing.B) []string {
	return []string{needPython(b), filepath.Join(sdkDir(b), "testdata", "raw.py")}
}

func reportPercentiles(b *testing.B, ds []time.Duration, unit time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/float64(unit), "p50-"+name)
	b.ReportMetric(float64(ds[len(ds)*99/100])/float64(unit), "p99-"+name)
}

// BenchmarkPythonColdStart: spawn, handshake (hearth's TLS), dispense and
// Describe, as the host starts every session. Target: Python p99 <= 300 ms.
func BenchmarkPythonColdStart(b *testing.B) {
	ctx := context.Background()
	keys, err := agentplugin.NewHostTLS()
	if err != nil {
		b.Fatal(err)
	}
	kinds := agentKinds(b)
	kinds = append(kinds, struct {
		name string
		argv []string
		env  []string
	}{"python-raw", rawPython(b), nil})
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var ds []time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				p, err := process.Start(ctx, process.Launch{
					Agent: "scripted", Session: fmt.Sprintf("bench-%d", i), Argv: k.argv, Env: k.env,
					Dir: os.TempDir(), StartTimeout: 20 * time.Second, Logger: hclog.NewNullLogger(), LogLevel: "off", TLS: keys,
				})
				if err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
				b.StopTimer()
				p.Stop(false)
				b.StartTimer()
			}
			reportPercentiles(b, ds, time.Millisecond, "ms")
		})
	}
}

// BenchmarkPythonIdleMemory: the resident memory of one idle session's
// process (its VmRSS after Describe), averaged over b.N sessions.
func BenchmarkPythonIdleMemory(b *testing.B) {
	ctx := context.Background()
	keys, err := agentplugin.NewHostTLS()
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range agentKinds(b) {
		b.Run(k.name, func(b *testing.B) {
			var total float64
			for i := 0; i < b.N; i++ {
				p, err := process.Start(ctx, process.Launch{
					Agent: "scripted", Session: fmt.Sprintf("bench-%d", i), Argv: k.argv, Env: k.env,
					Dir: os.TempDir(), StartTimeout: 20 * time.Second, Logger: hclog.NewNullLogger(), LogLevel: "off", TLS: keys,
				})
				if err != nil {
					b.Fatal(err)
				}
				total += rssMiB(b, p.PID())
				p.Stop(false)
			}
			b.ReportMetric(total/float64(b.N), "MiB/session")
		})
	}
}

// rssMiB is the resident set of process pid, in MiB.
func rssMiB(b *testing.B, pid int) float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// BenchmarkPythonPreToolUse: one pre-tool-use question asked by the agent
// inside its plugin and answered by the host (no guard configured), as
// the agent measures it. Target: Python p50 <= 2x Go's.
func BenchmarkPythonPreToolUse(b *testing.B) {
	benchPrompt(b, "checks", func(b *testing.B, out *hearth.Outcome, _ time.Duration) {
		b.ReportMetric(out.Result.Metrics["p50_ns"]/1e3, "p50-µs")
		b.ReportMetric(out.Result.Metrics["p99_ns"]/1e3, "p99-µs")
	})
}

// BenchmarkPythonToolUseStream: tool-use reports streamed by the agent
// into the host, each updating the session's fingerprint and persisted
// before the stream is acknowledged.
func BenchmarkPythonToolUseStream(b *testing.B) {
	benchPrompt(b, "tools", func(b *testing.B, _ *hearth.Outcome, d time.Duration) {
		b.ReportMetric(float64(b.N)/d.Seconds(), "reports/s")
	})
}

// benchPrompt runs "VERB:b.N" on a warm session of each agent.
func benchPrompt(b *testing.B, verb string, report func(*testing.B, *hearth.Outcome, time.Duration)) {
	ctx := context.Background()
	for _, k := range agentKinds(b) {
		b.Run(k.name, func(b *testing.B) {
			var env []string
			for _, e := range k.env {
				env = append(env, e)
			}
			// read_paths: the Python agent imports hearth_agent from the
			// SDK's source, outside its workspace, under confinement.
			src := fmt.Sprintf("agent \"scripted\" {\n  command = %s\n  read_paths = [%q]\n  start_timeout = \"20s\"\n  env = {\n%s  }\n}\n", hclList(k.argv), sdkDir(b), hclEnv(env))
			h, err := hostFromConfig(b.TempDir(), src, hclogDiscard{})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(ctx)
			if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:warm"}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("%s:%d", verb, b.N)})
			if err != nil {
				b.Fatal(err)
			}
			report(b, out, time.Since(start))
		})
	}
}

type hclogDiscard struct{}

func (hclogDiscard) Write(p []byte) (int, error) { return len(p), nil }

func hclList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func hclEnv(env []string) string {
	var sb strings.Builder
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		fmt.Fprintf(&sb, "    %s = %q\n", k, v)
	}
	return sb.String()
}
