package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	goplugin "github.com/hashicorp/go-plugin"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/internal/tracecontext"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// agentClient is the host's view of a plugin: an Agent whose calls travel
// to the plugin process. The host callbacks of all its tasks are served on
// one broker connection, opened before the first Run, and routed to each
// task's Callbacks by task ID: a connection per task would add a dial to every
// task's latency.
type agentClient struct {
	rpc    agentpb.AgentClient
	broker *goplugin.GRPCBroker
	// protocol is the version negotiated at the handshake: 1 for a
	// plugin built before version 2, which is spoken as it expects.
	protocol int
	// host is the host's options: the relay of the plugin's spans.
	host HostOptions
	// exports is what the plugin's last Describe said about its state.
	exports atomic.Bool

	attachMu sync.Mutex
	attached bool
	// brokerID is the broker connection serving callbacks, once started;
	// an Attach that failed is retried on the same one.
	brokerID uint32

	tasksMu sync.RWMutex
	tasks   map[string]sdk.Callbacks
}

func newAgentClient(rpc agentpb.AgentClient, broker *goplugin.GRPCBroker, protocol int) *agentClient {
	return &agentClient{rpc: rpc, broker: broker, protocol: protocol, tasks: make(map[string]sdk.Callbacks)}
}

func (c *agentClient) Describe(ctx context.Context) (sdk.Info, error) {
	m, err := c.rpc.Describe(ctx, &agentpb.DescribeRequest{})
	if err != nil {
		return sdk.Info{}, fromStatus(ctx, "describe", err)
	}
	c.exports.Store(m.GetExportsState())
	return infoFromWire(m), nil
}

// ExportsState implements Remote.
func (c *agentClient) ExportsState() bool { return c.exports.Load() }

// Protocol implements Remote.
func (c *agentClient) Protocol() int { return c.protocol }

// attach starts serving host callbacks on a broker connection and tells
// the plugin where to find them. It runs once per plugin.
func (c *agentClient) attach(ctx context.Context, session string) error {
	c.attachMu.Lock()
	defer c.attachMu.Unlock()
	if c.attached {
		return nil
	}
	if c.brokerID == 0 {
		c.brokerID = c.broker.NextId()
		// AcceptAndServe returns when the broker closes, that is when
		// the plugin client is closed or killed. Its listener accepts
		// any number of connections, so a retried Attach dials it again.
		go c.broker.AcceptAndServe(c.brokerID, func(opts []grpc.ServerOption) *grpc.Server {
			s := grpc.NewServer(opts...)
			agentpb.RegisterHostServer(s, &callbacksServer{c: c})
			if c.host.Traces != nil {
				coltracepb.RegisterTraceServiceServer(s, c.host.Traces)
			}
			return s
		})
	}
	req := &agentpb.AttachRequest{HostBrokerId: c.brokerID, SessionId: session, Agent: c.host.Agent}
	if c.host.Traces != nil {
		req.TelemetryService = c.host.TraceService
	}
	if _, err := c.rpc.Attach(ctx, req); err != nil {
		// go-plugin hands the plugin the callbacks' address once, and
		// forgets it when the plugin has not dialed within 5 seconds (a
		// loaded machine): a retry under the same ID would wait for an
		// address that never comes. The next attempt gets a new ID; the
		// old listener goes with the broker.
		c.brokerID = 0
		return fromStatus(ctx, "attach host callbacks", err)
	}
	c.attached = true
	return nil
}

func (c *agentClient) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if cb == nil {
		return sdk.Result{}, errors.New("run: nil Callbacks; pass the callbacks the task reports to")
	}
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	if t.Attempt == 0 {
		t.Attempt = 1
	}
	if err := c.attach(ctx, t.Session); err != nil {
		return sdk.Result{}, err
	}
	c.tasksMu.Lock()
	if _, dup := c.tasks[t.ID]; dup {
		c.tasksMu.Unlock()
		return sdk.Result{}, fmt.Errorf("run: task %s is already running on this session; give each task its own ID", t.ID)
	}
	c.tasks[t.ID] = cb
	c.tasksMu.Unlock()
	defer func() {
		c.tasksMu.Lock()
		delete(c.tasks, t.ID)
		c.tasksMu.Unlock()
	}()

	wt := taskToWire(t)
	if c.protocol == 1 {
		wt.Prompt = promptV1(t)
	}
	m, err := c.rpc.Run(tracecontext.Outgoing(ctx), &agentpb.RunRequest{Task: wt})
	if err != nil {
		return sdk.Result{}, fromStatus(ctx, "run", err)
	}
	res := resultFromWire(m)
	if c.protocol == 1 {
		// A version-1 plugin keeps the artifact until asked for it.
		a, err := c.rpc.Summarize(ctx, &agentpb.SummarizeRequest{TaskId: t.ID})
		if err != nil {
			return sdk.Result{}, fromStatus(ctx, "summarize (agent protocol version 1)", err)
		}
		res.Artifact = artifactFromWire(a)
	}
	return res, nil
}

