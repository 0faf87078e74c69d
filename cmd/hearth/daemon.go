package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
)

// The commands that read or run work (run, runs, sessions, submit,
// place) go through the daemon when one serves the data directory, and
// open the data directory themselves when none does: Badger lets one
// process at a time have it, so never both.

// dataDirPath is the data directory the command works on: --data-dir,
// HEARTH_DATA_DIR, the config file's data_dir, or the default.
func (m *Main) dataDirPath() (string, error) {
	if dir := firstNonEmpty(m.dataDir, m.Getenv("HEARTH_DATA_DIR")); dir != "" {
		return dir, nil
	}
	cfg, err := m.loadConfig()
	if err != nil {
		return "", err
	}
	return firstNonEmpty(cfg.DataDir, config.DefaultDataDir), nil
}

// socketPath is the daemon's socket for the data directory: --socket,
// HEARTH_SOCKET, the config's server.socket, or the data directory's.
func (m *Main) socketPath() (string, error) {
	cfg, err := m.loadConfig()
	return m.socketOf(cfg, err)
}

// socketOf is socketPath for a config already loaded (with its error). A
// config file that does not load does not cut the CLI off from a daemon
// it can find anyway: in the data directory a flag or HEARTH_DATA_DIR
// names.
func (m *Main) socketOf(cfg *config.Config, cfgErr error) (string, error) {
	if s := firstNonEmpty(m.socket, m.Getenv("HEARTH_SOCKET")); s != "" {
		return s, nil
	}
	if cfgErr != nil {
		dir := firstNonEmpty(m.dataDir, m.Getenv("HEARTH_DATA_DIR"))
		if dir == "" {
			return "", cfgErr
		}
		return config.DefaultServer().SocketPath(dir), nil
	}
	// loadConfig applied --data-dir and HEARTH_DATA_DIR.
	return cfg.Server.SocketPath(cfg.DataDir), nil
}

// daemon returns a client of the daemon serving the data directory, or
// nil when none runs.
func (m *Main) daemon(ctx context.Context) (*client.Client, error) {
	sock, err := m.socketPath()
	if err != nil {
		return nil, err
	}
	c, err := client.Dial(ctx, client.Options{Socket: sock})
	if errors.Is(err, client.ErrNoDaemon) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the daemon on %s: %w", sock, err)
	}
	return c, nil
}

// viaDaemon runs remote on the daemon serving the data directory, and
// says whether there was one: when not, the command does its work itself.
func (m *Main) viaDaemon(ctx context.Context, remote func(*client.Client) error) (bool, error) {
	c, err := m.daemon(ctx)
	if err != nil || c == nil {
		return err != nil, err
	}
	defer c.Close()
	return true, remote(c)
}

// daemonRuns reads runs through the daemon: the runReader of a run the
// daemon executes.
type daemonRuns struct {
	ctx context.Context
	c   *client.Client
}

func (d daemonRuns) Run(id string) (host.RunDetail, error) {
	v, err := d.c.ShowRun(d.ctx, id, client.ShowOptions{})
	if err != nil {
		return host.RunDetail{}, err
	}
	return v.RunDetail, nil
}

func (d daemonRuns) RunOutputs(id string) ([]host.TaskOutput, error) {
	v, err := d.c.ShowRun(d.ctx, id, client.ShowOptions{Outputs: true})
	if err != nil {
		return nil, err
	}
	return v.Outputs, nil
}

// remoteWatch follows a run the daemon executes.
type remoteWatch struct{ s *client.RunStream }

func (w remoteWatch) ID() string                { return w.s.ID }
func (w remoteWatch) Events() <-chan host.Event { return w.s.C }
func (w remoteWatch) Done() <-chan struct{}     { return w.s.Done() }
func (w remoteWatch) Close()                    { w.s.Close() }
func (w remoteWatch) Wait(ctx context.Context) (host.RunInfo, error) {
	info, err := w.s.Wait(ctx)
	var re *host.RunError
	if err != nil && !errors.As(err, &re) {
		return info, &lostStream{run: w.s.ID, err: err}
	}
	return info, err
}

// lostStream: the stream of a run the daemon executes broke; the run
// itself goes on (or is paused) in the daemon.
type lostStream struct {
	run string
	err error
}

func (e *lostStream) Error() string {
	return fmt.Sprintf("lost the daemon's stream of run %s (%v); the run is the daemon's: see it with hearth runs show %s", e.run, e.err, e.run)
}

func (e *lostStream) Unwrap() error { return e.err }

// followRemote follows a run the daemon executes until it stops, then
// prints it, like a run of this process. The first SIGINT or SIGTERM
// pauses the run (its tasks in flight are interrupted, and run again on
// resume); a second one stops following (the run is the daemon's).
func (m *Main) followRemote(ctx context.Context, c *client.Client, start func(context.Context) (*client.RunStream, error), quiet, asJSON bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs, err := start(ctx)
	if err != nil {
		return err
	}
	sigs, stop := m.Signals()
	defer stop()
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(m.Stderr, "hearth: %v: pausing run %s in the daemon; tasks in flight are interrupted and run again on resume (signal again to stop watching)\n", sig, rs.ID)
			go func() {
				if _, err := c.PauseRun(ctx, rs.ID); err != nil && ctx.Err() == nil {
					fmt.Fprintf(m.Stderr, "hearth: could not pause run %s: %v\n", rs.ID, err)
				}
			}()
		case <-rs.Done():
			return
		}
		select {
		case <-sigs:
			fmt.Fprintf(m.Stderr, "hearth: stopped watching; run %s goes on in the daemon (hearth runs show %s)\n", rs.ID, rs.ID)
			cancel()
		case <-rs.Done():
		}
	}()
	return m.finishRun(ctx, daemonRuns{ctx, c}, remoteWatch{rs}, quiet, asJSON)
}

// withDaemonSignals runs work with a context cancelled by SIGINT or
// SIGTERM: a call to the daemon in flight (a task) is cancelled there.
func (m *Main) withDaemonSignals(ctx context.Context, work func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs, stop := m.Signals()
	defer stop()
	done := make(chan error, 1)
	go func() { done <- work(ctx) }()
	select {
	case err := <-done:
		return err
	case sig := <-sigs:
		cancel(fmt.Errorf("interrupted by %v", sig))
		<-done
		return fmt.Errorf("interrupted by %v", sig)
	}
}
