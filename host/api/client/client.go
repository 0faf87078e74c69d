// Package client is the Go client of hearth's daemon (`hearth serve`),
// for orchestrators and for the CLI. It implements the vocabulary's
// services (package hearth: Service, EventSource, StatusReader, Admin)
// as the engine in process does, so code written against them runs the
// same on either: a Decision, an Outcome, a RunInfo read through the
// daemon are the ones the engine returns in process, and its errors wrap
// the same sentinels (errors.Is(err, hearth.ErrUnknownRun) works). No
// type of gRPC's appears in its API.
//
//	c, err := client.Dial(ctx, client.Options{DataDir: "./.hearth"})
//	...
//	defer c.Close()
//	out, err := c.Submit(ctx, hearth.Task{Agent: "gotour", Prompt: "summary net/http",
//		Hints: sdk.Hints{Directories: []string{"net/http"}}})
//	fmt.Println(out.Decision.Reason) // reused gotour-1c0ffee5 (0.85 > 0.60)
//
// Over the unix socket (the default) access is the socket's: owner only.
// Over TCP, give the daemon's bearer token, its CA, and for mutual TLS a
// client certificate.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/peercred"
	"github.com/hearth-dev/hearth/internal/tracecontext"
	"github.com/hearth-dev/hearth/sdk"
)

// Errors of the client's own; the daemon's errors come back as the
// vocabulary's sentinels (errors.go at the module's root).
var (
	// ErrNoDaemon: no daemon runs there; the socket does not exist, or
	// nothing listens on it.
	ErrNoDaemon = errors.New("no hearth daemon is running")
	// ErrUnresponsive: something listens, but did not answer in time (a
	// daemon stopped with SIGSTOP, or hung).
	ErrUnresponsive = errors.New("the hearth daemon does not answer")
	// ErrNotOurs: the process that serves the unix socket runs as
	// another user than the client's.
	ErrNotOurs = errors.New("the socket is served by another user")
	// ErrUnreachable: a call did not reach the daemon, or lost it on the
	// way (the connection failed or broke: it stopped, or is stopping).
	ErrUnreachable = wire.ErrUnreachable
	// ErrPipelineValue is returned for a run whose pipeline is given as a
	// Go value: the daemon reads pipelines from config files it can open.
	ErrPipelineValue = errors.New("a daemon runs pipelines from config files: give the file in RunOptions.Config and the pipeline's name in PipelineName, not a Pipeline value")
)

// The client is every service of the vocabulary, as the engine is.
var (
	_ hearth.Service      = (*Client)(nil)
	_ hearth.EventSource  = (*Client)(nil)
	_ hearth.StatusReader = (*Client)(nil)
	_ hearth.Admin        = (*Client)(nil)
)

// Options say how to reach the daemon: by Socket, DataDir or Address;
// Socket wins over DataDir. With none of them, the daemon is the one
// `hearth serve` runs without a config in the current directory, on that
// directory's default data directory (in the user's state directory,
// see internal/paths.DefaultDataDir); a daemon serving a config file is
// found by its data directory: `hearth serve` prints it.
type Options struct {
	// Socket is the daemon's unix socket.
	Socket string
	// DataDir finds the socket in a data directory (hearth.SocketName).
	DataDir string
	// Address is the daemon's TCP address (server.listen).
	Address string
	// Token is the bearer token for TCP.
	Token string
	// TLS, for TCP: the CA the daemon's certificate is signed by, and for
	// mutual TLS the client's certificate and key. Without it, TCP is
	// plain (only for a daemon without TLS, behind a token).
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds the first connection; 2 s when zero.
	DialTimeout time.Duration
	// Lazy skips asking the daemon for its status before Dial returns:
	// one round trip less for a process that makes one call (`hearth
	// hook`). An unreachable daemon is then the first call's error.
	Lazy bool
}

// Client is a connection to a daemon. Its methods are safe for
// concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	rpc    apipb.HearthClient
	target string
}

