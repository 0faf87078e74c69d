package otlptest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// A receiver in a process of its own, for benchmarks: a trace backend is
// another machine in a real deployment, so the CPU it spends decoding
// spans must not be counted against the host being measured, as it would
// be with a Receiver in the host's process.
//
// The protocol on the process's stdin and stdout is one line each way:
// it prints "grpc ADDR http URL" once listening; each "count" line it
// reads is answered with the number of spans received so far; at EOF on
// stdin (the parent closed it, or died) it stops. So it cannot outlive
// the benchmark that started it.

// ServeProcess is the receiver process's main: a count-only receiver,
// driven by the lines on in, answering on out. It returns when in ends.
func ServeProcess(in io.Reader, out io.Writer) error {
	r, err := Start()
	if err != nil {
		return err
	}
	defer r.Close()
	r.CountOnly()
	if _, err := fmt.Fprintf(out, "grpc %s http %s\n", r.GRPCAddr, r.HTTPURL); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() != "count" {
			return fmt.Errorf("otlptest: process: unknown request %q; send \"count\" or close stdin", sc.Text())
		}
		if _, err := fmt.Fprintln(out, r.Received()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Process is a receiver running in a child process (ServeProcess). Its
// methods are safe for concurrent use.
type Process struct {
	// GRPCAddr and HTTPURL are as Receiver's.
	GRPCAddr, HTTPURL string

	cmd *exec.Cmd
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

// StartProcess starts cmd, a program whose main calls ServeProcess, and
// returns once it listens. Close stops it.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("otlptest: receiver process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("otlptest: receiver process: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("otlptest: start the receiver process %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, in: in, out: bufio.NewReader(stdout)}
	line, err := p.out.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 4 || f[0] != "grpc" || f[2] != "http" {
		p.Close()
		return nil, fmt.Errorf("otlptest: the receiver process said %q, not its addresses (%v); does its main call otlptest.ServeProcess?", line, err)
	}
	p.GRPCAddr, p.HTTPURL = f[1], f[3]
	return p, nil
}

// Endpoint is the process's endpoint for protocol, as a telemetry
// block's endpoint names it.
func (p *Process) Endpoint(protocol string) string {
	if protocol == "grpc" {
		return "http://" + p.GRPCAddr
	}
	return p.HTTPURL
}

// Received asks the process how many spans it has received.
func (p *Process) Received() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.in, "count\n"); err != nil {
		return 0, fmt.Errorf("otlptest: ask the receiver process: %w", err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("otlptest: read the receiver process's count: %w", err)
	}
	return strconv.ParseInt(strings.TrimSpace(line), 10, 64)
}

// Close stops the process and waits for it.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.in.Close()
	if werr := p.cmd.Wait(); werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		err = errors.Join(err, fmt.Errorf("otlptest: receiver process: %w", werr))
	}
	return err
}
