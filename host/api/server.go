// Package api is hearth's daemon: the gRPC API orchestrators, the CLI and
// `hearth hook` call (api.proto, in package apipb), and the HTTP side:
// the live dashboard, Prometheus /metrics and the Claude Code hook
// endpoint. It serves a host.Host; `hearth serve` wires it up.
//
// Lifecycle: NewServer over a running host, then Listen (the unix
// socket, and TCP and HTTP when configured), then Close, which stops
// the listeners (the host is the caller's to close). See docs/daemon.md
// for the design: transports and their access control, how runs are
// streamed, how errors cross, and what the dashboard shows.
package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/host/api/apipb"
	"github.com/hearth-dev/hearth/host/api/internal/wire"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// Options configure a Server. Host is required.
type Options struct {
	Host *host.Host
	// Bundled lists the bundled agents, for config files a client names.
	Bundled []string
	Logger  hclog.Logger
	// Version is the daemon's version, as `hearth version` prints it.
	Version string
	// Metrics, when set, is served on /metrics; it must be the host's
	// Options.Observe.
	Metrics *Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Server implements the API over a host.
type Server struct {
	apipb.UnimplementedHearthServer
	h       *host.Host
	bundled []string
	logger  hclog.Logger
	version string
	metrics *Metrics
	now     func() time.Time
	started time.Time
	// closing is closed when the daemon shuts down: streams end.
	closing   chan struct{}
	closeOnce sync.Once
}

// shutdown ends the server's streams: the daemon is stopping.
func (s *Server) shutdown() { s.closeOnce.Do(func() { close(s.closing) }) }

// NewServer returns a server for opts.Host.
func NewServer(opts Options) *Server {
	s := &Server{h: opts.Host, bundled: opts.Bundled, logger: opts.Logger, version: opts.Version,
		metrics: opts.Metrics, now: opts.Now, closing: make(chan struct{})}
	if s.logger == nil {
		s.logger = hclog.NewNullLogger()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.started = s.now()
	return s
}

// Status describes the daemon.
func (s *Server) Status(context.Context, *apipb.StatusRequest) (*apipb.StatusReply, error) {
	r := &apipb.StatusReply{Version: s.version, DataDir: s.h.DataDir(), Pid: int32(os.Getpid()),
		StartedUnixNano: s.started.UnixNano(), Config: s.h.Config().Path, ProtocolVersion: int32(sdk.ProtocolVersion)}
	for _, a := range s.h.Agents() {
		r.Agents = append(r.Agents, wire.Agent(a))
	}
	return r, nil
}

// SubmitTask runs one task.
func (s *Server) SubmitTask(ctx context.Context, req *apipb.SubmitTaskRequest) (*apipb.Outcome, error) {
	if strings.TrimSpace(req.GetAgent()) == "" {
		return nil, invalid("agent is empty: name one of the daemon's agents (hearth agents list)")
	}
	out, err := s.h.Submit(ctx, host.Task{Agent: req.GetAgent(), ID: req.GetId(), Name: req.GetName(), Prompt: req.GetPrompt(),
		Hints: wire.HintsOf(req.GetHints()), Metadata: req.GetMetadata()})
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Outcome(out), nil
}

// Place says where a task would run.
func (s *Server) Place(_ context.Context, req *apipb.PlaceRequest) (*apipb.Decision, error) {
	d, err := s.h.Place(req.GetAgent(), wire.HintsOf(req.GetHints()))
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Decision(&d), nil
}

// ListSessions lists the host's sessions.
func (s *Server) ListSessions(context.Context, *apipb.ListSessionsRequest) (*apipb.SessionList, error) {
	out := &apipb.SessionList{}
	for _, si := range s.h.Sessions() {
		out.Sessions = append(out.Sessions, wire.Session(si))
	}
	return out, nil
}

// ShowSession shows one session.
func (s *Server) ShowSession(_ context.Context, req *apipb.ShowSessionRequest) (*apipb.SessionDetail, error) {
	limit := int(req.GetLimit())
	if limit <= 0 {
		limit = 20
	}
	d, err := s.h.Session(req.GetId(), limit)
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.SessionDetail(d), nil
}

// StartRun starts a pipeline's run and streams it.
func (s *Server) StartRun(req *apipb.StartRunRequest, stream apipb.Hearth_StartRunServer) error {
	p, cfgPath, err := s.pipeline(req.GetConfig(), req.GetPipeline())
	if err != nil {
		return wire.Status(err)
	}
	id := req.GetId()
	if id == "" {
		id = host.NewRunID(p.Name, s.now())
	}
	return s.streamRun(stream, id, req.GetDetach(), func(ctx context.Context) (*host.RunHandle, error) {
		return s.h.StartRun(ctx, p, host.RunOptions{ID: id, State: wire.StateOf(req.GetState()), Files: req.GetFiles(),
			Budget: req.GetBudget(), Config: cfgPath})
	})
}

// pipeline finds the pipeline a request names: in the config file it
// names (read by the daemon, run by the daemon's agents), or in the
// daemon's own config.
func (s *Server) pipeline(file, name string) (*config.Pipeline, string, error) {
	cfg := s.h.Config()
	if file != "" {
		var err error
		if fi, serr := os.Stat(file); serr == nil && fi.IsDir() {
			file = strings.TrimRight(file, "/") + "/hearth.hcl"
		}
		if cfg, err = config.Load(file, config.Options{Bundled: s.bundled}); err != nil {
			return nil, "", configError(err)
		}
		if missing := missingGuards(cfg, s.h.Config()); len(missing) > 0 {
			return nil, "", fmt.Errorf("%w: %s declares guards the daemon does not run, or runs otherwise: %s; its run would go unguarded. Start the daemon with --config %s, or put them in the daemon's config and reload it (SIGHUP)",
				wire.ErrConfig, file, strings.Join(missing, ", "), file)
		}
	}
	p, err := cfg.SelectPipeline(name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", wire.ErrConfig, err)
	}
	return p, cfg.Path, nil
}

// missingGuards names the guards of file that daemon does not have as
// they are: a run from the file is guarded by the daemon's guards only.
func missingGuards(file, daemon *config.Config) []string {
	have := make(map[string]guard.Spec, len(daemon.Guards))
	for _, g := range daemon.Guards {
		have[g.Name] = g.Spec
	}
	var out []string
	for _, g := range file.Guards {
		if d, ok := have[g.Name]; !ok || !reflect.DeepEqual(d, g.Spec) {
			out = append(out, g.Name)
		}
	}
	return out
}

// configError keeps a config file's diagnostics, positions included, in
// the message: the client prints them.
func configError(err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return fmt.Errorf("%w:\n%s", wire.ErrConfig, ce.Error())
	}
	return fmt.Errorf("%w: %v", wire.ErrConfig, err)
}

// ResumeRun resumes a run and streams it.
func (s *Server) ResumeRun(req *apipb.ResumeRunRequest, stream apipb.Hearth_ResumeRunServer) error {
	id, err := s.h.ResolveRun(req.GetRun())
	if err != nil {
		return wire.Status(err)
	}
	return s.streamRun(stream, id, req.GetDetach(), func(ctx context.Context) (*host.RunHandle, error) {
		return s.h.ResumeRun(ctx, id, host.ResumeOptions{Budget: req.GetBudget(), Repair: req.GetRepair(), State: wire.StateOf(req.GetState())})
	})
}

// ForkRun forks a run and streams the new one.
func (s *Server) ForkRun(req *apipb.ForkRunRequest, stream apipb.Hearth_ForkRunServer) error {
	from, err := s.h.ResolveRun(req.GetRun())
	if err != nil {
		return wire.Status(err)
	}
	if req.GetAt() == 0 {
		return invalid("fork needs a checkpoint to start from (at); list them with hearth runs show " + from + " --checkpoints")
	}
	d, err := s.h.Run(from)
	if err != nil {
		return wire.Status(err)
	}
	id := req.GetId()
	if id == "" {
		id = host.NewRunID(d.Pipeline, s.now())
	}
	return s.streamRun(stream, id, req.GetDetach(), func(ctx context.Context) (*host.RunHandle, error) {
		return s.h.ForkRun(ctx, from, req.GetAt(), host.ForkOptions{ID: id, State: wire.StateOf(req.GetState()), Budget: req.GetBudget()})
	})
}

// RevisitRun revisits a task of a run and streams the run.
func (s *Server) RevisitRun(req *apipb.RevisitRunRequest, stream apipb.Hearth_RevisitRunServer) error {
	id, err := s.h.ResolveRun(req.GetRun())
	if err != nil {
		return wire.Status(err)
	}
	impact, err := host.ParseImpact(req.GetImpact())
	if err != nil {
		return invalid(err.Error())
	}
	return s.streamRun(stream, id, req.GetDetach(), func(ctx context.Context) (*host.RunHandle, error) {
		return s.h.RevisitRun(ctx, id, req.GetTask(), impact, host.RevisitOptions{Reason: req.GetReason(), Affects: req.GetAffects()})
	})
}

// runStream is the server side of a run's stream.
type runStream interface {
	Send(*apipb.RunUpdate) error
	Context() context.Context
}

// streamRun subscribes to run id's events, starts it with start, and
// streams it: the run as it started, its events, the run as it stopped.
// The run belongs to the daemon: a client that goes away leaves it
// running.
func (s *Server) streamRun(stream runStream, id string, detach bool, start func(context.Context) (*host.RunHandle, error)) error {
	sub := s.h.SubscribeRun(id, 4096)
	defer sub.Close()
	handle, err := start(stream.Context())
	if err != nil {
		return wire.Status(err)
	}
	d, err := s.h.Run(handle.ID)
	if err != nil {
		return wire.Status(err)
	}
	if err := stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Started{Started: wire.RunInfo(d.RunInfo)}}); err != nil || detach {
		return err
	}
	return s.follow(stream, handle, sub)
}

