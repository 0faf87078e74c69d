package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/store"
)

// The commands that read or run work (run, runs, sessions, submit,
// place) go through the daemon when one serves the data directory, and
// do the work in this process when none does: Badger lets one process
// at a time have it, so never both. That choice is made here, and only
// here: every command is written once, against hearth.Reader or
// hearth.Service, which the daemon's client, the store and the engine all
// implement.

// target says where a command's work goes.
type target struct {
	// daemon is set when a daemon does the work; where is its address, or
	// the data directory this process works on.
	daemon bool
	where  string

	// mu guards run: the run being followed, which the daemon pauses on
	// the first SIGINT or SIGTERM.
	mu  sync.Mutex
	run string
}

// inDaemon is s when the work is the daemon's, else "": what a command
// says of where it runs.
func (t *target) inDaemon(s string) string {
	if t.daemon {
		return s
	}
	return ""
}

// follow says the command is following run id now.
func (t *target) follow(id string) {
	t.mu.Lock()
	t.run = id
	t.mu.Unlock()
}

func (t *target) following() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.run
}

// dataDirPath is the data directory the command works on: --data-dir,
// HEARTH_DATA_DIR, the config file's data_dir, or the default.
func (m *Main) dataDirPath() (dir, from string, err error) {
	if dir, from := m.dataDirFlag(); dir != "" {
		return dir, from, nil
	}
	cfg, err := m.loadConfig()
	if err != nil {
		return "", "", err
	}
	return cfg.DataDir, cfg.DataDirFrom, nil
}

// socketPath is the daemon's socket for the data directory: --socket,
// HEARTH_SOCKET, the config's server.socket, or the data directory's.
func (m *Main) socketPath() (string, error) {
	// The file is read here only to find the daemon, which runs tasks on
	// the config it loaded itself: warnings about this shell (an API key
	// not set in its environment, while the daemon has it) would be
	// false. A command that goes on without a daemon loads the config
	// again, and says them then.
	cfg, err := m.readConfig(false)
	return m.socketOf(cfg, err)
}

// socketOf is socketPath for a config already loaded (with its error). A
// config file that does not load does not cut the CLI off from a daemon
// it can find anyway: in the data directory a flag or HEARTH_DATA_DIR
// names.
func (m *Main) socketOf(cfg *config.Config, cfgErr error) (string, error) {
	if s := cmp.Or(m.socket, m.Getenv("HEARTH_SOCKET")); s != "" {
		return s, nil
	}
	if cfgErr != nil {
		dir := cmp.Or(m.dataDir, m.Getenv("HEARTH_DATA_DIR"))
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

// withReader runs work with the reads of the data directory: the
// daemon's when one serves it, else the store, opened by this process.
// where is the daemon's address or the data directory.
func (m *Main) withReader(ctx context.Context, work func(ctx context.Context, r hearth.Reader, where string) error) error {
	c, err := m.daemon(ctx)
	if err != nil {
		return err
	}
	if c != nil {
		defer c.Close()
		return work(ctx, c, "the daemon on "+c.Target())
	}
	st, err := m.openStore(store.Read)
	if err != nil {
		return err
	}
	defer st.Close()
	return work(ctx, st, shortPath(st.Dir()))
}

// withService runs work with the service of the data directory: the
// daemon's when one serves it, else an engine in this process on the
// config local returns.
//
// Signals follow where the work is. In this process, the first SIGINT or
// SIGTERM shuts the engine down gracefully (tasks in flight get
// shutdownGrace; its runs pause), a second one at once. Through the
// daemon, the first pauses the run the command follows (its tasks in
// flight are interrupted, and run again on resume) or cancels the call
// in flight; a second stops following (the run is the daemon's).
func (m *Main) withService(ctx context.Context, local func() (*config.Config, error), work func(context.Context, hearth.Service, *target) error) error {
	c, err := m.daemon(ctx)
	if err != nil {
		return err
	}
	if c != nil {
		defer c.Close()
		t := &target{daemon: true, where: c.Target()}
		return m.daemonSignals(ctx, c, t, func(ctx context.Context) error { return work(ctx, c, t) })
	}
	cfg, err := local()
	if err != nil {
		return err
	}
	return m.withHost(ctx, cfg, func(ctx context.Context, h *engine.Engine) error {
		st, err := h.Status(ctx)
		if err != nil {
			return err
		}
		return work(ctx, h, &target{where: shortPath(st.DataDir)})
	})
}

// daemonSignals runs work with a context the signals cancel, as
// withService says.
func (m *Main) daemonSignals(ctx context.Context, c *client.Client, t *target, work func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs, stop := m.Signals()
	defer stop()
	done := make(chan error, 1)
	go func() { done <- work(ctx) }()
	var sig fmt.Stringer
	for paused := false; ; {
		select {
		case err := <-done:
			if sig != nil && !paused {
				return fmt.Errorf("interrupted by %v", sig)
			}
			return err
		case s := <-sigs:
			sig = s
			if run := t.following(); run != "" && !paused {
				paused = true
				fmt.Fprintf(m.Stderr, "hearth: %v: pausing run %s in the daemon; tasks in flight are interrupted and run again on resume (signal again to stop watching)\n", s, run)
				go func() {
					if _, err := c.PauseRun(ctx, run); err != nil && ctx.Err() == nil {
						fmt.Fprintf(m.Stderr, "hearth: could not pause run %s: %v\n", run, err)
					}
				}()
				continue
			}
			if paused {
				fmt.Fprintf(m.Stderr, "hearth: stopped watching; run %s goes on in the daemon (hearth runs show %s)\n", t.following(), t.following())
			}
			cancel(fmt.Errorf("interrupted by %v", s))
			err := <-done
			if paused {
				return err
			}
			return fmt.Errorf("interrupted by %v", s)
		}
	}
}

// followRun follows the run w until it stops, then prints it: where it
// ran, every task as it finished, a summary or JSON. A run that did not
// complete is a failure of the work (exit 1).
func (m *Main) followRun(ctx context.Context, svc hearth.Service, t *target, w hearth.RunWatch, quiet, asJSON bool) error {
	t.follow(w.ID())
	return m.finishRun(ctx, svc, w, quiet, asJSON)
}
