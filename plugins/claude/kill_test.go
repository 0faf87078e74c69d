package claude_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/internal/hosttest"
	"github.com/hearth-dev/hearth/internal/procwait"
	"github.com/hearth-dev/hearth/plugins"
)

// envHelperHost makes the test binary a host that runs one task on the
// claude agent, which hangs in its model call (kill_test.go).
const envHelperHost = "HEARTH_TEST_CLAUDE_HOST"

// helperHost is the host TestKill9LeavesNothing kills: it starts the
// agent on the fake at HEARTH_TEST_API, submits HEARTH_TEST_PROMPT (a
// task that hangs), and waits to be killed.
func helperHost() {
	src := configSource(os.Getenv("HEARTH_TEST_CLAUDE_BIN"), os.Getenv("HEARTH_TEST_API"), os.Getenv("HEARTH_TEST_WS"), `allowed_tools = ["Bash"]`)
	dir := os.Getenv("HEARTH_TEST_DATA_DIR")
	cfg, err := config.Parse([]byte(src), filepath.Join(dir, "hearth.hcl"), config.Options{Bundled: plugins.Names()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.DataDir = filepath.Join(dir, "data")
	h, err := engine.New(engine.Options{Config: cfg, Logger: hclog.NewNullLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("started")
	_, _ = h.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: os.Getenv("HEARTH_TEST_PROMPT")})
	select {}
}

// TestKill9LeavesNothing: a host killed with kill -9 while claude runs a
// task leaves nothing of the run behind: not the plugin, not its keeper,
// not claude, and not what Claude Code's Bash started, in claude's
// process group or out of it (setsid). The task starts both in the
// background, then hangs in its next model call.
func TestKill9LeavesNothing(t *testing.T) {
	t.Parallel()
	api, ws := fakeapi.New(key), workspace(t)
	defer api.Close()
	prompt, marks := backgroundThenHang(ws)
	cmd, sc := hosttest.Start(t, os.Stderr, envHelperHost+"=1", "HEARTH_TEST_API="+api.URL, "HEARTH_TEST_WS="+ws,
		"HEARTH_TEST_CLAUDE_BIN="+claudetest.Binary(t), "HEARTH_TEST_DATA_DIR="+t.TempDir(), "HEARTH_TEST_PROMPT="+prompt)
	hosttest.ExpectLine(t, sc, "started")
	var rec *fakeapi.Recorded
	select {
	case rec = <-api.Hung:
	case <-time.After(time.Minute):
		t.Fatal("the task's model call did not come")
	}
	// The Bash command has run: its processes are started.
	id := rec.Header.Get("X-Claude-Code-Session-Id")
	procs := processPIDs(t, id)
	if len(procs) == 0 {
		t.Fatalf("no process runs Claude Code session %s", id)
	}
	// claude's parent is its keeper, whose parent is the plugin.
	keeper := parentOf(t, procs[0])
	procs = append(procs, keeper, parentOf(t, keeper))
	procs = append(procs, backgroundPIDs(t, ws, marks)...)
	t.Cleanup(func() {
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, pid := range procs {
		if !procwait.Gone(pid, 2*time.Second) {
			t.Errorf("process %d of Claude Code session %s outlived its host by more than 2 s: %s", pid, id, cmdline(pid))
		}
	}
	<-api.Released
}

// backgroundThenHang is a prompt whose Bash command leaves two processes
// running, one in the background (in the command's process group) and
// one in a session of its own (setsid), and which then hangs in its
// next model call; marks are what their command lines hold.
func backgroundThenHang(ws string) (prompt string, marks []string) {
	inGroup, detached := filepath.Join(ws, "cart", "cart.go"), filepath.Join(ws, "cart", "discount.go")
	return fmt.Sprintf("shell:tail_-f_%s_>/dev/null_2>&1_&_setsid_-f_tail_-f_%s_>/dev/null_2>&1 hang", inGroup, detached),
		[]string{inGroup, detached}
}

// backgroundPIDs are the processes backgroundThenHang's command left.
func backgroundPIDs(t *testing.T, ws string, marks []string) []int {
	t.Helper()
	var pids []int
	for _, m := range marks {
		ps := processPIDs(t, m)
		if len(ps) == 0 {
			t.Fatalf("no process runs the task's tail -f %s; the processes: %q", m, processesWith(t, ws))
		}
		pids = append(pids, ps...)
	}
	if abi, _ := ll.LandlockGetABIVersion(); abi < 6 {
		// Claude Code starts each Bash command in a process group of its
		// own; without a signal-scoped domain the keeper ends claude's.
		t.Logf("Landlock ABI %d: the processes Claude Code's Bash left are not checked (the keeper's signal scoping needs 6)", abi)
		for _, pid := range pids {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
		return nil
	}
	return pids
}

// cmdline is process pid's command line, for messages.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// parentOf is the parent of process pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command's name, in parentheses, may hold spaces: read after it.
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	var state string
	var ppid int
	if _, err := fmt.Sscanf(rest, " %s %d", &state, &ppid); err != nil {
		t.Fatal(err)
	}
	return ppid
}

// processPIDs lists the processes whose command line holds s.
func processPIDs(t *testing.T, s string) []int {
	t.Helper()
	var pids []int
	for _, p := range processesWith(t, s) {
		var pid int
		if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
