package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/hosttest"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/internal/confine"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// needLandlock skips a test where the kernel has no Landlock, and fails
// it in CI, whose machines have it.
func needLandlock(t *testing.T) {
	t.Helper()
	if st := confine.Probe(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// confinedSetup is a workspace holding the host's data directory (as
// the default config has it: ./.hearth beside the config), another
// agent's workspace, and a home directory with a key in it.
type confinedSetup struct {
	ws, data, other, home string
}

func newConfinedSetup(t *testing.T) confinedSetup {
	root := t.TempDir()
	s := confinedSetup{ws: filepath.Join(root, "ws"), other: filepath.Join(root, "other"), home: filepath.Join(root, "home")}
	s.data = filepath.Join(s.ws, ".hearth")
	write(t, filepath.Join(s.ws, "src", "main.go"), "package main\n")
	write(t, filepath.Join(s.ws, "README"), "mine\n")
	write(t, filepath.Join(s.other, "notes.txt"), "theirs\n")
	write(t, filepath.Join(s.home, ".ssh", "id_ed25519"), "PRIVATE KEY\n")
	return s
}

func (s confinedSetup) host(t *testing.T, agents ...*config.Agent) *Engine {
	t.Helper()
	for _, a := range agents {
		if a.Workspace == os.TempDir() {
			a.Workspace = s.ws
		}
		a.Env["HOME"] = s.home
	}
	return newTestHostIn(t, s.data, agents...)
}

// TestConfinedPluginIsRefusedByTheKernel is the test: a confined
// agent reads and writes its workspace, and the kernel refuses it the
// data directory (inside that workspace), another agent's workspace and
// the home directory, with EACCES in the task's error.
func TestConfinedPluginIsRefusedByTheKernel(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	s := newConfinedSetup(t)
	other := testAgent("other", "agent")
	other.Workspace = s.other
	h := s.host(t, testAgent("scripted", "agent"), other)
	ctx := context.Background()

	out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "cat:" + filepath.Join(s.ws, "README") + ";touch:" + filepath.Join(s.ws, "src", "new.go") + ";echo:wrote"})
	if err != nil {
		t.Fatalf("its own workspace: %v", err)
	}
	if !strings.Contains(out.Result.Output, "mine") || !strings.Contains(out.Result.Output, "wrote") {
		t.Errorf("own workspace: output %q", out.Result.Output)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "src", "new.go")); err != nil {
		t.Errorf("the file it wrote: %v", err)
	}

	// Something in the data directory that a plugin would want: the
	// store's files.
	entries, err := os.ReadDir(s.data)
	if err != nil || len(entries) == 0 {
		t.Fatalf("data directory: %v, %d entries", err, len(entries))
	}
	var stored string
	for _, e := range entries {
		if e.Type().IsRegular() {
			stored = filepath.Join(s.data, e.Name())
			break
		}
	}
	for name, prompt := range map[string]string{
		"the data directory":        "cat:" + stored,
		"planting in the data dir":  "touch:" + filepath.Join(s.data, "planted"),
		"listing the run files":     "cat:" + filepath.Join(s.data, "files"),
		"another agent's workspace": "cat:" + filepath.Join(s.other, "notes.txt"),
		"the home directory":        "cat:" + filepath.Join(s.home, ".ssh", "id_ed25519"),
		"the workspace's root":      "touch:" + filepath.Join(s.ws, "new-at-root"),
		"listing the workspace's root, which holds the data directory": "cat:" + s.ws,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: prompt})
			if err == nil || !strings.Contains(err.Error(), "permission denied") {
				t.Fatalf("%s: got %v, want the kernel's permission denied", prompt, err)
			}
			if name == "the home directory" {
				t.Log(err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(s.data, "planted")); err == nil {
		t.Error("the plugin planted a file in the data directory")
	}

	// The other agent has its own workspace, and not the first's.
	if out, err := h.Submit(ctx, hearth.Task{Agent: "other", Prompt: "cat:" + filepath.Join(s.other, "notes.txt")}); err != nil || !strings.Contains(out.Result.Output, "theirs") {
		t.Errorf("the other agent's own workspace: %v", err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "other", Prompt: "cat:" + filepath.Join(s.ws, "README")}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("the other agent reading the first's workspace: %v, want permission denied", err)
	}
}

// TestConfinedWorkspaceOfManyEntries: a workspace that holds the data
// directory is granted entry by entry, and a policy of thousands of
// grants still reaches the shim. (It travelled in one environment
// variable, and past the kernel's 128 KiB for one variable every start
// failed with E2BIG: the suite's own daemons, whose workspace is a busy
// /tmp, found it.)
func TestConfinedWorkspaceOfManyEntries(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	s := newConfinedSetup(t)
	const entries = 4000
	name := func(i int) string { return fmt.Sprintf("entry-%04d-of-a-workspace-with-many-files.txt", i) }
	for i := range entries {
		write(t, filepath.Join(s.ws, name(i)), fmt.Sprintf("entry %d\n", i))
	}
	h := s.host(t, testAgent("scripted", "agent"))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "cat:" + filepath.Join(s.ws, name(entries-1))})
	if err != nil {
		t.Fatalf("a workspace of %d entries: %v", entries, err)
	}
	if want := fmt.Sprintf("entry %d", entries-1); !strings.Contains(out.Result.Output, want) {
		t.Errorf("output %q, want %q", out.Result.Output, want)
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "cat:" + s.ws}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("listing the workspace's root, which holds the data directory: %v, want permission denied", err)
	}
}