// Dial connects to the daemon and checks that it answers.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	var (
		target string
		dopts  []grpc.DialOption
		what   string
	)
	if opts.Socket == "" && opts.DataDir == "" && opts.Address == "" {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("client: the current directory: %w", err)
		}
		dir, from, _ := paths.DefaultDataDir("", cwd, paths.StateHome(os.Getenv))
		if dir == "" {
			return nil, fmt.Errorf("client: no data directory to find the daemon in: %s; give Options.DataDir or Socket", from)
		}
		opts.DataDir = dir
	}
	switch {
	case opts.Socket != "" || opts.DataDir != "":
		path := opts.Socket
		if path == "" {
			path = filepath.Join(opts.DataDir, hearth.SocketName)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%w on %s: %w", ErrNoDaemon, path, err)
		}
		// A socket left by a daemon that was killed refuses at once; gRPC
		// would keep retrying it until the timeout.
		conn, err := net.DialTimeout("unix", path, time.Second)
		if err != nil {
			return nil, fmt.Errorf("%w on %s: %w", ErrNoDaemon, path, err)
		}
		err = checkServer(conn, path)
		conn.Close()
		if err != nil {
			return nil, err
		}
		target, what = "unix://"+paths.Abs(path), path
		// Every connection gRPC makes is checked: the one the calls go
		// over, not this probe, is what must be the daemon's.
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, "unix", path)
				if err != nil {
					return nil, err
				}
				if err := checkServer(c, path); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}))
	case opts.Address != "":
		target, what = "dns:///"+opts.Address, opts.Address
		creds, err := tcpCreds(opts)
		if err != nil {
			return nil, err
		}
		dopts = append(dopts, grpc.WithTransportCredentials(creds))
		if opts.Token != "" {
			dopts = append(dopts, grpc.WithPerRPCCredentials(bearer{opts.Token, opts.CAFile != ""}))
		}
	default:
		return nil, errors.New("client: give the daemon's socket, data directory or TCP address")
	}
	dopts = append(dopts, grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(wire.MaxMessage), grpc.MaxCallRecvMsgSize(wire.MaxReply)))
	// The caller's trace context goes with every call (W3C traceparent in
	// the metadata), so that a daemon that traces puts a task's spans
	// under the span the caller submitted it in; nothing when ctx has
	// none.
	dopts = append(dopts,
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(tracecontext.Outgoing(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(tracecontext.Outgoing(ctx), desc, cc, method, opts...)
		}))
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c := &Client{conn: conn, rpc: apipb.NewHearthClient(conn), target: what}
	if opts.Lazy {
		return c, nil
	}
	timeout := opts.DialTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := c.rpc.Status(pctx, &apipb.StatusRequest{}, grpc.WaitForReady(true)); err != nil {
		conn.Close()
		if pctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%w on %s: nothing came back within %s; is it stopped (kill -CONT) or hung?", ErrUnresponsive, what, timeout)
		}
		return nil, wire.ErrorOf(ctx, err)
	}
	return c, nil
}

// checkServer checks that the process serving the unix socket c runs as
// this user, as a daemon this user started does. A socket path in a
// directory others may write (a socket in /tmp, a stale path) could
// otherwise be served by anyone, who would read the hook payloads, run
// files and tokens sent to it and answer every PreToolUse "allow".
func checkServer(c net.Conn, path string) error {
	p, err := peercred.Of(c, false)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("client: cannot tell who serves %s: %w", path, err)
	}
	if self := os.Geteuid(); p.UID != self {
		return fmt.Errorf("%w: %s is served by process %d, running as uid %d, not this user (uid %d); check the socket path (--socket, server.socket) and who started that daemon",
			ErrNotOurs, path, p.PID, p.UID, self)
	}
	return nil
}

// tcpCreds are the transport credentials for TCP: TLS when a CA or a
// client certificate is given, plain otherwise.
func tcpCreds(opts Options) (credentials.TransportCredentials, error) {
	if opts.CAFile == "" && opts.CertFile == "" {
		return insecure.NewCredentials(), nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("client: read the CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: %s holds no PEM certificate", opts.CAFile)
		}
		tc.RootCAs = pool
	}
	if opts.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client: load the client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(tc), nil
}

// bearer sends the token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Target is where the client is connected: a socket path or an address.
func (c *Client) Target() string { return c.target }

// Status asks the daemon what its host is and how it is doing.
func (c *Client) Status(ctx context.Context) (hearth.HostStatus, error) {
	r, err := c.rpc.Status(ctx, &apipb.StatusRequest{})
	if err != nil {
		return hearth.HostStatus{}, wire.ErrorOf(ctx, err)
	}
	return wire.HostStatusOf(r), nil
}

// Submit runs a task and returns its outcome with the placement decision.
// Cancelling ctx cancels the task.
func (c *Client) Submit(ctx context.Context, t hearth.Task) (*hearth.Outcome, error) {
	r, err := c.rpc.SubmitTask(ctx, &apipb.SubmitTaskRequest{Agent: t.Agent, Id: t.ID, Name: t.Name, Prompt: t.Prompt,
		Hints: wire.Hints(t.Hints), Metadata: t.Metadata})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	return wire.OutcomeOf(r), nil
}

// Place asks where a task for agent with hints would run, and why,
// running nothing. For an external agent (Claude Code), a decision whose
// Action is hearth.ActionResume names the session and its Resume command.
func (c *Client) Place(ctx context.Context, agent string, hints sdk.Hints) (hearth.Decision, error) {
	r, err := c.rpc.Place(ctx, &apipb.PlaceRequest{Agent: agent, Hints: wire.Hints(hints)})
	if err != nil {
		return hearth.Decision{}, wire.ErrorOf(ctx, err)
	}
	return wire.DecisionOf(r), nil
}

