package hosttest

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/procwait"
	"github.com/hearth-dev/hearth/internal/scratch"
)

// lineWait bounds how long ExpectLine waits for a helper's line. It is
// a hang detector, not a timing assertion: a helper that says nothing
// for this long is stuck, and failing the test (whose cleanup kills the
// helper) beats the test binary's -timeout panic, which leaves the
// helper behind and names no line.
const lineWait = 3 * time.Minute

// ExpectLine reads the helper process's next line, which must start with
// word, and returns the words after it. It fails t if no line comes
// within lineWait, or before the test binary's deadline would end it.
func ExpectLine(t *testing.T, sc *bufio.Scanner, word string) []string {
	t.Helper()
	wait := lineWait
	if d, ok := t.Deadline(); ok {
		// Leave the cleanup time to kill the helper before -timeout.
		wait = min(wait, time.Until(d)-10*time.Second)
	}
	type line struct {
		text string
		ok   bool
	}
	got := make(chan line, 1)
	// The scan goes on after a timeout until t's cleanup kills the
	// helper and its stdout closes; got is buffered so it then ends.
	go func() {
		ok := sc.Scan()
		got <- line{sc.Text(), ok}
	}()
	var l line
	select {
	case l = <-got:
	case <-time.After(wait):
		t.Fatalf("host said nothing for %v while the test waited for %q", wait.Round(time.Second), word)
	}
	if !l.ok {
		t.Fatalf("host ended before saying %q: %v", word, sc.Err())
	}
	f := strings.Fields(l.text)
	if len(f) == 0 || f[0] != word {
		t.Fatalf("host said %q, want a line starting with %q", l.text, word)
	}
	return f[1:]
}

// Atoi is strconv.Atoi, failing t on an error.
func Atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckKill9 kills a helper process host that said "ready PLUGIN CHILD"
// with SIGKILL, and requires its plugin (named so in messages) and the
// plugin's child to be gone within a second.
func CheckKill9(t *testing.T, cmd *exec.Cmd, sc *bufio.Scanner, plugin string) {
	t.Helper()
	f := ExpectLine(t, sc, "ready")
	pid, child := Atoi(t, f[0]), Atoi(t, f[1])
	if !procwait.Alive(pid) || !procwait.Alive(child) {
		t.Fatalf("%s %d or its child %d is not running", plugin, pid, child)
	}
	// The plugin's TMPDIR is its go-plugin directory, inside its host's
	// own (internal/scratch).
	hostDir := filepath.Dir(envOf(t, pid, "TMPDIR"))
	if !strings.HasPrefix(filepath.Base(hostDir), scratch.Prefix) {
		t.Fatalf("the %s's TMPDIR is not in a host's directory (%s*): %s", plugin, scratch.Prefix, hostDir)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !procwait.Gone(pid, time.Second) {
		t.Errorf("%s %d outlived its host by more than a second", plugin, pid)
	}
	if !procwait.Gone(child, time.Second) {
		t.Errorf("the %s's child %d outlived the host by more than a second", plugin, child)
	}
	// What the plugin left in its TMPDIR goes with the next host's sweep:
	// this one, or that of any host started meanwhile (every engine
	// sweeps the temporary directory, which the helper shares).
	if _, err := os.Stat(hostDir); err != nil && !os.IsNotExist(err) {
		t.Fatalf("the killed host's directory %s: %v", hostDir, err)
	}
	if _, err := scratch.Sweep(context.Background(), filepath.Dir(hostDir)); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(hostDir); !os.IsNotExist(err) {
		t.Errorf("the killed host's directory %s outlived a sweep (%v)", hostDir, err)
	}
}

// envOf returns the variable name of process pid's environment.
func envOf(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("process %d has no %s", pid, name)
	return ""
}

// CheckSIGTERM runs a helper process host in StopOnSIGTERM's mode twice,
// started by start with the task's release file and the grace period:
// a task that finishes within the grace period ends with its result, one
// that does not is cancelled by the shutdown; either way the host exits
// cleanly and its plugin with it.
func CheckSIGTERM(t *testing.T, start func(t *testing.T, release, grace string) (*exec.Cmd, *bufio.Scanner)) {
	t.Run("the task finishes within the grace period", func(t *testing.T) {
		release := filepath.Join(t.TempDir(), "release")
		cmd, sc := start(t, release, "30s")
		plugin := Atoi(t, ExpectLine(t, sc, "running")[0])
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The host is now waiting for the task; let it finish.
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := ExpectLine(t, sc, "task"); strings.Join(got, " ") != "result finished" {
			t.Errorf("task: got %q, want it to finish", got)
		}
		ExpectLine(t, sc, "closed")
		if err := cmd.Wait(); err != nil {
			t.Errorf("host exit: %v", err)
		}
		if !procwait.Gone(plugin, time.Second) {
			t.Errorf("plugin %d outlived its host", plugin)
		}
	})
	t.Run("the grace period runs out", func(t *testing.T) {
		release := filepath.Join(t.TempDir(), "never")
		cmd, sc := start(t, release, "200ms")
		plugin := Atoi(t, ExpectLine(t, sc, "running")[0])
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(ExpectLine(t, sc, "task"), " ")
		if !strings.Contains(got, "host is shutting down") {
			t.Errorf("task: got %q, want it cancelled by the shutdown", got)
		}
		ExpectLine(t, sc, "closed")
		if err := cmd.Wait(); err != nil {
			t.Errorf("host exit: %v", err)
		}
		if !procwait.Gone(plugin, time.Second) {
			t.Errorf("plugin %d outlived its host", plugin)
		}
	})
}

// Start runs the test binary again as a helper process, with env added
// to this one's (which says what the helper is to do), its stderr to
// stderr; it returns the process and a reader of its stdout lines, and
// kills it when t ends, or when the test binary dies without cleaning
// up (a -timeout panic, a kill): the helper's plugins follow their host,
// so nothing of the test outlives it.
func Start(t *testing.T, stderr io.Writer, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The helper keeps the test's TMPDIR: the test agents' workspace is
	// os.TempDir(), and the files a test hands its helper's plugins are
	// in the test's temporary directories. (A helper killed with -9
	// leaves its hearth-host-* directory there, which the next host to
	// start a plugin sweeps, as after any host killed so.)
	cmd.Env = append(os.Environ(), env...)
	// The signal is sent when the thread that started the helper ends;
	// Go ends a thread only when a goroutine locked to it exits, which
	// no test here does, so in practice it is the test binary's death.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(stdout)
}