// TestConfinementGrantsAndOff: read_paths and write_paths reach beyond
// the workspace, and confinement = "off" runs a plugin as before.
func TestConfinementGrantsAndOff(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	s := newConfinedSetup(t)
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	granted := testAgent("granted", "agent")
	granted.ReadPaths = []string{s.other}
	granted.WritePaths = []string{out}
	off := testAgent("off", "agent")
	off.Confinement = config.ConfinementOff
	h := s.host(t, granted, off)
	ctx := context.Background()

	res, err := h.Submit(ctx, hearth.Task{Agent: "granted", Prompt: "cat:" + filepath.Join(s.other, "notes.txt") + ";touch:" + filepath.Join(out, "x")})
	if err != nil || !strings.Contains(res.Result.Output, "theirs") {
		t.Fatalf("granted paths: %v", err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "granted", Prompt: "touch:" + filepath.Join(s.other, "x")}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("writing a path granted for reading: %v, want permission denied", err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "off", Prompt: "cat:" + filepath.Join(s.home, ".ssh", "id_ed25519")}); err != nil {
		t.Errorf("confinement off: %v", err)
	}
}

// TestConfinedPinnedPlugin: a pinned program runs from its sealed copy
// under the shim, confined all the same.
func TestConfinedPinnedPlugin(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	s := newConfinedSetup(t)
	f, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	_, err = io.Copy(sum, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	a := testAgent("pinned", "agent")
	a.SHA256 = hex.EncodeToString(sum.Sum(nil))
	h := s.host(t, a)
	ctx := context.Background()
	if _, err := h.Submit(ctx, hearth.Task{Agent: "pinned", Prompt: "cat:" + filepath.Join(s.ws, "README")}); err != nil {
		t.Fatalf("pinned and confined, own workspace: %v", err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "pinned", Prompt: "cat:" + filepath.Join(s.home, ".ssh", "id_ed25519")}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("pinned and confined, home: %v, want permission denied", err)
	}
}

// TestConnectPorts: with connect_ports, TCP connects reach those ports
// only (Landlock ABI 4).
func TestConnectPorts(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	if confine.Probe().ABI < 4 {
		t.Skip("TCP rules need Landlock ABI 4")
	}
	s := newConfinedSetup(t)
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := uint16(allowed.Addr().(*net.TCPAddr).Port)
	a := testAgent("net", "agent")
	a.ConnectPorts = []uint16{port}
	h := s.host(t, a)
	ctx := context.Background()
	if _, err := h.Submit(ctx, hearth.Task{Agent: "net", Prompt: "dial:tcp:" + allowed.Addr().String()}); err != nil {
		t.Errorf("the granted port %d: %v", port, err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "net", Prompt: "dial:tcp:" + other.Addr().String()}); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("another port: %v, want permission denied", err)
	}
}

// TestConfinementUnavailable: where Landlock is missing, a host with an
// agent that requires it does not start, and one that does not says at
// start that its plugins run unconfined.
func TestConfinementUnavailable(t *testing.T) {
	defer confine.FakeForTesting(confine.Status{Reason: "faked by the test"})()
	req := testAgent("strict", "agent")
	req.Confinement = config.ConfinementRequire
	_, err := New(Options{Config: &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{req}, Matcher: config.DefaultMatcher()}})
	if !errors.Is(err, hearth.ErrConfinement) || !strings.Contains(err.Error(), `agent "strict" requires confinement`) || !strings.Contains(err.Error(), "faked by the test") {
		t.Fatalf("got %v, want a refusal naming the agent and the reason", err)
	}

	var log strings.Builder
	h, err := New(Options{
		Config: &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher()},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: &log}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if !strings.Contains(log.String(), "plugins run UNCONFINED") || !strings.Contains(log.String(), "faked by the test") {
		t.Errorf("start log %q, want the warning with its reason", log.String())
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "pid"}); err != nil {
		t.Errorf("an unconfined plugin where Landlock is missing: %v", err)
	}
}

// TestPluginOf: the registry names a running plugin and what it starts,
// and nothing else.
func TestPluginOf(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, testAgent("scripted", "agent"))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "pid;sdkchild"})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(out.Result.Output)
	if len(f) != 2 {
		t.Fatalf("output %q", out.Result.Output)
	}
	pid, child := hosttest.Atoi(t, f[0]), hosttest.Atoi(t, f[1])
	if o, ok := process.PluginOf(pid); !ok || o.Agent != "scripted" || o.Session != out.Session || o.PID != pid {
		t.Errorf("the plugin %d: %+v, %v", pid, o, ok)
	}
	if o, ok := process.PluginOf(child); !ok || o.PID != pid {
		t.Errorf("its child %d: %+v, %v; want the plugin %d", child, o, ok, pid)
	}
	if o, ok := process.PluginOf(os.Getpid()); ok {
		t.Errorf("the host itself is %+v", o)
	}
	if o, ok := process.PluginOf(os.Getppid()); ok {
		t.Errorf("the host's parent is %+v", o)
	}
}
