// Package api is hearth's daemon: the gRPC API orchestrators, the CLI and
// `hearth hook` call (api.proto, in package apipb), and the HTTP side:
// the live dashboard, Prometheus /metrics and the Claude Code hook
// endpoint. It serves the vocabulary's services (package hearth), never
// the engine's type: each transport names the small interfaces it needs
// (API for gRPC, Web for HTTP, hearth.StatusReader for /metrics), Engine
// is all of them, and `hearth serve` hands it the engine.
//
// Lifecycle: NewServer over a running host, then Listen (the unix
// socket, and TCP and HTTP when configured), then Close, which stops
// the listeners (the host is the caller's to close). See docs/daemon.md
// for the design: transports and their access control, how runs are
// streamed, how errors cross, and what the dashboard shows.
package api

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/wire"
)

// Options configure a Server. Engine is required.
type Options struct {
	// Engine is what the daemon serves; *engine.Engine implements it.
	Engine Engine
	Logger hclog.Logger
	// Metrics, when set, is served on /metrics; it must be the host's
	// Options.Observe.
	Metrics *Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Register, when set, registers more gRPC services on the daemon's
	// servers (the unix socket's and the TCP listener's), behind the same
	// access control: `hearth serve` registers its cluster's peer service
	// there (host/cluster/member's Member.Register).
	Register func(grpc.ServiceRegistrar)
	// Cluster, when set, is what the dashboard's cluster view reads
	// (GET /api/cluster): `hearth serve` hands it the host's member of
	// its cluster. Without it the view says the host is in no cluster.
	Cluster Cluster
}

// Engine is what the daemon serves: what each of its transports asks.
type Engine interface {
	API
	Web
	hearth.StatusReader // /metrics
}

// API is what the gRPC API asks of the host it serves: the services of
// the vocabulary, its events, status and backup, and the reports of
// external sessions (the Hook call).
type API interface {
	hearth.Service
	hearth.EventSource
	hearth.StatusReader
	hearth.Admin
	claudecode.Sessions
}

// Server implements the API over a host.
type Server struct {
	apipb.UnimplementedHearthServer
	// api, web and status are the one Options.Engine, as each transport
	// sees it: the gRPC API, the HTTP side and /metrics. (The peer
	// service is host/cluster/peer's, over its own Handler, registered
	// through Options.Register.)
	api    API
	web    Web
	status hearth.StatusReader
	// cluster is Options.Cluster: nil without a cluster.
	cluster Cluster
	logger  hclog.Logger
	metrics *Metrics
	now     func() time.Time
	// register registers Options.Register's services.
	register func(grpc.ServiceRegistrar)
	// closing is closed when the daemon shuts down: streams end.
	closing   chan struct{}
	closeOnce sync.Once
	// dash signs the dashboard's logins once HTTP is served.
	dash atomic.Pointer[httpAuth]
	// tokenRefusals counts requests refused for want of the token, HTTP
	// and gRPC alike, so that a client that keeps polling without it (a
	// dashboard tab signed out, a script with an old token) is one
	// warning per address per refusalQuiet, not one per request.
	tokenRefusals refusals
}

// registerMore registers Options.Register's services on srv.
func (s *Server) registerMore(srv *grpc.Server) {
	if s.register != nil {
		s.register(srv)
	}
}

// shutdown ends the server's streams: the daemon is stopping.
func (s *Server) shutdown() { s.closeOnce.Do(func() { close(s.closing) }) }

