package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/internal/tracecontext"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// agentServer serves an author's Agent in the plugin process.
type agentServer struct {
	agentpb.UnimplementedAgentServer
	impl   sdk.Agent
	broker *goplugin.GRPCBroker
	logger hclog.Logger
	// tracing is the process's tracing when Serve serves the agent; nil
	// in a test's process.
	tracing *pluginTracing

	mu      sync.RWMutex
	conn    *grpc.ClientConn
	host    agentpb.HostClient
	session string
}

func newAgentServer(impl sdk.Agent, broker *goplugin.GRPCBroker, logger hclog.Logger) *agentServer {
	return &agentServer{impl: impl, broker: broker, logger: logger}
}

// recoverPanic turns a panic in the author's code into an error the host
// can act on (it retires the session, whose state may be broken), instead
// of a plugin crash that loses every task running on it.
func (s *agentServer) recoverPanic(method string, err *error) {
	if r := recover(); r != nil {
		s.logger.Error("agent panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "%s%s: %v", panicPrefix, method, r)
	}
}

func (s *agentServer) Describe(ctx context.Context, _ *agentpb.DescribeRequest) (_ *agentpb.Info, err error) {
	defer s.recoverPanic("Describe", &err)
	info, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	_, exports := s.impl.(sdk.StateExporter)
	return infoToWire(info, exports), nil
}

func (s *agentServer) Attach(_ context.Context, m *agentpb.AttachRequest) (*agentpb.AttachResponse, error) {
	conn, err := s.broker.Dial(m.GetHostBrokerId())
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dial host callbacks (broker id %d): %v", m.GetHostBrokerId(), err)
	}
	s.mu.Lock()
	// A host that retries Attach (its first try timed out) replaces the
	// connection; the old one is closed rather than leaked.
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn = conn
	s.host = agentpb.NewHostClient(conn)
	s.session = m.GetSessionId()
	s.mu.Unlock()
	if svc := m.GetTelemetryService(); svc != "" && s.tracing != nil {
		s.tracing.attach(conn, svc, m.GetAgent(), m.GetSessionId())
	}
	return &agentpb.AttachResponse{}, nil
}

func (s *agentServer) Run(ctx context.Context, m *agentpb.RunRequest) (*agentpb.RunResponse, error) {
	// The task's span context, from the host: the agent's spans join
	// the task's trace.
	ctx = tracecontext.Incoming(ctx)
	t := taskFromWire(m.GetTask())
	s.mu.RLock()
	hc, session := s.host, s.session
	s.mu.RUnlock()
	if t.Session == "" {
		t.Session = session
	}
	tcb := &taskCallbacks{
		rpc:    hc,
		taskID: t.ID,
		logger: s.logger.With("session", t.Session, "task", t.ID),
	}
	// Only the task of a run is given the run's methods: an agent asks
	// whether it has them with a type assertion.
	var cb sdk.Callbacks = tcb
	if t.Run != "" {
		cb = &runTaskCallbacks{tcb}
	}
	res, runErr := s.run(ctx, t, cb)
	if s.tracing != nil {
		// The task's spans reach the host before its result does.
		s.tracing.flush(ctx)
	}
	// The result goes back only after every tool-use report is durable on
	// the host, whether or not the task succeeded: the reports describe
	// what the session touched either way.
	acked, closeErr := tcb.closeToolUses()
	if runErr != nil {
		return nil, toStatus(runErr)
	}
	if closeErr != nil {
		return nil, status.Errorf(codes.Unavailable, "task %s: tool-use reports were not acknowledged: %v", t.ID, closeErr)
	}
	if err := tcb.refusedReport(); err != nil {
		// The agent went on after a report was refused: the session's
		// context is missing what that tool use touched. The same code
		// does the same again, so the failure is permanent.
		return nil, status.Errorf(codes.FailedPrecondition, "task %s: a tool-use report was refused: %v", t.ID, err)
	}
	return resultToWire(res, acked), nil
}

func (s *agentServer) run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (_ sdk.Result, err error) {
	defer s.recoverPanic("Run", &err)
	return s.impl.Run(ctx, t, cb)
}