// promptV1 is the prompt a version-1 plugin expects: the upstream context
// before the task's own prompt and the feedback after it, as version-1
// hosts wrote them, since such a plugin has no other way to see them.
func promptV1(t sdk.Task) string {
	p := t.Prompt
	if block := strings.TrimRight(t.Context, "\n"); strings.TrimSpace(block) != "" {
		if p == "" {
			p = block + "\n"
		} else {
			p = block + "\n\n" + p
		}
	}
	if t.Feedback != "" {
		p += "\n\n# Feedback\n" + t.Feedback + "\n"
	}
	return p
}

func (c *agentClient) ExportState(ctx context.Context) ([]byte, error) {
	m, err := c.rpc.ExportState(ctx, &agentpb.ExportStateRequest{})
	if err != nil {
		return nil, stateError(fromStatus(ctx, "export state", err))
	}
	return m.GetData(), nil
}

func (c *agentClient) ImportState(ctx context.Context, state []byte) error {
	_, err := c.rpc.ImportState(ctx, &agentpb.SessionState{Data: state})
	return stateError(fromStatus(ctx, "import state", err))
}

func stateError(err error) error {
	if errors.Is(err, errors.ErrUnsupported) {
		return sdk.ErrStateNotSupported
	}
	return err
}

func (c *agentClient) callbacks(taskID string) (sdk.Callbacks, error) {
	c.tasksMu.RLock()
	cb := c.tasks[taskID]
	c.tasksMu.RUnlock()
	if cb == nil {
		return nil, status.Errorf(codes.NotFound, "no task %q is running on this session", taskID)
	}
	return cb, nil
}

// runCallbacks returns the RunCallbacks of a task that belongs to a run. A task
// outside one gets FAILED_PRECONDITION, which the plugin reads as a
// permanent failure.
func (c *agentClient) runCallbacks(taskID string) (sdk.RunCallbacks, error) {
	cb, err := c.callbacks(taskID)
	if err != nil {
		return nil, err
	}
	rcb, ok := cb.(sdk.RunCallbacks)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "task %s is not part of a run: only a run's tasks reach its state, checkpoints, files and chunks", taskID)
	}
	return rcb, nil
}

// callbacksServer serves the wire service Host (the agent's callbacks) in
// the host process and hands each call to the Callbacks of the task it
// names.
type callbacksServer struct {
	agentpb.UnimplementedHostServer
	c *agentClient
}

func (s *callbacksServer) ToolUses(stream agentpb.Host_ToolUsesServer) error {
	ctx := stream.Context()
	// Receiving and decoding run here; the Callbacks take the reports in a
	// worker, in order. The two overlap: measured, one goroutine doing
	// both held a flood of reports to about half of what the connection
	// carries.
	var (
		cb   sdk.Callbacks
		uses chan sdk.ToolUse
		done chan error
		n    uint64
	)
	stop := func() error {
		if uses == nil {
			return nil
		}
		close(uses)
		return <-done
	}
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = stop()
			return err
		}
		u := toolUseFromWire(m)
		if u.Outcome == sdk.OutcomeUnset {
			if s.c.protocol != 1 {
				_ = stop()
				return status.Errorf(codes.InvalidArgument, "tool use %q of task %s has no outcome (OUTCOME_UNSPECIFIED); agent protocol version 2 requires OK, ERROR or DENIED", u.Tool, m.GetTaskId())
			}
			// Version 1 meant OK by it.
			u.Outcome = sdk.OutcomeOK
		}
		if cb == nil {
			if cb, err = s.c.callbacks(m.GetTaskId()); err != nil {
				return err
			}
			uses, done = make(chan sdk.ToolUse, 512), make(chan error, 1)
			go reportAll(ctx, cb, uses, done)
		}
		select {
		case uses <- u:
			n++
		case err := <-done:
			// The worker failed; it drains until uses is closed.
			close(uses)
			return toStatus(err)
		}
	}
	if err := stop(); err != nil {
		return toStatus(err)
	}
	if sy, ok := cb.(sdk.Syncer); ok {
		if err := sy.Sync(ctx); err != nil {
			return toStatus(err)
		}
	}
	return stream.SendAndClose(&agentpb.ToolUsesAck{Count: n})
}