// NewServer returns a server for opts.Engine.
func NewServer(opts Options) *Server {
	s := &Server{logger: opts.Logger, metrics: opts.Metrics, now: opts.Now, register: opts.Register, cluster: opts.Cluster, closing: make(chan struct{})}
	if opts.Engine != nil {
		s.api, s.web, s.status = opts.Engine, opts.Engine, opts.Engine
	}
	if s.logger == nil {
		s.logger = hclog.NewNullLogger()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Status describes the daemon.
func (s *Server) Status(ctx context.Context, _ *apipb.StatusRequest) (*apipb.StatusReply, error) {
	st, err := s.api.Status(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.HostStatus(st), nil
}

// SubmitTask runs one task.
func (s *Server) SubmitTask(ctx context.Context, req *apipb.SubmitTaskRequest) (*apipb.Outcome, error) {
	if strings.TrimSpace(req.GetAgent()) == "" {
		return nil, invalid("agent is empty: name one of the daemon's agents (hearth agents list)")
	}
	out, err := s.api.Submit(ctx, hearth.Task{Agent: req.GetAgent(), ID: req.GetId(), Name: req.GetName(), Prompt: req.GetPrompt(),
		Hints: wire.HintsOf(req.GetHints()), Metadata: req.GetMetadata()})
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Outcome(out), nil
}

// Place says where a task would run.
func (s *Server) Place(ctx context.Context, req *apipb.PlaceRequest) (*apipb.Decision, error) {
	d, err := s.api.Place(ctx, req.GetAgent(), wire.HintsOf(req.GetHints()))
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Decision(&d), nil
}

// ListSessions lists the host's sessions.
func (s *Server) ListSessions(ctx context.Context, _ *apipb.ListSessionsRequest) (*apipb.SessionList, error) {
	sessions, err := s.api.Sessions(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	out := &apipb.SessionList{}
	for _, si := range sessions {
		out.Sessions = append(out.Sessions, wire.Session(si))
	}
	return out, nil
}

// ShowSession shows one session.
func (s *Server) ShowSession(ctx context.Context, req *apipb.ShowSessionRequest) (*apipb.SessionDetail, error) {
	limit := int(req.GetLimit())
	if limit <= 0 {
		limit = 20
	}
	d, err := s.api.Session(ctx, req.GetId(), limit)
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.SessionDetail(d), nil
}

// StartRun starts a pipeline's run and streams it.
func (s *Server) StartRun(req *apipb.StartRunRequest, stream apipb.Hearth_StartRunServer) error {
	spec := hearth.RunSpec{PipelineName: req.GetPipeline(), RunOptions: hearth.RunOptions{ID: req.GetId(),
		State: wire.StateOf(req.GetState()), Files: req.GetFiles(), Budget: req.GetBudget(), Config: req.GetConfig()}}
	return s.streamRun(stream, req.GetDetach(), func(ctx context.Context) (hearth.RunWatch, error) {
		return s.api.StartRun(ctx, spec)
	})
}

// ResumeRun resumes a run and streams it.
func (s *Server) ResumeRun(req *apipb.ResumeRunRequest, stream apipb.Hearth_ResumeRunServer) error {
	return s.streamRun(stream, req.GetDetach(), func(ctx context.Context) (hearth.RunWatch, error) {
		return s.api.ResumeRun(ctx, req.GetRun(), hearth.ResumeOptions{Budget: req.GetBudget(), Repair: req.GetRepair(), State: wire.StateOf(req.GetState())})
	})
}

// ForkRun forks a run and streams the new one.
func (s *Server) ForkRun(req *apipb.ForkRunRequest, stream apipb.Hearth_ForkRunServer) error {
	if req.GetAt() == 0 {
		return invalid("fork needs a checkpoint to start from (at); list them with hearth runs show " + req.GetRun() + " --checkpoints")
	}
	return s.streamRun(stream, req.GetDetach(), func(ctx context.Context) (hearth.RunWatch, error) {
		return s.api.ForkRun(ctx, req.GetRun(), req.GetAt(), hearth.ForkOptions{ID: req.GetId(), State: wire.StateOf(req.GetState()), Budget: req.GetBudget()})
	})
}

// RevisitRun revisits a task of a run and streams the run.
func (s *Server) RevisitRun(req *apipb.RevisitRunRequest, stream apipb.Hearth_RevisitRunServer) error {
	impact, err := hearth.ParseImpact(req.GetImpact())
	if err != nil {
		return invalid(err.Error())
	}
	return s.streamRun(stream, req.GetDetach(), func(ctx context.Context) (hearth.RunWatch, error) {
		return s.api.RevisitRun(ctx, req.GetRun(), req.GetTask(), impact, hearth.RevisitOptions{Reason: req.GetReason(), Affects: req.GetAffects()})
	})
}

// runStream is the server side of a run's stream.
type runStream interface {
	Send(*apipb.RunUpdate) error
	Context() context.Context
}

// streamRun starts a run with start, and streams it: the run as it
// started, its events, the run as it stopped. The run belongs to the
// daemon: a client that goes away leaves it running.
func (s *Server) streamRun(stream runStream, detach bool, start func(context.Context) (hearth.RunWatch, error)) error {
	w, err := start(stream.Context())
	if err != nil {
		return wire.Status(err)
	}
	defer w.Close()
	d, err := s.api.Run(stream.Context(), w.ID())
	if err != nil {
		return wire.Status(err)
	}
	if err := stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Started{Started: wire.RunInfo(d.RunInfo)}}); err != nil || detach {
		return err
	}
	return s.follow(stream, w)
}

// follow streams a run's events until it stops, then the run as it
// stopped. The watch is done only after the run's last events were
// published, so none is missed.
func (s *Server) follow(stream runStream, w hearth.RunWatch) error {
	ctx := stream.Context()
	send := func(e hearth.Event) error {
		return stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Event{Event: wire.Event(e)}})
	}
	for {
		select {
		case e, ok := <-w.Events():
			if !ok {
				<-w.Done()
				continue
			}
			if err := send(e); err != nil {
				return err
			}
		case <-w.Done():
			for {
				select {
				case e, ok := <-w.Events():
					if ok {
						if err := send(e); err != nil {
							return err
						}
						continue
					}
				default:
				}
				break
			}
			info, _ := w.Wait(ctx)
			if d, err := s.api.Run(ctx, w.ID()); err == nil {
				info = d.RunInfo
			}
			if d, ok := w.(interface{ Dropped() uint64 }); ok && d.Dropped() > 0 {
				s.logger.Warn("a run's watcher was too slow; events were dropped", "run", w.ID(), "dropped", d.Dropped())
			}
			return stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Stopped{Stopped: wire.RunInfo(info)}})
		case <-ctx.Done():
			// The client went away; the run goes on.
			return status.FromContextError(ctx.Err()).Err()
		case <-s.closing:
			return status.Error(codes.Unavailable, "the daemon is shutting down; the run is paused, resume it once it is back")
		}
	}
}

