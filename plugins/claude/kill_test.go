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
// agent on the fake at HEARTH_TEST_API, submits a task that hangs, and
// waits to be killed.
func helperHost() {
	src := configSource(os.Getenv("HEARTH_TEST_CLAUDE_BIN"), os.Getenv("HEARTH_TEST_API"), os.Getenv("HEARTH_TEST_WS"), "")
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
	_, _ = h.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: "hang"})
	select {}
}

// TestKill9LeavesNothing: a host killed with kill -9 while claude runs a
// task leaves neither the plugin nor claude behind.
func TestKill9LeavesNothing(t *testing.T) {
	api, ws := fakeapi.New(key), workspace(t)
	defer api.Close()
	t.Setenv("FAKE_CLAUDE_KEY", key)
	cmd, sc := hosttest.Start(t, os.Stderr, envHelperHost+"=1", "HEARTH_TEST_API="+api.URL, "HEARTH_TEST_WS="+ws,
		"HEARTH_TEST_CLAUDE_BIN="+claudetest.Binary(t), "HEARTH_TEST_DATA_DIR="+t.TempDir())
	hosttest.ExpectLine(t, sc, "started")
	var rec *fakeapi.Recorded
	select {
	case rec = <-api.Hung:
	case <-time.After(time.Minute):
		t.Fatal("the task's model call did not come")
	}
	id := rec.Header.Get("X-Claude-Code-Session-Id")
	procs := processPIDs(t, id)
	if len(procs) == 0 {
		t.Fatalf("no process runs Claude Code session %s", id)
	}
	// claude's parent is the plugin.
	procs = append(procs, parentOf(t, procs[0]))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, pid := range procs {
		if !procwait.Gone(pid, 2*time.Second) {
			t.Errorf("process %d of Claude Code session %s outlived its host by more than 2 s", pid, id)
		}
	}
	<-api.Released
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
