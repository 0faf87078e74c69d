package api

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/internal/apipb"
	"github.com/hearth-dev/hearth/host/api/internal/peerpb"
	"github.com/hearth-dev/hearth/host/api/internal/wire"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/engine"
)

// The peer service (peer.proto): what the hosts of a cluster call on one
// another, beside the Hearth service on the same listeners. Over TCP the
// listener's mutual TLS (server.tls with client_ca_file) is what
// authenticates a host to another; over the unix socket, the socket's
// owner-only access, for `hearth hosts list` and `hearth runs list`.

// reasonRefused is the ErrorInfo reason of a forward the host did not
// start: the forwarding host places the task elsewhere. reasonInterrupted,
// of a forward whose key the host accepted and whose task it stopped
// before it finished (cluster.ErrInterrupted): placed elsewhere too,
// without this host.
const (
	reasonRefused     = "REFUSED"
	reasonInterrupted = "INTERRUPTED"
)

// Cluster is what the peer service asks of the host it serves. Its
// member and run-listing types are the engine's and the cluster
// package's until they move into the vocabulary.
type Cluster interface {
	RunForwarded(ctx context.Context, from, key, session string, t hearth.Task) (engine.Result, error)
	ForwardedStatus(key string) (cluster.TaskStatus, engine.Result)
	Members() (self string, members []engine.Member, ok bool)
	ClusterRuns(ctx context.Context) (self string, runs []cluster.HostRuns[hearth.RunInfo], err error)
}

// registerPeer serves the peer service on srv.
func (s *Server) registerPeer(srv *grpc.Server) {
	peerpb.RegisterPeerServer(srv, peerServer{s: s})
}

type peerServer struct {
	peerpb.UnimplementedPeerServer
	s *Server
}

// Forward runs a task another host placed here.
func (p peerServer) Forward(ctx context.Context, req *peerpb.ForwardRequest) (*peerpb.ForwardReply, error) {
	tr := req.GetTask()
	t := hearth.Task{Agent: tr.GetAgent(), ID: tr.GetId(), Name: tr.GetName(), Prompt: tr.GetPrompt(),
		Hints: wire.HintsOf(tr.GetHints()), Metadata: tr.GetMetadata()}
	r, err := p.s.cluster.RunForwarded(ctx, req.GetFrom(), req.GetKey(), req.GetSession(), t)
	if err != nil {
		reason := ""
		switch {
		case errors.Is(err, cluster.ErrRefused):
			reason = reasonRefused
		case errors.Is(err, cluster.ErrInterrupted):
			reason = reasonInterrupted
		default:
			return nil, wire.Status(err)
		}
		st := status.New(codes.FailedPrecondition, err.Error())
		if d, derr := st.WithDetails(&apipb.ErrorInfo{Reason: reason}); derr == nil {
			st = d
		}
		return nil, st.Err()
	}
	return replyOf(r), nil
}

// TaskStatus says what this host knows of an idempotency key.
func (p peerServer) TaskStatus(_ context.Context, req *peerpb.TaskStatusRequest) (*peerpb.TaskStatusReply, error) {
	st, r := p.s.cluster.ForwardedStatus(req.GetKey())
	out := &peerpb.TaskStatusReply{}
	switch st {
	case cluster.TaskRunning:
		out.State = peerpb.TaskStatusReply_RUNNING
	case cluster.TaskDone:
		out.State, out.Result = peerpb.TaskStatusReply_DONE, replyOf(r)
	case cluster.TaskInterrupted:
		out.State, out.Result = peerpb.TaskStatusReply_INTERRUPTED, replyOf(r)
	}
	return out, nil
}

// ListOwnRuns lists this host's runs.
func (p peerServer) ListOwnRuns(ctx context.Context, req *apipb.ListRunsRequest) (*apipb.RunList, error) {
	return p.s.ListRuns(ctx, req)
}

// ListHosts lists the cluster's members.
func (p peerServer) ListHosts(context.Context, *peerpb.ListHostsRequest) (*peerpb.HostList, error) {
	self, members, ok := p.s.cluster.Members()
	out := &peerpb.HostList{Self: self, Clustered: ok}
	for _, m := range members {
		hm := &peerpb.Host{Id: m.ID, Addr: m.Addr, Hostname: m.Hostname, StartedUnixNano: unixNano(m.Started),
			ConfigHash: m.ConfigHash, Version: m.Version, Sessions: int32(m.Sessions), Self: m.Self}
		for _, a := range m.Agents {
			hm.Agents = append(hm.Agents, &peerpb.AgentLoad{Name: a.Name, External: a.External, Live: int32(a.Live),
				Dormant: int32(a.Dormant), Load: int32(a.Load), Capacity: int32(a.Capacity), MaxSessions: int32(a.MaxSessions)})
		}
		out.Hosts = append(out.Hosts, hm)
	}
	return out, nil
}

// ListClusterRuns lists every member's runs with their owners.
func (p peerServer) ListClusterRuns(ctx context.Context, _ *apipb.ListRunsRequest) (*peerpb.ClusterRunList, error) {
	self, hosts, err := p.s.cluster.ClusterRuns(ctx)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	out := &peerpb.ClusterRunList{Self: self}
	for _, hr := range hosts {
		m := &peerpb.HostRuns{Host: hr.Host, State: hr.State.String(), ListedUnixNano: unixNano(hr.Listed)}
		if hr.Err != nil {
			m.Error = hr.Err.Error()
		}
		for _, r := range hr.Runs {
			m.Runs = append(m.Runs, wire.RunInfo(r))
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out, nil
}

// replyOf is a task's result on the wire: its outcome, or its error as
// the Hearth service returns it.
func replyOf(r engine.Result) *peerpb.ForwardReply {
	if r.Err == nil {
		return &peerpb.ForwardReply{Outcome: wire.Outcome(r.Outcome)}
	}
	st := status.Convert(wire.Status(r.Err))
	out := &peerpb.ForwardReply{ErrorCode: int32(st.Code()), ErrorMessage: st.Message()}
	if out.ErrorCode == 0 {
		out.ErrorCode = int32(codes.Unknown)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*apipb.ErrorInfo); ok {
			out.ErrorReason = info.GetReason()
		}
	}
	return out
}

// resultOf reads a task's result off the wire.
func resultOf(ctx context.Context, m *peerpb.ForwardReply) engine.Result {
	if m.GetErrorCode() == 0 {
		return engine.Result{Outcome: wire.OutcomeOf(m.GetOutcome())}
	}
	st := status.New(codes.Code(m.GetErrorCode()), m.GetErrorMessage())
	if m.GetErrorReason() != "" {
		if d, err := st.WithDetails(&apipb.ErrorInfo{Reason: m.GetErrorReason()}); err == nil {
			st = d
		}
	}
	return engine.Result{Err: wire.ErrorOf(ctx, st.Err())}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
