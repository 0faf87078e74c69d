package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/internal/procgroup"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/rawplugin"
	"github.com/hearth-dev/hearth/internal/rawplugin/rawpb"
	"github.com/hearth-dev/hearth/internal/testagent"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// The benchmarks here compare hearth with the raw layer underneath in the
// same run: a go-plugin plugin (internal/rawplugin) served by the same test
// binary, over the same gRPC, with the same AutoMTLS, and no hearth code.
// Results and the commands that produce them are in BENCHMARKS.md.

// startRaw spawns the raw plugin, with go-plugin's AutoMTLS, and returns
// its client.
func startRaw(b *testing.B) (*plugin.Client, rawpb.RawClient) { return startRawTLS(b, true) }

func startRawTLS(b *testing.B, autoMTLS bool) (*plugin.Client, rawpb.RawClient) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envPlugin+"=raw")
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  agentplugin.Handshake,
		Plugins:          plugin.PluginSet{rawplugin.Name: rawplugin.Plugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         autoMTLS,
		Logger:           hclog.NewNullLogger(),
	})
	rpc, err := c.Client()
	if err != nil {
		c.Kill()
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(rawplugin.Name)
	if err != nil {
		c.Kill()
		b.Fatal(err)
	}
	return c, raw.(rawpb.RawClient)
}

// reportPercentiles adds p50 and p99 of ds, in the unit given, to b's
// results.
func reportPercentiles(b *testing.B, ds []time.Duration, unit time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/float64(unit), "p50-"+name)
	b.ReportMetric(float64(ds[len(ds)*99/100])/float64(unit), "p99-"+name)
}

// BenchmarkColdStart: spawn, handshake, dispense and the first call.
// Reference on this machine class: 6.2 ms p50 for a bare go-plugin plugin;
// target: hearth's p99 <= 20 ms. raw is go-plugin with AutoMTLS, as hearth
// was asked to run plugins; raw-plaintext is the floor without TLS.
func BenchmarkColdStart(b *testing.B) {
	ctx := context.Background()
	raw := func(autoMTLS bool) func(b *testing.B) {
		return func(b *testing.B) {
			var ds []time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				c, raw := startRawTLS(b, autoMTLS)
				if _, err := raw.Check(ctx, &rawpb.Call{Tool: "Read"}); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
				b.StopTimer()
				c.Kill()
				b.StartTimer()
			}
			reportPercentiles(b, ds, time.Millisecond, "ms")
		}
	}
	b.Run("raw", raw(true))
	b.Run("raw-plaintext", raw(false))
	hearth := func(confine bool) func(b *testing.B) {
		return func(b *testing.B) {
			coldStartHearth(b, confine)
		}
	}
	b.Run("hearth", hearth(false))
	// Under Landlock: one more exec (the shim is this binary) and the
	// ruleset; the workspace a directory of its own, the data directory
	// outside it.
	b.Run("hearth-confined", hearth(true))
	// The same without a cgroup per plugin: what making, entering and
	// removing it costs.
	b.Run("hearth-confined-no-cgroup", func(b *testing.B) {
		defer procgroup.CgroupsOffForTesting()()
		coldStartHearth(b, true)
	})
}