// Sessions lists the daemon's sessions, most recently active first.
func (c *Client) Sessions(ctx context.Context) ([]hearth.SessionInfo, error) {
	r, err := c.rpc.ListSessions(ctx, &apipb.ListSessionsRequest{})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	out := make([]hearth.SessionInfo, 0, len(r.GetSessions()))
	for _, s := range r.GetSessions() {
		out = append(out, wire.SessionOf(s))
	}
	return out, nil
}

// Session shows one session with its latest limit events and decisions.
func (c *Client) Session(ctx context.Context, id string, limit int) (*hearth.SessionDetail, error) {
	r, err := c.rpc.ShowSession(ctx, &apipb.ShowSessionRequest{Id: id, Limit: int32(limit)})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	return wire.SessionDetailOf(r), nil
}

// Run reads a run (an ID or a unique prefix).
func (c *Client) Run(ctx context.Context, id string) (hearth.RunDetail, error) {
	v, err := c.ShowRun(ctx, id, ShowOptions{})
	if err != nil {
		return hearth.RunDetail{}, err
	}
	return v.RunDetail, nil
}

// RunOutputs reads every output version of a run's tasks.
func (c *Client) RunOutputs(ctx context.Context, id string) ([]hearth.TaskOutput, error) {
	v, err := c.ShowRun(ctx, id, ShowOptions{Outputs: true})
	if err != nil {
		return nil, err
	}
	return v.Outputs, nil
}

// RunCheckpoints reads a run's checkpoints, oldest first.
func (c *Client) RunCheckpoints(ctx context.Context, id string) ([]hearth.CheckpointInfo, error) {
	v, err := c.ShowRun(ctx, id, ShowOptions{Checkpoints: true})
	if err != nil {
		return nil, err
	}
	return v.Checkpoints, nil
}

// Runs lists the daemon's runs, most recently active first.
func (c *Client) Runs(ctx context.Context) ([]hearth.RunInfo, error) {
	r, err := c.rpc.ListRuns(ctx, &apipb.ListRunsRequest{})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	out := make([]hearth.RunInfo, 0, len(r.GetRuns()))
	for _, ri := range r.GetRuns() {
		out = append(out, wire.RunInfoOf(ri))
	}
	return out, nil
}

// RunView is a run with what ShowRun was asked for.
type RunView struct {
	hearth.RunDetail
	Outputs     []hearth.TaskOutput
	Checkpoints []hearth.CheckpointInfo
	Events      []hearth.Event
}

// ShowOptions say what ShowRun returns besides the run.
type ShowOptions struct {
	Outputs, Checkpoints bool
	// Events is how many of the latest events to return.
	Events int
}

// ShowRun reads a run (an ID or a unique prefix).
func (c *Client) ShowRun(ctx context.Context, id string, opts ShowOptions) (*RunView, error) {
	r, err := c.rpc.ShowRun(ctx, &apipb.ShowRunRequest{Run: id, Outputs: opts.Outputs, Checkpoints: opts.Checkpoints, Events: int32(opts.Events)})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	v := &RunView{RunDetail: wire.RunDetailOf(r.GetDetail())}
	for _, o := range r.GetOutputs() {
		v.Outputs = append(v.Outputs, wire.TaskOutputOf(o))
	}
	for _, cp := range r.GetCheckpoints() {
		v.Checkpoints = append(v.Checkpoints, wire.CheckpointOf(cp))
	}
	for _, e := range r.GetEvents() {
		v.Events = append(v.Events, wire.EventOf(e))
	}
	return v, nil
}

// RunEvents reads a run's last limit events (0: all), also after the run
// was deleted.
func (c *Client) RunEvents(ctx context.Context, id string, limit int) ([]hearth.Event, error) {
	r, err := c.rpc.RunEvents(ctx, &apipb.RunEventsRequest{Run: id, Limit: int32(limit)})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	out := make([]hearth.Event, 0, len(r.GetEvents()))
	for _, e := range r.GetEvents() {
		out = append(out, wire.EventOf(e))
	}
	return out, nil
}

// PauseRun pauses a run, interrupting its tasks in flight (they run
// again when it resumes), and returns it paused.
func (c *Client) PauseRun(ctx context.Context, id string) (hearth.RunInfo, error) {
	r, err := c.rpc.PauseRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		return hearth.RunInfo{}, wire.ErrorOf(ctx, err)
	}
	return wire.RunInfoOf(r), nil
}

// CancelRun cancels a run for good.
func (c *Client) CancelRun(ctx context.Context, id string) (hearth.RunInfo, error) {
	r, err := c.rpc.CancelRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		return hearth.RunInfo{}, wire.ErrorOf(ctx, err)
	}
	return wire.RunInfoOf(r), nil
}

