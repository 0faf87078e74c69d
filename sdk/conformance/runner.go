package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/hearth-dev/hearth/internal/text"
)

// stderrLines is how many of a program's last stderr lines an error
// shows; a Python traceback is shown whole (text.Tail.Last).
const stderrLines = 20

// program is the go-plugin runner of a plugin program under test. It is
// go-plugin's own (a process and its pipes) but keeps how the process
// ended and the tail of its stderr, so that a program that dies is
// explained by its exit status and its last words (a Python traceback
// in full) rather than by go-plugin's guesses ("not compiled for this
// architecture") or a lost connection.
type program struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	tail           *text.Tail
	// drained is closed when go-plugin has read the program's stderr to
	// its end, so that the tail holds its last words.
	drained chan struct{}

	mu      sync.Mutex
	waitErr error
	exited  chan struct{}
}

// newProgram prepares cmd, not started, to run as a plugin; go-plugin
// copies its stderr into tail.
func newProgram(cmd *exec.Cmd, tail *text.Tail) (*program, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	drained := make(chan struct{})
	return &program{cmd: cmd, stdout: stdout, stderr: &eofSignal{ReadCloser: stderr, eof: drained}, tail: tail,
		drained: drained, exited: make(chan struct{})}, nil
}

// eofSignal closes eof when its reader reaches the end (or fails).
type eofSignal struct {
	io.ReadCloser
	eof  chan struct{}
	once sync.Once
}

func (r *eofSignal) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	if err != nil {
		r.once.Do(func() { close(r.eof) })
	}
	return n, err
}

func (p *program) Start(context.Context) error {
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.cmd.Path, err)
	}
	return nil
}

// drainLimit bounds the wait for a dead program's stderr to be read to
// its end: a process it started may still hold the pipe open.
const drainLimit = 2 * time.Second

// Wait waits for the process and records how it ended; go-plugin calls
// it once, from its own goroutine. It reaps the process itself rather
// than through exec.Cmd.Wait, which closes the pipes at once and would
// cut off the stderr go-plugin is still reading; they are closed once
// read to their end, or after drainLimit.
func (p *program) Wait(context.Context) error {
	ps, err := p.cmd.Process.Wait()
	if err == nil && !ps.Success() {
		err = &exec.ExitError{ProcessState: ps}
	}
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	select {
	case <-p.drained:
	case <-time.After(drainLimit):
	}
	_ = p.stdout.Close()
	_ = p.stderr.Close()
	close(p.exited)
	return err
}

func (p *program) Kill(context.Context) error {
	if p.cmd.Process == nil {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (p *program) Stdout() io.ReadCloser { return p.stdout }
func (p *program) Stderr() io.ReadCloser { return p.stderr }
func (p *program) Name() string          { return p.cmd.Path }

func (p *program) ID() string {
	if p.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(p.cmd.Process.Pid)
}

// Diagnose is what go-plugin adds to a failed handshake: how the program
// ended, when it did.
func (p *program) Diagnose(context.Context) string { return p.died(time.Second) }

func (p *program) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (p *program) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// died says how the process ended and what it last wrote to stderr,
// waiting up to wait for it to end (a call fails as the connection drops,
// a moment before the exit is seen); "" if it is still running.
func (p *program) died(wait time.Duration) string {
	select {
	case <-p.exited:
	case <-time.After(wait + drainLimit):
		return ""
	}
	p.mu.Lock()
	err := p.waitErr
	p.mu.Unlock()
	how := "the program exited with status 0"
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		how = "the program " + strings.Replace(ee.String(), "exit status", "exited with status", 1)
	case err != nil:
		how = "the program ended: " + err.Error()
	}
	lines := p.tail.Last(stderrLines)
	if len(lines) == 0 {
		return how + ", writing nothing to stderr"
	}
	return how + "; its stderr ends:\n  " + strings.Join(lines, "\n  ")
}

// pid is the program's process ID, 0 before it started.
func (p *program) pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// ExitError is the error of a plugin program that died, at its start or
// during a call: Err, explained by how the program ended and the end of
// its stderr (How).
type ExitError struct {
	Err error
	How string
}

func (e *ExitError) Error() string { return e.Err.Error() + ": " + e.How }
func (e *ExitError) Unwrap() error { return e.Err }

var _ runner.Runner = (*program)(nil)