func (s *agentServer) ExportState(ctx context.Context, _ *agentpb.ExportStateRequest) (_ *agentpb.SessionState, err error) {
	defer s.recoverPanic("ExportState", &err)
	se, ok := s.impl.(sdk.StateExporter)
	if !ok {
		return nil, toStatus(sdk.ErrStateNotSupported)
	}
	b, err := se.ExportState(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.SessionState{Data: b}, nil
}

func (s *agentServer) ImportState(ctx context.Context, m *agentpb.SessionState) (_ *agentpb.ImportStateResponse, err error) {
	defer s.recoverPanic("ImportState", &err)
	se, ok := s.impl.(sdk.StateExporter)
	if !ok {
		return nil, toStatus(sdk.ErrStateNotSupported)
	}
	if err := se.ImportState(ctx, m.GetData()); err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.ImportStateResponse{}, nil
}

// taskCallbacks are the Callbacks an agent sees during one task in a plugin
// process.
// Tool-use reports share one client stream, opened on the first report
// (most of a task's callbacks are reports, and a stream carries them far
// faster than a unary call each) and closed when the task ends.
type taskCallbacks struct {
	rpc    agentpb.HostClient
	taskID string
	logger hclog.Logger

	mu     sync.Mutex
	stream agentpb.Host_ToolUsesClient
	cancel context.CancelFunc
	err    error // sticky: the first failure of the stream
	sent   uint64
	// ended is set once the task has returned: a report after that (from
	// an agent goroutine still running) has no stream to go on.
	ended bool
	// refused is the first report the SDK refused to send (no outcome, an
	// unknown kind): the task fails with it even if the agent ignored the
	// error ReportToolUse returned.
	refused error
}

func (cb *taskCallbacks) ReportToolUse(ctx context.Context, u sdk.ToolUse) error {
	if cb.rpc == nil {
		return sdk.ErrNotAttached
	}
	if err := checkToolUse(u); err != nil {
		err = fmt.Errorf("task %s: %w", cb.taskID, err)
		cb.mu.Lock()
		if cb.refused == nil {
			cb.refused = err
		}
		cb.mu.Unlock()
		return err
	}
	if u.At.IsZero() {
		u.At = time.Now()
	}
	m := toolUseToWire(cb.taskID, u)
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.err != nil {
		return cb.err
	}
	if cb.ended {
		return fmt.Errorf("task %s has returned; a tool use reported after it is not recorded", cb.taskID)
	}
	if cb.stream == nil {
		// The stream outlives the ctx of any single report; it is bound
		// to the task and ended by closeToolUses.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		st, err := cb.rpc.ToolUses(sctx)
		if err != nil {
			cancel()
			cb.err = fromStatus(ctx, "open tool-use stream", err)
			return cb.err
		}
		cb.stream, cb.cancel = st, cancel
	}
	if err := cb.stream.Send(m); err != nil {
		// Send reports io.EOF when the host ended the stream; the reason
		// comes from CloseAndRecv.
		_, rerr := cb.stream.CloseAndRecv()
		if rerr == nil {
			rerr = err
		}
		cb.err = fromStatus(ctx, "report tool use", rerr)
		return cb.err
	}
	cb.sent++
	return nil
}

// refusedReport returns the first report the SDK refused, or nil.
func (cb *taskCallbacks) refusedReport() error {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.refused
}

// closeToolUses ends the task's stream and waits for the host's
// acknowledgement, which comes once all reports are durable.
func (cb *taskCallbacks) closeToolUses() (uint64, error) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.ended = true
	if cb.stream == nil {
		return 0, cb.err
	}
	defer cb.cancel()
	st := cb.stream
	cb.stream = nil
	if cb.err != nil {
		return 0, cb.err
	}
	ack, err := st.CloseAndRecv()
	if err != nil {
		cb.err = fromStatus(context.Background(), "close tool-use stream", err)
		return 0, cb.err
	}
	if ack.GetCount() != cb.sent {
		return ack.GetCount(), fmt.Errorf("host acknowledged %d tool uses, %d were sent", ack.GetCount(), cb.sent)
	}
	return ack.GetCount(), nil
}

func (cb *taskCallbacks) CheckToolUse(ctx context.Context, c sdk.ToolCall) (sdk.Verdict, error) {
	if cb.rpc == nil {
		return sdk.Verdict{}, sdk.ErrNotAttached
	}
	m, err := toolCallToWire(cb.taskID, c)
	if err != nil {
		return sdk.Verdict{}, err
	}
	v, err := cb.rpc.CheckToolUse(tracecontext.Outgoing(ctx), m)
	if err != nil {
		return sdk.Verdict{}, fromStatus(ctx, "check tool use", err)
	}
	return sdk.Verdict{Allow: v.GetAllow(), Reason: v.GetReason(), Guard: v.GetGuard()}, nil
}