// DeleteRun deletes a stopped run and returns its full ID.
func (c *Client) DeleteRun(ctx context.Context, id string) (string, error) {
	r, err := c.rpc.DeleteRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		return "", wire.ErrorOf(ctx, err)
	}
	return r.GetRun(), nil
}

// Hook hands the daemon one hook call of kind ("claude-code") for an
// external agent (empty: the daemon's hooks.agent), and returns what the
// hook answers.
func (c *Client) Hook(ctx context.Context, kind, agent string, payload []byte) ([]byte, error) {
	r, err := c.rpc.Hook(ctx, &apipb.HookRequest{Kind: kind, Agent: agent, Payload: payload})
	if err != nil {
		return nil, wire.ErrorOf(ctx, err)
	}
	return r.GetOutput(), nil
}

// DashboardLogin asks the daemon for a one-time link that signs a
// browser in to its dashboard, and when the link expires.
func (c *Client) DashboardLogin(ctx context.Context) (string, time.Time, error) {
	r, err := c.rpc.DashboardLogin(ctx, &apipb.DashboardLoginRequest{})
	if err != nil {
		return "", time.Time{}, wire.ErrorOf(ctx, err)
	}
	return r.GetUrl(), time.Unix(0, r.GetExpiresUnixNano()), nil
}

// DashboardRevoke signs every browser out of the daemon's dashboard and
// voids the sign-in links not yet used.
func (c *Client) DashboardRevoke(ctx context.Context) error {
	if _, err := c.rpc.DashboardLogin(ctx, &apipb.DashboardLoginRequest{Revoke: true}); err != nil {
		return wire.ErrorOf(ctx, err)
	}
	return nil
}

// subscriptionBuffer is how many events a subscription holds for its
// reader when its filter names no buffer; the daemon's stream waits
// behind them.
const subscriptionBuffer = 256

// Subscribe streams the daemon's events that f matches, from now until
// ctx is done, the subscription is closed or the daemon goes away; its
// channel is then closed, and Err says why. It returns once the daemon
// is subscribed: every event after that reaches the subscription.
func (c *Client) Subscribe(ctx context.Context, f hearth.EventFilter) (hearth.Subscription, error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.rpc.Events(ctx, wire.EventFilter(f))
	if err == nil {
		// The daemon sends its headers once it is subscribed.
		_, err = stream.Header()
	}
	if err != nil {
		cancel()
		return nil, wire.ErrorOf(ctx, err)
	}
	buffer := f.Buffer
	if buffer <= 0 {
		buffer = subscriptionBuffer
	}
	ch := make(chan hearth.Event, buffer)
	es := &eventStream{c: ch, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(es.done)
		defer cancel()
		defer close(ch)
		for {
			m, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					es.err = wire.ErrorOf(ctx, err)
				}
				return
			}
			select {
			case ch <- wire.EventOf(m):
			case <-ctx.Done():
				return
			}
		}
	}()
	return es, nil
}

// eventStream is a subscription to the daemon's events. Read its events,
// or Close it: an unread stream holds the daemon's side of it.
type eventStream struct {
	c      chan hearth.Event
	done   chan struct{}
	cancel context.CancelFunc
	err    error
}

func (s *eventStream) Events() <-chan hearth.Event { return s.c }

// Dropped is 0: the daemon's stream waits for this reader, and the
// daemon drops for a slow client on its side (and logs how many).
func (s *eventStream) Dropped() uint64 { return 0 }

// Close ends the stream and waits for it to end.
func (s *eventStream) Close() {
	s.cancel()
	for range s.c {
	}
	<-s.done
}

// Err is why the stream ended, once its channel is closed: nil when its
// context ended it or it was closed.
func (s *eventStream) Err() error {
	<-s.done
	return s.err
}

// Backup writes a consistent backup of the daemon's data directory to w,
// taken while it serves, and returns what it holds. A daemon older than
// this client says only how many bytes.
func (c *Client) Backup(ctx context.Context, w io.Writer) (hearth.BackupStats, error) {
	stream, err := c.rpc.Backup(ctx, &apipb.BackupRequest{})
	if err != nil {
		return hearth.BackupStats{}, wire.ErrorOf(ctx, err)
	}
	var st hearth.BackupStats
	var n int64
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			st.Bytes = n
			return st, nil
		}
		if err != nil {
			return hearth.BackupStats{Bytes: n}, wire.ErrorOf(ctx, err)
		}
		k, err := w.Write(chunk.GetData())
		n += int64(k)
		if err != nil {
			return hearth.BackupStats{Bytes: n}, err
		}
		if chunk.GetStats() != nil {
			st = wire.BackupStatsOf(chunk.GetStats())
		}
	}
}