// reportAll hands reports to cb in order, then sends nil on done, or the
// first error, after which it only drains uses until it is closed.
func reportAll(ctx context.Context, cb sdk.Callbacks, uses <-chan sdk.ToolUse, done chan<- error) {
	for u := range uses {
		if err := cb.ReportToolUse(ctx, u); err != nil {
			done <- err
			for range uses {
			}
			return
		}
	}
	done <- nil
}

func (s *callbacksServer) CheckToolUse(ctx context.Context, m *agentpb.ToolCall) (*agentpb.Verdict, error) {
	ctx = tracecontext.Incoming(ctx)
	cb, err := s.c.callbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	call, err := toolCallFromWire(m)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	v, err := cb.CheckToolUse(ctx, call)
	if err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.Verdict{Allow: v.Allow, Reason: v.Reason, Guard: v.Guard}, nil
}

func (s *callbacksServer) Progress(ctx context.Context, m *agentpb.ProgressReport) (*agentpb.ProgressAck, error) {
	ctx = tracecontext.Incoming(ctx)
	cb, err := s.c.callbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	p := sdk.Progress{Fraction: m.GetFraction(), Message: m.GetMessage(), Cost: m.GetCost()}
	if err := cb.ReportProgress(ctx, p); err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.ProgressAck{}, nil
}

func (s *callbacksServer) GetState(ctx context.Context, m *agentpb.StateRequest) (*agentpb.StateValue, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	v, err := rcb.State(ctx, m.GetSection())
	if err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.StateValue{TaskId: m.GetTaskId(), Section: m.GetSection(), ValueJson: v}, nil
}

func (s *callbacksServer) SetState(ctx context.Context, m *agentpb.StateValue) (*agentpb.StateAck, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	var v any
	if b := m.GetValueJson(); len(b) > 0 {
		if !json.Valid(b) {
			return nil, status.Errorf(codes.InvalidArgument, "state section %q: value is not valid JSON", m.GetSection())
		}
		v = json.RawMessage(b)
	}
	if err := rcb.SetState(ctx, m.GetSection(), v); err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.StateAck{}, nil
}

func (s *callbacksServer) Checkpoint(ctx context.Context, m *agentpb.CheckpointRequest) (*agentpb.CheckpointAck, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	n, err := rcb.Checkpoint(ctx, m.GetLabel())
	if err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.CheckpointAck{Checkpoint: n}, nil
}

func (s *callbacksServer) Files(ctx context.Context, m *agentpb.FilesRequest) (*agentpb.FileList, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	fs, err := rcb.Files(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return filesToWire(fs), nil
}

func (s *callbacksServer) Chunks(ctx context.Context, m *agentpb.ChunksRequest) (*agentpb.ChunkList, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	done, err := rcb.DoneChunks(ctx, m.GetFile())
	if err != nil {
		return nil, toStatus(err)
	}
	out := &agentpb.ChunkList{Done: make([]int32, len(done))}
	for i, c := range done {
		out.Done[i] = int32(c)
	}
	return out, nil
}

func (s *callbacksServer) MarkChunk(ctx context.Context, m *agentpb.ChunkMark) (*agentpb.ChunkAck, error) {
	ctx = tracecontext.Incoming(ctx)
	rcb, err := s.c.runCallbacks(m.GetTaskId())
	if err != nil {
		return nil, err
	}
	if m.GetChunk() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "chunk %d of %s: chunks are numbered from 0", m.GetChunk(), m.GetFile())
	}
	if err := rcb.MarkChunk(ctx, m.GetFile(), int(m.GetChunk())); err != nil {
		return nil, toStatus(err)
	}
	return &agentpb.ChunkAck{}, nil
}

var _ Remote = (*agentClient)(nil)