func (cb *taskCallbacks) ReportProgress(ctx context.Context, p sdk.Progress) error {
	if cb.rpc == nil {
		return sdk.ErrNotAttached
	}
	_, err := cb.rpc.Progress(tracecontext.Outgoing(ctx), &agentpb.ProgressReport{
		TaskId: cb.taskID, Fraction: p.Fraction, Message: p.Message, Cost: p.Cost,
	})
	return fromStatus(ctx, "report progress", err)
}

func (cb *taskCallbacks) Logger() hclog.Logger { return cb.logger }

// runTaskCallbacks are the Callbacks of a task that belongs to a run:
// RunCallbacks.
type runTaskCallbacks struct{ *taskCallbacks }

func (cb *runTaskCallbacks) State(ctx context.Context, section string) (json.RawMessage, error) {
	if cb.rpc == nil {
		return nil, sdk.ErrNotAttached
	}
	v, err := cb.rpc.GetState(tracecontext.Outgoing(ctx), &agentpb.StateRequest{TaskId: cb.taskID, Section: section})
	if err != nil {
		return nil, fromStatus(ctx, "read run state", err)
	}
	if len(v.GetValueJson()) == 0 {
		return nil, nil
	}
	return v.GetValueJson(), nil
}

func (cb *runTaskCallbacks) SetState(ctx context.Context, section string, value any) error {
	if cb.rpc == nil {
		return sdk.ErrNotAttached
	}
	b, err := encodeState(section, value)
	if err != nil {
		return err
	}
	_, err = cb.rpc.SetState(tracecontext.Outgoing(ctx), &agentpb.StateValue{TaskId: cb.taskID, Section: section, ValueJson: b})
	return fromStatus(ctx, "write run state", err)
}

// encodeState encodes a state section's new value; nil deletes it.
func encodeState(section string, value any) ([]byte, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, fmt.Errorf("state section %q: value is not valid JSON", section)
		}
		return v, nil
	}
	b, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("state section %q: value is not JSON-encodable: %w", section, err)
	}
	return b, nil
}

func (cb *runTaskCallbacks) Checkpoint(ctx context.Context, label string) (uint64, error) {
	if cb.rpc == nil {
		return 0, sdk.ErrNotAttached
	}
	ack, err := cb.rpc.Checkpoint(tracecontext.Outgoing(ctx), &agentpb.CheckpointRequest{TaskId: cb.taskID, Label: label})
	if err != nil {
		return 0, fromStatus(ctx, "checkpoint", err)
	}
	return ack.GetCheckpoint(), nil
}

func (cb *runTaskCallbacks) Files(ctx context.Context) ([]sdk.File, error) {
	if cb.rpc == nil {
		return nil, sdk.ErrNotAttached
	}
	m, err := cb.rpc.Files(tracecontext.Outgoing(ctx), &agentpb.FilesRequest{TaskId: cb.taskID})
	if err != nil {
		return nil, fromStatus(ctx, "list run files", err)
	}
	return filesFromWire(m), nil
}

func (cb *runTaskCallbacks) DoneChunks(ctx context.Context, file string) ([]int, error) {
	if cb.rpc == nil {
		return nil, sdk.ErrNotAttached
	}
	m, err := cb.rpc.Chunks(tracecontext.Outgoing(ctx), &agentpb.ChunksRequest{TaskId: cb.taskID, File: file})
	if err != nil {
		return nil, fromStatus(ctx, "read chunk progress", err)
	}
	out := make([]int, len(m.GetDone()))
	for i, c := range m.GetDone() {
		out[i] = int(c)
	}
	return out, nil
}

func (cb *runTaskCallbacks) MarkChunk(ctx context.Context, file string, chunk int) error {
	if cb.rpc == nil {
		return sdk.ErrNotAttached
	}
	if chunk < 0 || chunk > math.MaxInt32 {
		return fmt.Errorf("chunk %d of %s: chunks are numbered from 0 to %d", chunk, file, math.MaxInt32)
	}
	_, err := cb.rpc.MarkChunk(tracecontext.Outgoing(ctx), &agentpb.ChunkMark{TaskId: cb.taskID, File: file, Chunk: int32(chunk)})
	return fromStatus(ctx, "mark chunk done", err)
}

var (
	_ agentpb.AgentServer = (*agentServer)(nil)
	_ sdk.Callbacks       = (*taskCallbacks)(nil)
	_ sdk.RunCallbacks    = (*runTaskCallbacks)(nil)
)