// follow streams a run's events until it stops, then the run as it
// stopped. The handle is done only after the run's last events were
// published, so none is missed.
func (s *Server) follow(stream runStream, handle *host.RunHandle, sub *host.Subscription) error {
	ctx := stream.Context()
	send := func(e host.Event) error {
		return stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Event{Event: wire.Event(e)}})
	}
	for {
		select {
		case e := <-sub.C:
			if err := send(e); err != nil {
				return err
			}
		case <-handle.Done():
			for {
				select {
				case e := <-sub.C:
					if err := send(e); err != nil {
						return err
					}
					continue
				default:
				}
				break
			}
			info, _ := handle.Wait(ctx)
			if d, err := s.h.Run(handle.ID); err == nil {
				info = d.RunInfo
			}
			if n := sub.Dropped(); n > 0 {
				s.logger.Warn("a run's watcher was too slow; events were dropped", "run", handle.ID, "dropped", n)
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
	id, err := s.h.ResolveRun(req.GetRun())
	if err != nil {
		return wire.Status(err)
	}
	sub := s.h.SubscribeRun(id, 4096)
	defer sub.Close()
	d, err := s.h.Run(id)
	if err != nil {
		return wire.Status(err)
	}
	if err := stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Started{Started: wire.RunInfo(d.RunInfo)}}); err != nil {
		return err
	}
	handle := s.h.RunHandle(id)
	if handle == nil {
		// Not running here, or it stopped since it was read: read it
		// again, as it stopped.
		if d, err = s.h.Run(id); err != nil {
			return wire.Status(err)
		}
		return stream.Send(&apipb.RunUpdate{Update: &apipb.RunUpdate_Stopped{Stopped: wire.RunInfo(d.RunInfo)}})
	}
	return s.follow(stream, handle, sub)
}