// coldStartHearth is BenchmarkColdStart's hearth case, confined or not.
func coldStartHearth(b *testing.B, confined bool) {
	ctx := context.Background()
	a := testAgent("scripted", "agent")
	var conf *process.Confinement
	if confined {
		if st := process.Landlock(); !st.Available() {
			b.Skipf("%s", st)
		}
		a.Workspace = b.TempDir()
		conf = &process.Confinement{Protect: []string{b.TempDir()}}
	}
	logger := hclog.NewNullLogger()
	keys, err := agentplugin.NewHostTLS()
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p, err := process.Start(ctx, process.Launch{
			Agent: a.Name, Session: fmt.Sprintf("bench-%d", i), Argv: a.Command, Env: envOf(a.Env),
			Dir: a.Workspace, StartTimeout: a.StartTimeout, Logger: logger, LogLevel: "off", TLS: keys, Confine: conf,
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
}

// BenchmarkPreToolUse: one pre-tool-use question and its answer. hearth's
// is asked by the agent inside a plugin and answered by the host through
// the SDK; the raw one is a unary call over go-plugin. Target: hearth's p50
// <= 1.3x raw.
func BenchmarkPreToolUse(b *testing.B) {
	ctx := context.Background()
	b.Run("raw", func(b *testing.B) {
		c, raw := startRaw(b)
		defer c.Kill()
		call := testagent.BenchCall()
		input, _ := json.Marshal(call.Input)
		m := &rawpb.Call{TaskId: "task-0123456789abcdef", CallId: call.CallID, Tool: call.Tool, Paths: call.Paths, InputJson: input}
		ds := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if _, err := raw.Check(ctx, m); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		reportPercentiles(b, ds, time.Microsecond, "µs")
	})
	hearth := func(rules int) func(b *testing.B) {
		return func(b *testing.B) {
			var guards []*guard.Rule
			for i := range rules {
				// Realistic rules that do not fire, so every one is
				// evaluated: a tool name and a glob over the paths.
				guards = append(guards, rule(b, guard.Spec{Name: fmt.Sprintf("rule-%03d", i), Hook: guard.PreToolUse,
					Condition: fmt.Sprintf(`tool in ["Read", "Grep"] && any(paths, glob(#, "secrets-%d/**"))`, i)}))
			}
			cfg := &config.Config{DataDir: b.TempDir(), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher(), Guards: guards}
			h, err := New(Options{Config: cfg, Logger: hclog.NewNullLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(ctx)
			if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:warm"}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("checks:%d", b.N)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(out.Result.Metrics["p50_ns"]/1e3, "p50-µs")
			b.ReportMetric(out.Result.Metrics["p99_ns"]/1e3, "p99-µs")
		}
	}
	// hearth is the path with no guard configured: the guard layer answers
	// at once. rules=N evaluates N rules on every question.
	b.Run("hearth", hearth(0))
	b.Run("hearth/rules=10", hearth(10))
	b.Run("hearth/rules=100", hearth(100))
}

// BenchmarkToolUseStream: tool-use reports of about 512 bytes streamed from
// the agent into the host, each updating the session's fingerprint and
// persisted (SyncWrites) before the stream is acknowledged. Beside it, in
// the same run: the raw go-plugin client stream of the same bytes into a
// plugin that only counts them, and raw Badger writing the same events in
// batches of 1024 per transaction, with the store's options. Targets:
// hearth >= 100k events/s, and >= 50% of the raw stream.
func BenchmarkToolUseStream(b *testing.B) {
	ctx := context.Background()
	b.Run("raw-badger-batch", func(b *testing.B) {
		db, err := badger.Open(store.RawOptions(b.TempDir()))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		u := testagent.FloodToolUse()
		ev := hearth.Event{Time: u.At, Kind: hearth.EventToolUsed, Agent: "scripted", Session: "scripted-00000001", Task: "task-0123456789abcdef", ToolUse: &u}
		v, err := store.EncodeEvent(ev)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		const batch = 1024
		for i := 0; i < b.N; i += batch {
			txn := db.NewTransaction(true)
			for j := i; j < min(i+batch, b.N); j++ {
				k := make([]byte, 28)
				copy(k, "e/scripted-00000001/")
				binary.BigEndian.PutUint64(k[20:], uint64(j))
				if err := txn.Set(k, v); err != nil {
					b.Fatal(err)
				}
			}
			if err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("raw", func(b *testing.B) {
		c, raw := startRaw(b)
		defer c.Kill()
		u := testagent.FloodToolUse()
		m := &rawpb.Use{
			TaskId: "task-0123456789abcdef", CallId: u.CallID, Tool: u.Tool, Paths: u.Paths, Technologies: u.Technologies,
			Outcome: 1, DurationNanos: int64(u.Duration), AtUnixNano: u.At.UnixNano(),
		}
		b.ResetTimer()
		start := time.Now()
		st, err := raw.Sink(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			if err := st.Send(m); err != nil {
				b.Fatal(err)
			}
		}
		if ack, err := st.CloseAndRecv(); err != nil || ack.GetCount() != uint64(b.N) {
			b.Fatalf("ack %v, %v; want %d", ack, err, b.N)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("hearth", func(b *testing.B) {
		h := newTestHost(b, testAgent("scripted", "agent"))
		if _, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:warm"}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		b.ReportMetric(streamToolUses(b, h), "msgs/s")
	})
}

// streamToolUses has the scripted agent report b.N tool uses in one task,
// and returns how many the host took a second.
func streamToolUses(b *testing.B, h *Engine) float64 {
	start := time.Now()
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: fmt.Sprintf("tools:%d", b.N)})
	if err != nil {
		b.Fatal(err)
	}
	if out.ToolUses != uint64(b.N) {
		b.Fatalf("acknowledged %d tool uses, want %d", out.ToolUses, b.N)
	}
	return float64(b.N) / time.Since(start).Seconds()
}

// envOf is an agent block's env as a process takes it.
func envOf(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}
