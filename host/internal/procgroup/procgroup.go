// Package procgroup runs plugin processes for go-plugin so that they never
// outlive their host. Each plugin leads its own process group, so stopping
// it takes every process it started; on Linux it also gets a parent-death
// signal, so a host killed with kill -9 takes its plugins with it, and,
// where the host may make cgroups, a cgroup of its own, which holds every
// process it starts, also those that leave the process group (setsid):
// stopping the plugin kills the cgroup, and the daemon knows a plugin's
// descendants by it (cgroup_linux.go).
//
// Linux sends the parent-death signal when the thread that forked the child
// exits, not the process (golang/go#27505), and the Go runtime ends a thread
// whenever a goroutine locked to it returns. Processes are therefore
// started from one goroutine locked to its thread for the life of the
// host, which never returns.
package procgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"
)

// Runner is a go-plugin runner.Runner for one plugin process.
type Runner struct {
	cmd    *exec.Cmd
	name   string
	cg     *pluginCgroup // nil without a cgroup of its own
	stdout io.ReadCloser
	stderr io.ReadCloser

	mu      sync.Mutex
	pid     int
	waitErr error
	exited  chan struct{}
}

// New prepares cmd, which must not have been started, to run as a plugin
// named name (go-plugin names the plugin's logger after it).
func New(cmd *exec.Cmd, name string) (*Runner, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if !noDeathSignal.Load() {
		setDeathSignal(cmd.SysProcAttr)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	r := &Runner{cmd: cmd, name: name, stdout: stdout, stderr: stderr, exited: make(chan struct{})}
	if r.cg = newPluginCgroup(); r.cg != nil {
		r.cg.attach(cmd.SysProcAttr)
	}
	return r, nil
}

// Cgroup is the cgroup the plugin and everything it starts run in, as
// /proc/PID/cgroup names it; "" when it has none of its own.
func (r *Runner) Cgroup() string {
	if r.cg == nil {
		return ""
	}
	return r.cg.rel
}

// Start starts the process from the spawning thread.
func (r *Runner) Start(context.Context) error {
	err := spawn(r.cmd)
	if r.cg != nil {
		r.cg.started()
		if err != nil {
			r.cg.remove()
		}
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.pid = r.cmd.Process.Pid
	r.mu.Unlock()
	return nil
}

// Wait waits for the process to exit and records how it ended. go-plugin
// calls it exactly once, from its own goroutine. Before the leader is
// reaped, whatever else is left in its group is killed: while the exited
// leader is not reaped its PID, and so the group's ID, cannot be reused,
// so the kill cannot reach another process.
func (r *Runner) Wait(context.Context) error {
	if waitExited(r.PID()) {
		_ = syscall.Kill(-r.PID(), syscall.SIGKILL)
	}
	err := r.cmd.Wait()
	if r.cg != nil {
		// What left the process group is still in the cgroup.
		r.cg.remove()
	}
	r.mu.Lock()
	r.waitErr = err
	r.mu.Unlock()
	close(r.exited)
	return err
}

// Exited is closed once the process has exited and been reaped.
func (r *Runner) Exited() <-chan struct{} { return r.exited }

// ExitErr is how the process ended (nil for status 0), once Exited is
// closed.
func (r *Runner) ExitErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitErr
}

// Kill sends SIGKILL to the plugin's whole process group.
func (r *Runner) Kill(context.Context) error { return r.Signal(syscall.SIGKILL) }

// Signal sends sig to the plugin's whole process group. A group that no
// longer exists is not an error. Once the leader has been reaped nothing
// is sent: its PID may belong to another process by then (Wait has killed
// the rest of the group already).
func (r *Runner) Signal(sig syscall.Signal) error {
	r.mu.Lock()
	pid := r.pid
	r.mu.Unlock()
	if pid <= 0 {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	if sig == syscall.SIGKILL && r.cg != nil {
		// The cgroup stays until Wait removes it: this cannot reach
		// another process.
		_ = r.cg.kill()
	}
	return nil
}

// PID is the plugin's process ID, and its process group's ID; 0 before
// Start.
func (r *Runner) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

func (r *Runner) Stdout() io.ReadCloser { return r.stdout }
func (r *Runner) Stderr() io.ReadCloser { return r.stderr }
func (r *Runner) Name() string          { return r.name }

func (r *Runner) ID() string {
	if pid := r.PID(); pid > 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

// Diagnose adds to go-plugin's "unrecognized remote plugin message" error.
func (r *Runner) Diagnose(context.Context) string {
	return fmt.Sprintf("the program %s did not speak the go-plugin handshake", r.cmd.Path)
}

// PluginToHost and HostToPlugin are identities: host and plugin share a
// network namespace.
func (r *Runner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *Runner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

var _ runner.Runner = (*Runner)(nil)

// noDeathSignal turns the parent-death signal off, so that tests can
// check that the SDK's parent watch ends orphaned plugins on its own.
var noDeathSignal atomic.Bool

// DisableDeathSignalForTesting makes later plugins start without a
// parent-death signal. Only tests call it.
func DisableDeathSignalForTesting() { noDeathSignal.Store(true) }

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

// spawn starts cmd from the one goroutine that stays locked to its thread.
// Starting a process takes about a millisecond, so funnelling every start
// through one thread costs little.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		ready := make(chan struct{})
		go func() {
			lockThreadForever()
			close(ready)
			for req := range spawns {
				req.done <- req.cmd.Start()
			}
		}()
		<-ready
	})
	done := make(chan error, 1)
	spawns <- spawnRequest{cmd: cmd, done: done}
	return <-done
}
