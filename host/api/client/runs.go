package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/internal/paths"
)

// StartRun starts a run of the pipeline spec names (in the config file
// RunOptions.Config, read by the daemon; empty: the daemon's own) and
// follows it. The run is the daemon's: if the client goes away, it goes
// on (pause it with PauseRun).
func (c *Client) StartRun(ctx context.Context, spec hearth.RunSpec) (hearth.RunWatch, error) {
	if spec.Pipeline != nil {
		return nil, ErrPipelineValue
	}
	cfg := spec.Config
	if cfg != "" {
		// The daemon resolves paths from its own directory.
		cfg = paths.Abs(cfg)
	}
	files := make([]string, len(spec.Files))
	for i, f := range spec.Files {
		files[i] = paths.Abs(f)
	}
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.StartRun(ctx, &apipb.StartRunRequest{Config: cfg, Pipeline: spec.PipelineName, Id: spec.ID,
		State: wire.State(spec.State), Files: files, Budget: spec.Budget})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// ResumeRun resumes a run on the daemon and follows it.
func (c *Client) ResumeRun(ctx context.Context, id string, opts hearth.ResumeOptions) (hearth.RunWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.ResumeRun(ctx, &apipb.ResumeRunRequest{Run: id, Budget: opts.Budget, Repair: opts.Repair,
		State: wire.State(opts.State)})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// ForkRun starts a new run from checkpoint at of run id and follows it.
func (c *Client) ForkRun(ctx context.Context, id string, at uint64, opts hearth.ForkOptions) (hearth.RunWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.ForkRun(ctx, &apipb.ForkRunRequest{Run: id, At: at, Id: opts.ID, State: wire.State(opts.State),
		Budget: opts.Budget})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// RevisitRun runs task of run id again, treats what came after by
// impact, and follows the run.
func (c *Client) RevisitRun(ctx context.Context, id, task string, impact hearth.Impact, opts hearth.RevisitOptions) (hearth.RunWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.RevisitRun(ctx, &apipb.RevisitRunRequest{Run: id, Task: task, Impact: string(impact), Reason: opts.Reason,
		Affects: opts.Affects})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// WatchRun follows a run that is running on the daemon; for one that is
// not, the stream ends at once with the run as it is.
func (c *Client) WatchRun(ctx context.Context, id string) (hearth.RunWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.rpc.WatchRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	return follow(ctx, cancel, st)
}

// runStream follows a run the daemon executes: its events until it
// stops (Events is then closed), and how it stopped from Wait. Its
// events wait, up to 1,024, for the reader, and the daemon's stream with
// them; Wait and Close discard what is left unread.
type runStream struct {
	id      string
	started hearth.RunInfo
	c       chan hearth.Event
	done    chan struct{}
	cancel  context.CancelFunc
	stopped *hearth.RunInfo
	err     error
}

// follow reads a run's stream: the first message (the run as it
// started) before it returns, the rest in the background.
func follow(ctx context.Context, cancel context.CancelFunc, st grpc.ServerStreamingClient[apipb.RunUpdate]) (*runStream, error) {
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
	rs := &runStream{id: started.GetId(), started: wire.RunInfoOf(started), c: make(chan hearth.Event, 1024), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(rs.done)
		defer cancel()
		defer close(rs.c)
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
				case rs.c <- wire.EventOf(u.Event):
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

func (s *runStream) ID() string                  { return s.id }
func (s *runStream) Events() <-chan hearth.Event { return s.c }

// Done is closed when the stream ends: the run stopped, or the stream
// broke.
func (s *runStream) Done() <-chan struct{} { return s.done }

// Wait returns the run as it stopped, discarding the events not read.
// The error is nil when it completed, a *hearth.RunError when it failed,
// paused or was cancelled, and a *StreamError when the stream broke (the
// run goes on in the daemon).
func (s *runStream) Wait(ctx context.Context) (hearth.RunInfo, error) {
	for open := true; open; {
		select {
		case _, open = <-s.c:
		case <-ctx.Done():
			return hearth.RunInfo{}, ctx.Err()
		}
	}
	<-s.done
	switch {
	case s.err != nil:
		return s.started, &StreamError{Run: s.id, Err: s.err}
	case s.stopped == nil:
		return s.started, &StreamError{Run: s.id, Err: errors.New("the stream ended before the run stopped")}
	case s.stopped.Status != hearth.RunCompleted:
		return *s.stopped, &hearth.RunError{Run: s.id, Status: s.stopped.Status, Reason: s.stopped.Reason}
	}
	return *s.stopped, nil
}

// Close stops following the run (it goes on in the daemon) and waits
// for the stream to end.
func (s *runStream) Close() {
	s.cancel()
	for range s.c {
	}
	<-s.done
}

// StreamError is the error of a run's stream that broke: the run itself
// goes on (or is paused) in the daemon.
type StreamError struct {
	Run string
	Err error
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("lost the daemon's stream of run %s (%v); the run is the daemon's: see it with hearth runs show %s", e.Run, e.Err, e.Run)
}

func (e *StreamError) Unwrap() error { return e.Err }