// WatchRun streams a running run until it stops.
func (s *Server) WatchRun(req *apipb.RunRef, stream apipb.Hearth_WatchRunServer) error {
	return s.streamRun(stream, false, func(ctx context.Context) (hearth.RunWatch, error) {
		return s.api.WatchRun(ctx, req.GetRun())
	})
}

// PauseRun pauses a run, interrupting its tasks in flight.
func (s *Server) PauseRun(ctx context.Context, req *apipb.RunRef) (*apipb.RunInfo, error) {
	info, err := s.api.PauseRun(ctx, req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.RunInfo(info), nil
}

// CancelRun cancels a run for good.
func (s *Server) CancelRun(ctx context.Context, req *apipb.RunRef) (*apipb.RunInfo, error) {
	info, err := s.api.CancelRun(ctx, req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.RunInfo(info), nil
}

// DeleteRun deletes a stopped run.
func (s *Server) DeleteRun(ctx context.Context, req *apipb.RunRef) (*apipb.DeleteRunReply, error) {
	id, err := s.api.DeleteRun(ctx, req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	return &apipb.DeleteRunReply{Run: id}, nil
}

// ListRuns lists the runs.
func (s *Server) ListRuns(ctx context.Context, _ *apipb.ListRunsRequest) (*apipb.RunList, error) {
	runs, err := s.api.Runs(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	out := &apipb.RunList{}
	for _, r := range runs {
		out.Runs = append(out.Runs, wire.RunInfo(r))
	}
	return out, nil
}

// ShowRun shows a run, with what the request asks for.
func (s *Server) ShowRun(ctx context.Context, req *apipb.ShowRunRequest) (*apipb.RunView, error) {
	d, err := s.api.Run(ctx, req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	v := &apipb.RunView{Detail: wire.RunDetail(d)}
	if req.GetOutputs() {
		outs, err := s.api.RunOutputs(ctx, d.ID)
		if err != nil {
			return nil, wire.Status(err)
		}
		for _, o := range outs {
			v.Outputs = append(v.Outputs, wire.TaskOutput(o))
		}
	}
	if req.GetCheckpoints() {
		cps, err := s.api.RunCheckpoints(ctx, d.ID)
		if err != nil {
			return nil, wire.Status(err)
		}
		for _, c := range cps {
			v.Checkpoints = append(v.Checkpoints, wire.Checkpoint(c))
		}
	}
	if n := int(req.GetEvents()); n > 0 {
		evs, err := s.api.RunEvents(ctx, d.ID, n)
		if err != nil {
			return nil, wire.Status(err)
		}
		for _, e := range evs {
			v.Events = append(v.Events, wire.Event(e))
		}
	}
	return v, nil
}

// RunEvents reads a run's recorded events.
func (s *Server) RunEvents(ctx context.Context, req *apipb.RunEventsRequest) (*apipb.EventList, error) {
	evs, err := s.api.RunEvents(ctx, req.GetRun(), int(req.GetLimit()))
	if err != nil {
		return nil, wire.Status(err)
	}
	out := &apipb.EventList{}
	for _, e := range evs {
		out.Events = append(out.Events, wire.Event(e))
	}
	return out, nil
}

// eventsBuffer is how many events a slow Events client may fall behind
// before it misses some.
const eventsBuffer = 8192

// Events streams the host's events as they happen.
func (s *Server) Events(req *apipb.EventsRequest, stream apipb.Hearth_EventsServer) error {
	ctx := stream.Context()
	sub, err := s.api.Subscribe(ctx, wire.EventFilterOf(req, eventsBuffer))
	if err != nil {
		return wire.Status(err)
	}
	defer sub.Close()
	// The headers tell the client it is subscribed: what happens after
	// its call returns reaches it (client.Subscribe waits for them).
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	var dropped uint64
	for {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				// Its context ended: the client went away, and nothing
				// is left behind.
				return status.FromContextError(ctx.Err()).Err()
			}
			if err := stream.Send(wire.Event(e)); err != nil {
				return err
			}
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.closing:
			return status.Error(codes.Unavailable, "the daemon is shutting down")
		}
		if n := sub.Dropped(); n > dropped {
			s.logger.Warn("an event stream's client is too slow; events were dropped", "dropped", n-dropped)
			dropped = n
		}
	}
}

// Hook takes one hook call of an external session.
func (s *Server) Hook(ctx context.Context, req *apipb.HookRequest) (*apipb.HookReply, error) {
	out, err := hook(ctx, s.api, req.GetKind(), req.GetAgent(), req.GetPayload())
	if err != nil {
		return nil, wire.Status(err)
	}
	return &apipb.HookReply{Output: out}, nil
}

// hook hands a hook payload of kind for agent to sessions; the gRPC and
// HTTP endpoints share it.
func hook(ctx context.Context, sessions claudecode.Sessions, kind, agent string, payload []byte) ([]byte, error) {
	if kind != "" && kind != config.ExternalClaudeCode {
		return nil, fmt.Errorf("%w: hearth takes hooks of %s, not %q", wire.ErrBadPayload, config.ExternalClaudeCode, kind)
	}
	p, err := claudecode.Parse(payload)
	if err != nil {
		return nil, err
	}
	return claudecode.Handle(ctx, sessions, agent, p)
}

// invalid is an INVALID_ARGUMENT status.
func invalid(msg string) error { return status.Error(codes.InvalidArgument, msg) }

var _ apipb.HearthServer = (*Server)(nil)

// Backup streams a backup of the daemon's data directory, taken while it
// serves, in chunks.
func (s *Server) Backup(_ *apipb.BackupRequest, stream apipb.Hearth_BackupServer) error {
	w := &chunkWriter{send: func(b []byte) error { return stream.Send(&apipb.BackupChunk{Data: b}) }}
	st, err := s.api.Backup(stream.Context(), w)
	if err != nil {
		return wire.Status(err)
	}
	// The last chunk says what the backup holds.
	last := w.buf
	w.buf = nil
	return stream.Send(&apipb.BackupChunk{Data: last, Stats: wire.BackupStats(st)})
}

// chunkWriter sends what is written in chunks of backupChunk bytes.
type chunkWriter struct {
	buf  []byte
	send func([]byte) error
}

const backupChunk = 1 << 20

func (c *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), backupChunk-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p = p[k:]
		if len(c.buf) == backupChunk {
			if err := c.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

func (c *chunkWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := c.send(c.buf)
	c.buf = nil
	return err
}
