package peer

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/internal/tracecontext"
)

// The peer service (peer.proto): what the hosts of a cluster call on one
// another, beside the Hearth service on the daemon's listeners (host/api
// registers it, Options.Register). Over TCP the listener's mutual TLS
// (server.tls with client_ca_file) is what authenticates a host to
// another; over the unix socket, the socket's owner-only access, for
// `hearth hosts list` and `hearth runs list`.

// Handler is what the peer service answers with: host/cluster/member's
// Member, this host's membership of its cluster.
type Handler interface {
	// RunForwarded runs a task another host placed here, under its
	// idempotency key; an error wrapping cluster.ErrRefused means the
	// task did not start here, one wrapping cluster.ErrInterrupted that
	// this host accepted the key and stopped its task before it
	// finished.
	RunForwarded(ctx context.Context, from, key, session string, t hearth.Task) (cluster.Result, error)
	// ForwardedStatus says what this host knows of a key.
	ForwardedStatus(key string) (cluster.TaskStatus, cluster.Result)
	// OwnRuns lists the runs this host owns (its store's).
	OwnRuns(ctx context.Context) ([]hearth.RunInfo, error)
	// OwnRun reads one run this host owns, by its ID or a prefix; an
	// error wrapping hearth.ErrUnknownRun when it has none.
	OwnRun(ctx context.Context, id string) (hearth.RunDetail, error)
	// Members and ClusterRuns list the cluster as this host sees it.
	hearth.ClusterReader
	// DrainHost marks member host drained for maintenance, or takes the
	// mark away, and returns the member as it is listed then.
	DrainHost(ctx context.Context, host string, drain bool) (hearth.Member, error)
}

// reasonRefused is the ErrorInfo reason of a forward the host did not
// start: the forwarding host places the task elsewhere. reasonInterrupted,
// of a forward whose key the host accepted and whose task it stopped
// before it finished (cluster.ErrInterrupted): placed elsewhere too,
// without this host.
const (
	reasonRefused     = "REFUSED"
	reasonInterrupted = "INTERRUPTED"
)

// errNotClustered is ListClusterRuns' answer on a host without a cluster
// block, a FAILED_PRECONDITION the daemon's client reads as "not in a
// cluster".
const errNotClustered = "this host is not in a cluster: add a cluster block to its config"

// Register serves the peer service on srv, answering with h.
func Register(srv grpc.ServiceRegistrar, h Handler) {
	peerpb.RegisterPeerServer(srv, server{h: h})
}

type server struct {
	peerpb.UnimplementedPeerServer
	h Handler
}

// Forward runs a task another host placed here.
func (p server) Forward(ctx context.Context, req *peerpb.ForwardRequest) (*peerpb.ForwardReply, error) {
	tr := req.GetTask()
	t := hearth.Task{Agent: tr.GetAgent(), ID: tr.GetId(), Name: tr.GetName(), Prompt: tr.GetPrompt(),
		Hints: wire.HintsOf(tr.GetHints()), Metadata: tr.GetMetadata()}
	r, err := p.h.RunForwarded(tracecontext.Incoming(ctx), req.GetFrom(), req.GetKey(), req.GetSession(), t)
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
func (p server) TaskStatus(_ context.Context, req *peerpb.TaskStatusRequest) (*peerpb.TaskStatusReply, error) {
	st, r := p.h.ForwardedStatus(req.GetKey())
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
func (p server) ListOwnRuns(ctx context.Context, _ *apipb.ListRunsRequest) (*apipb.RunList, error) {
	runs, err := p.h.OwnRuns(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	out := &apipb.RunList{}
	for _, r := range runs {
		out.Runs = append(out.Runs, wire.RunInfo(r))
	}
	return out, nil
}

// ShowOwnRun reads one of this host's runs.
func (p server) ShowOwnRun(ctx context.Context, r *apipb.RunRef) (*apipb.RunDetail, error) {
	d, err := p.h.OwnRun(ctx, r.GetRun())
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.RunDetail(d), nil
}

// ListHosts lists the cluster's members.
func (p server) ListHosts(ctx context.Context, _ *peerpb.ListHostsRequest) (*peerpb.HostList, error) {
	ms, err := p.h.Members(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Members(ms), nil
}

// DrainHost marks a member drained, or not.
func (p server) DrainHost(ctx context.Context, r *peerpb.DrainHostRequest) (*peerpb.Host, error) {
	m, err := p.h.DrainHost(ctx, r.GetHost(), r.GetDrain())
	if err != nil {
		return nil, wire.Status(err)
	}
	return wire.Members(hearth.Members{Hosts: []hearth.Member{m}}).Hosts[0], nil
}

// ListClusterRuns lists every member's runs with their owners.
func (p server) ListClusterRuns(ctx context.Context, _ *apipb.ListRunsRequest) (*peerpb.ClusterRunList, error) {
	cr, err := p.h.ClusterRuns(ctx)
	if err != nil {
		return nil, wire.Status(err)
	}
	if !cr.Clustered {
		return nil, status.Error(codes.FailedPrecondition, errNotClustered)
	}
	return wire.ClusterRuns(cr), nil
}

// replyOf is a task's result on the wire: its outcome, or its error as
// the Hearth service returns it.
func replyOf(r cluster.Result) *peerpb.ForwardReply {
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
func resultOf(ctx context.Context, m *peerpb.ForwardReply) cluster.Result {
	if m.GetErrorCode() == 0 {
		return cluster.Result{Outcome: wire.OutcomeOf(m.GetOutcome())}
	}
	st := status.New(codes.Code(m.GetErrorCode()), m.GetErrorMessage())
	if m.GetErrorReason() != "" {
		if d, err := st.WithDetails(&apipb.ErrorInfo{Reason: m.GetErrorReason()}); err == nil {
			st = d
		}
	}
	return cluster.Result{Err: wire.ErrorOf(ctx, st.Err())}
}
