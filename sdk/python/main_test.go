// Package python holds the Go tests of the Python SDK (the hearth_agent
// package beside this file): Python agents run under a real hearth host
// (engine.New, real plugin subprocesses, Badger in a temp dir), and the
// Python SDK's own unit tests, mypy and generated code are checked.
package python

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/hosttest"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/pythontest"
	"github.com/hearth-dev/hearth/internal/testagent"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// envHost makes the test binary a host (the helper-process pattern), for
// the tests that kill or signal the host.
const envHost = "HEARTH_PY_TEST_HOST"

// envGoAgent makes the test binary the Go test agent (internal/testagent).
const envGoAgent = "HEARTH_PY_TEST_GO_AGENT"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envHost); mode != "" {
		os.Exit(runHost(mode))
	}
	// The Go agent the benchmarks compare the Python one with.
	if os.Getenv(envGoAgent) != "" {
		agentplugin.Serve(testagent.New("scripted", 1))
		os.Exit(0)
	}
	// Plugins are started by a goroutine locked to its thread for the
	// process's life (the parent-death signal follows the thread).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}

// needPython returns the interpreter, skipping the test without one, or
// failing it under CI=true, where .ci/run installs it.
func needPython(t testing.TB) string { return pythontest.Need(t) }

// sdkDir is this directory: the Python package's root.
func sdkDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// agentHCL is a config with the scripted Python agent, in mode, and
// extra blocks.
func agentHCL(python, dir, mode string, extra string, env ...string) string {
	envs := []string{fmt.Sprintf("HEARTH_TEST_MODE = %q", mode)}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		envs = append(envs, fmt.Sprintf("%s = %q", k, v))
	}
	return fmt.Sprintf(`
agent "scripted" {
  command       = [%q, %q]
  workspace     = %q
  read_paths    = [%q] # hearth_agent, which the script imports from here
  start_timeout = "20s"
  env = {
    %s
  }
%s
}
`, python, filepath.Join(dir, "testdata", "scripted.py"), os.TempDir(), dir, strings.Join(envs, "\n    "), extra)
}

// newHost starts a host with the config src on a fresh data directory.
func newHost(t testing.TB, src string, logOut hclogWriter) *engine.Engine {
	t.Helper()
	h, err := hostFromConfig(t.TempDir(), src, logOut)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

type hclogWriter interface{ Write([]byte) (int, error) }

// status is h's status.
func status(t testing.TB, h *engine.Engine) hearth.HostStatus {
	t.Helper()
	st, err := h.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func hostFromConfig(dataDir, src string, logOut hclogWriter) (*engine.Engine, error) {
	file := filepath.Join(dataDir, "hearth.hcl")
	cfg, err := config.Parse([]byte(src), file, config.Options{})
	if err != nil {
		return nil, err
	}
	cfg.DataDir = filepath.Join(dataDir, "data")
	return engine.New(engine.Options{
		Config: cfg,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: logOut}),
	})
}

// testWriter sends log lines to the test's log, and drops them once the
// test is over (plugins may log while being stopped in Cleanup).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	defer func() { _ = recover() }()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// runHost is the host side of the helper-process pattern: a host with the
// scripted Python agent that says what it does on stdout, one line at a
// time, until it is killed or signalled.
func runHost(mode string) int {
	python, dir := os.Getenv("HEARTH_PY_TEST_PYTHON"), os.Getenv("HEARTH_PY_TEST_SDK")
	var (
		env   []string
		extra string
	)
	if mode == "vouch" {
		// The variable a cluster's host sets (engine.vouch); set here
		// through the agent's env, the host needs no cluster. The agent
		// marks its steps in the test's directory, outside its workspace
		// (the helper's own temporary directory).
		env = []string{agentplugin.EnvVouch + "=" + os.Getenv("HEARTH_PY_TEST_VOUCH"), "HEARTH_TEST_CANCELLED=" + os.Getenv("HEARTH_PY_TEST_CANCELLED")}
		extra = fmt.Sprintf("  write_paths = [%q]", os.Getenv("HEARTH_PY_TEST_MARKS"))
	}
	h, err := hostFromConfig(os.Getenv("HEARTH_PY_TEST_DATA"), agentHCL(python, dir, "", extra, env...), os.Stderr)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx := context.Background()
	switch mode {
	case "kill9":
		out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "pid;child"})
		if err != nil {
			fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
			return 1
		}
		fmt.Println("ready", out.Result.Output)
		select {}
	case "vouch":
		out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: os.Getenv("HEARTH_PY_TEST_PROMPT")})
		if err != nil {
			fmt.Println("error", strings.ReplaceAll(err.Error(), "\n", " "))
			return 1
		}
		fmt.Println("outcome", out.Result.Output)
		select {}
	case "sigterm":
		sub, _ := h.Subscribe(context.Background(), hearth.EventFilter{Buffer: 64}) // the engine's never fails
		grace, _ := time.ParseDuration(os.Getenv("HEARTH_PY_TEST_GRACE"))
		return hosttest.StopOnSIGTERM(h, "scripted", sub.Events(), sub.Close, os.Getenv("HEARTH_PY_TEST_RELEASE"), grace)
	}
	fmt.Println("unknown mode", mode)
	return 1
}

// startHost runs this test binary as a host in mode.
func startHost(t *testing.T, mode string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	python := needPython(t)
	return hosttest.Start(t, testWriter{t}, append([]string{envHost + "=" + mode, "HEARTH_PY_TEST_DATA=" + t.TempDir(),
		"HEARTH_PY_TEST_PYTHON=" + python, "HEARTH_PY_TEST_SDK=" + sdkDir(t)}, env...)...)
}
