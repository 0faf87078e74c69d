package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/host/api/apipb"
	"github.com/hearth-dev/hearth/host/api/internal/wire"
)

// StartOptions say which pipeline a run runs, and with what.
type StartOptions struct {
	// Config is a config file (or a directory holding hearth.hcl) the
	// daemon reads the pipeline from; its agents must be the daemon's.
	// Empty: the daemon's own config.
	Config string
	// Pipeline names the pipeline; empty when the file has one.
	Pipeline string
	// ID is the run's ID (host.NewRunID); the daemon makes one when empty.
	ID     string
	State  map[string]json.RawMessage
	Files  []string
	Budget float64
	// Detach returns once the run started, without following it.
	Detach bool
}

// StartRun starts a run on the daemon and follows it. The run is the
// daemon's: if the client goes away, it goes on (pause it with
// PauseRun).
func (c *Client) StartRun(ctx context.Context, opts StartOptions) (*RunStream, error) {
	cfg := opts.Config
	if cfg != "" {
		// The daemon resolves paths from its own directory.
		cfg = absPath(cfg)
	}
	files := make([]string, len(opts.Files))
	for i, f := range opts.Files {
		files[i] = absPath(f)
	}
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.StartRun(ctx, &apipb.StartRunRequest{Config: cfg, Pipeline: opts.Pipeline, Id: opts.ID,
		State: wire.State(opts.State), Files: files, Budget: opts.Budget, Detach: opts.Detach})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// ResumeRun resumes a run on the daemon and follows it.
func (c *Client) ResumeRun(ctx context.Context, id string, opts host.ResumeOptions, detach bool) (*RunStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.ResumeRun(ctx, &apipb.ResumeRunRequest{Run: id, Budget: opts.Budget, Repair: opts.Repair,
		State: wire.State(opts.State), Detach: detach})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// ForkRun starts a new run from checkpoint at of run id and follows it.
func (c *Client) ForkRun(ctx context.Context, id string, at uint64, opts host.ForkOptions, detach bool) (*RunStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.ForkRun(ctx, &apipb.ForkRunRequest{Run: id, At: at, Id: opts.ID, State: wire.State(opts.State),
		Budget: opts.Budget, Detach: detach})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// RevisitRun runs task of run id again, treats what came after by
// impact, and follows the run.
func (c *Client) RevisitRun(ctx context.Context, id, task string, impact host.Impact, opts host.RevisitOptions, detach bool) (*RunStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.RevisitRun(ctx, &apipb.RevisitRunRequest{Run: id, Task: task, Impact: string(impact), Reason: opts.Reason,
		Affects: opts.Affects, Detach: detach})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// WatchRun follows a run that is running on the daemon; for one that is
// not, the stream ends at once with the run as it is.
func (c *Client) WatchRun(ctx context.Context, id string) (*RunStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.WatchRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// RunStream follows a run the daemon executes: its events on C until it
// stops (C is then closed), and how it stopped from Wait.
type RunStream struct {
	// ID is the run's ID; Started, the run as it started.
	ID      string
	Started host.RunInfo
	// C carries the run's events; read it, or they wait (up to 1,024)
	// and the daemon's stream with them. Wait and Close discard what is
	// left unread.
	C       <-chan host.Event
	done    chan struct{}
	cancel  context.CancelFunc
	stopped *host.RunInfo
	err     error
}

// follow reads a run's stream: the first message (the run as it
// started) before it returns, the rest in the background.
func follow(ctx context.Context, cancel context.CancelFunc, st grpc.ServerStreamingClient[apipb.RunUpdate]) (*RunStream, error) {
	first, err := st.Recv()
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	started := first.GetStarted()
	if started == nil {
		cancel()
		return nil, fmt.Errorf("client: the daemon's run stream began with %T, not the run", first.GetUpdate())
	}
	ch := make(chan host.Event, 1024)
	rs := &RunStream{ID: started.GetId(), Started: wire.RunInfoOf(started), C: ch, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(rs.done)
		defer cancel()
		defer close(ch)
		for {
			m, err := st.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				rs.err = wire.ErrorOf(ctx, err)
				return
			}
			switch u := m.GetUpdate().(type) {
			case *apipb.RunUpdate_Event:
				select {
				case ch <- wire.EventOf(u.Event):
				case <-ctx.Done():
					rs.err = ctx.Err()
					return
				}
			case *apipb.RunUpdate_Stopped:
				info := wire.RunInfoOf(u.Stopped)
				rs.stopped = &info
			}
		}
	}()
	return rs, nil
}

// Done is closed when the stream ends: the run stopped, the stream was
// detached, or it broke.
func (s *RunStream) Done() <-chan struct{} { return s.done }

// Wait returns the run as it stopped, discarding the events not read
// from C. The error is nil when it completed, a *host.RunError when it
// failed, paused or was cancelled, ErrDetached for a stream that did not
// follow the run, and the stream's error when it broke (the run goes on
// in the daemon).
func (s *RunStream) Wait(ctx context.Context) (host.RunInfo, error) {
	for open := true; open; {
		select {
		case _, open = <-s.C:
		case <-ctx.Done():
			return host.RunInfo{}, ctx.Err()
		}
	}
	<-s.done
	switch {
	case s.err != nil:
		return s.Started, s.err
	case s.stopped == nil:
		return s.Started, ErrDetached
	case s.stopped.Status != host.RunCompleted:
		return *s.stopped, &host.RunError{Run: s.ID, Status: s.stopped.Status, Reason: s.stopped.Reason}
	}
	return *s.stopped, nil
}

// Close stops following the run (it goes on in the daemon) and waits
// for the stream to end.
func (s *RunStream) Close() {
	s.cancel()
	for range s.C {
	}
	<-s.done
}

// ErrDetached is Wait's error for a stream that did not follow its run
// to the end (StartOptions.Detach).
var ErrDetached = errors.New("the run was started detached; follow it with WatchRun")
