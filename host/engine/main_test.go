package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/hosttest"
	"github.com/hearth-dev/hearth/internal/otlptest"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/internal/procgroup"
	"github.com/hearth-dev/hearth/internal/rawplugin"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// The test binary doubles as the plugins and hosts these tests need (the
// helper-process pattern): HEARTH_TEST_PLUGIN makes it a plugin,
// HEARTH_TEST_HOST a host, HEARTH_TEST_OTLP_RECEIVER the trace backend
// BenchmarkTracing exports to.
const (
	envPlugin   = "HEARTH_TEST_PLUGIN"
	envCapacity = "HEARTH_TEST_CAPACITY"
	envHost     = "HEARTH_TEST_HOST"
	envReceiver = "HEARTH_TEST_OTLP_RECEIVER"
)

func TestMain(m *testing.M) {
	plugins.ServeIfRequested()
	if mode := os.Getenv(envPlugin); mode != "" {
		servePlugin(mode)
		os.Exit(0)
	}
	if mode := os.Getenv(envHost); mode != "" {
		os.Exit(runHost(mode))
	}
	if os.Getenv(envReceiver) != "" {
		if err := otlptest.ServeProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Nothing a test starts may outlive it. The one goroutine that starts
	// plugins lives as long as the process, locked to its thread: the
	// parent-death signal is tied to the thread that started the child
	// (golang/go#27505).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}

func servePlugin(mode string) {
	switch mode {
	case "agent":
		capacity, _ := strconv.Atoi(os.Getenv(envCapacity))
		agentplugin.Serve(testagent.New("scripted", capacity))
	case "stateless":
		// The scripted agent, without its StateExporter: its dormant
		// sessions cannot be rehydrated.
		agentplugin.Serve(struct{ sdk.Agent }{testagent.New("scripted", 1)})
	case "garbage":
		fmt.Println("hello from a program that is not a plugin")
		time.Sleep(time.Hour)
	case "hang":
		time.Sleep(time.Hour)
	case "exit":
		fmt.Fprintln(os.Stderr, "boom: cannot read settings.toml")
		os.Exit(1)
	case "raw":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: agentplugin.Handshake,
			Plugins:         plugin.PluginSet{rawplugin.Name: rawplugin.Plugin{}},
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "wrong-version":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  agentplugin.Handshake,
			VersionedPlugins: map[int]plugin.PluginSet{99: agentplugin.VersionedPlugins(testagent.New("scripted", 1), nil)[agentplugin.ProtocolVersion]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "unknown %s mode %q\n", envPlugin, mode)
		os.Exit(1)
	}
}

// testAgent is a config for the scripted agent served by this test binary
// in the given plugin mode.
func testAgent(name, mode string) *config.Agent {
	a := config.DefaultAgent(name)
	a.Command = []string{os.Args[0]}
	// A -race binary sleeps a second on exit so that late races get
	// reported; plugins are stopped all the time here, so skip it (the
	// SDK's races are caught in-process by its own tests).
	a.Env = map[string]string{envPlugin: mode, "GORACE": "atexit_sleep_ms=0"}
	a.StartTimeout = 20 * time.Second // a -race test binary is slow to start on a loaded machine
	a.Workspace = os.TempDir()
	return a
}

func newTestHost(t testing.TB, agents ...*config.Agent) *Engine {
	t.Helper()
	return newTestHostIn(t, t.TempDir(), agents...)
}

// newTestHostIn starts a host on the data directory dir.
func newTestHostIn(t testing.TB, dir string, agents ...*config.Agent) *Engine {
	t.Helper()
	h, err := New(Options{
		Config: &config.Config{DataDir: dir, Agents: agents, Matcher: config.DefaultMatcher()},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// testWriter sends log lines to the test's log, and drops them once the
// test is over (plugins may log while being stopped in Cleanup).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	defer func() { _ = recover() }()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// runHost is the host side of the helper-process pattern: a host that
// runs until it is killed or signalled, telling the test what it does on
// stdout, one line at a time.
func runHost(mode string) int {
	if os.Getenv("HEARTH_TEST_NO_PDEATHSIG") != "" {
		procgroup.DisableDeathSignalForTesting()
	}
	h, err := New(Options{
		Config: &config.Config{DataDir: os.Getenv("HEARTH_TEST_DATA_DIR"), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher()},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx := context.Background()
	switch mode {
	case "run":
		return runCrashHost(h)
	case "kill9":
		// Start a session whose plugin has a child, report both PIDs,
		// and wait to be killed.
		out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid;sdkchild"})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("ready", out.Result.Output)
		select {}
	case "sessions":
		// Run two tasks in different places, make sure their sessions'
		// snapshots are on disk, report the sessions, and wait to be
		// killed.
		var ids []string
		for _, files := range [][]string{{"billing/ledger.go", "billing/tax.go"}, {"search/index.go"}} {
			prompt, hints := reads(files...)
			out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: prompt, Hints: hints})
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			ids = append(ids, out.Session)
		}
		p := h.pools["scripted"]
		for _, id := range ids {
			if err := p.Snapshot(ctx, id); err != nil {
				fmt.Println("error", err)
				return 1
			}
		}
		fmt.Println("ready", strings.Join(ids, " "))
		select {}
	case "sigterm":
		// Run a task that waits for a file, report once it is running,
		// and shut down gracefully on SIGTERM.
		sub := subscribe(h, 64)
		grace, _ := time.ParseDuration(os.Getenv("HEARTH_TEST_GRACE"))
		return hosttest.StopOnSIGTERM(h, "scripted", sub.Events(), sub.Close, os.Getenv("HEARTH_TEST_RELEASE"), grace)
	}
	fmt.Println("unknown mode", mode)
	return 1
}

// startHost runs this test binary as a host in mode, with extra env, and
// returns it with a reader of its stdout lines.
func startHost(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	return startHostIn(t, mode, t.TempDir(), env...)
}

// startHostIn is startHost on the data directory dir.
func startHostIn(t *testing.T, mode, dir string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	return hosttest.Start(t, testWriter{t}, append([]string{envHost + "=" + mode, "HEARTH_TEST_DATA_DIR=" + dir}, env...)...)
}

// sessionsOf lists h's sessions, failing t on an error.
func sessionsOf(t testing.TB, h *Engine) []hearth.SessionInfo {
	t.Helper()
	s, err := h.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