// PauseRun pauses a run, interrupting its tasks in flight.
func (s *Server) PauseRun(ctx context.Context, req *apipb.RunRef) (*apipb.RunInfo, error) {
	return s.stopRun(ctx, req.GetRun(), s.h.PauseRun)
}

// CancelRun cancels a run for good.
func (s *Server) CancelRun(ctx context.Context, req *apipb.RunRef) (*apipb.RunInfo, error) {
	return s.stopRun(ctx, req.GetRun(), s.h.CancelRun)
}

func (s *Server) stopRun(ctx context.Context, ref string, stop func(context.Context, string) error) (*apipb.RunInfo, error) {
	id, err := s.h.ResolveRun(ref)
	if err != nil {
		return nil, wire.Status(err)
	}
	if err := stop(ctx, id); err != nil {
		return nil, wire.Status(err)
	}
	d, err := s.h.Run(id)
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.RunInfo(d.RunInfo), nil
}

// DeleteRun deletes a stopped run.
func (s *Server) DeleteRun(ctx context.Context, req *apipb.RunRef) (*apipb.DeleteRunReply, error) {
	id, err := s.h.ResolveRun(req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	if err := s.h.DeleteRun(ctx, id); err != nil {
		return nil, wire.Status(err)
	}
	return &apipb.DeleteRunReply{Run: id}, nil
}

// ListRuns lists the runs.
func (s *Server) ListRuns(context.Context, *apipb.ListRunsRequest) (*apipb.RunList, error) {
	runs, err := s.h.Runs()
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
func (s *Server) ShowRun(_ context.Context, req *apipb.ShowRunRequest) (*apipb.RunView, error) {
	d, err := s.h.Run(req.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	v := &apipb.RunView{Detail: wire.RunDetail(d)}
	if req.GetOutputs() {
		outs, err := s.h.RunOutputs(d.ID)
		if err != nil {
			return nil, wire.Status(err)
		}
		for _, o := range outs {
			v.Outputs = append(v.Outputs, wire.TaskOutput(o))
		}
	}
	if req.GetCheckpoints() {
		cps, err := s.h.RunCheckpoints(d.ID)
		if err != nil {
			return nil, wire.Status(err)
		}
		for _, c := range cps {
			v.Checkpoints = append(v.Checkpoints, wire.Checkpoint(c))
		}
	}
	if n := int(req.GetEvents()); n > 0 {
		evs, err := s.h.RunEvents(d.ID, n)
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
func (s *Server) RunEvents(_ context.Context, req *apipb.RunEventsRequest) (*apipb.EventList, error) {
	evs, err := s.h.RunEvents(req.GetRun(), int(req.GetLimit()))
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
	match := eventFilter(req)
	var sub *host.Subscription
	if req.GetRun() != "" {
		sub = s.h.SubscribeRun(req.GetRun(), eventsBuffer)
	} else {
		sub = s.h.Subscribe(eventsBuffer)
	}
	defer sub.Close()
	ctx := stream.Context()
	var dropped uint64
	for {
		select {
		case e := <-sub.C:
			if !match(e) {
				continue
			}
			if err := stream.Send(wire.Event(e)); err != nil {
				return err
			}
		case <-ctx.Done():
			// The client went away: nothing is left behind but this
			// subscription, closed on return.
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

// eventFilter is what an Events request matches. Tool uses come only to
// whoever asks for them by kind: they outnumber everything else.
func eventFilter(req *apipb.EventsRequest) func(host.Event) bool {
	kinds := make(map[host.EventKind]bool, len(req.GetKinds()))
	for _, k := range req.GetKinds() {
		kinds[host.EventKind(k)] = true
	}
	return func(e host.Event) bool {
		if req.GetSession() != "" && e.Session != req.GetSession() {
			return false
		}
		if len(kinds) > 0 {
			return kinds[e.Kind]
		}
		return e.Kind != host.EventToolUsed
	}
}

// Hook takes one hook call of an external session.
func (s *Server) Hook(ctx context.Context, req *apipb.HookRequest) (*apipb.HookReply, error) {
	out, err := s.hook(ctx, req.GetKind(), req.GetAgent(), req.GetPayload())
	if err != nil {
		return nil, wire.Status(err)
	}
	return &apipb.HookReply{Output: out}, nil
}

// hook handles a hook payload of kind for agent; the gRPC and HTTP
// endpoints share it.
func (s *Server) hook(ctx context.Context, kind, agent string, payload []byte) ([]byte, error) {
	if kind != "" && kind != config.ExternalClaudeCode {
		return nil, fmt.Errorf("%w: hearth takes hooks of %s, not %q", wire.ErrBadPayload, config.ExternalClaudeCode, kind)
	}
	p, err := claudecode.Parse(payload)
	if err != nil {
		return nil, err
	}
	return claudecode.Handle(ctx, s.h, agent, p)
}

// invalid is an INVALID_ARGUMENT status.
func invalid(msg string) error { return status.Error(codes.InvalidArgument, msg) }

var _ apipb.HearthServer = (*Server)(nil)
