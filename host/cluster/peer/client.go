package peer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/internal/tracecontext"
)

// KeepaliveTime is how long a connection to another host may be silent
// before this host pings it: gRPC's minimum for a client. The daemons'
// servers permit pings that often.
const KeepaliveTime = 10 * time.Second

// Client reaches the other hosts of a cluster over their TCP APIs with
// mutual TLS: this host presents its own server certificate (server.tls
// cert_file and key_file) as its client certificate, and checks theirs
// against server.tls client_ca_file, the CA every host of the cluster
// trusts. It keeps one connection per host. Safe for concurrent use.
type Client struct {
	self  string
	creds credentials.TransportCredentials
	token string
	dial  time.Duration

	mu    sync.Mutex
	conns map[string]*peerConn // by host ID
}

type peerConn struct {
	addr string
	conn *grpc.ClientConn
	rpc  peerpb.PeerClient
}

// TLS names the files the hosts of a cluster authenticate one another
// with: the server block's tls. Each host presents its own certificate
// (cert_file, key_file, for both server and client use) and checks the
// others' against the CA they all trust (client_ca_file).
type TLS struct {
	CertFile, KeyFile, CAFile string
}

// NewClient returns the client side of the hosts' API for host self,
// authenticating with t; a token, when set (the server block's
// token_file, the same on every host), goes along. dialTimeout bounds
// reaching a host. It reads the files now and dials nothing until a call.
func NewClient(self string, t TLS, token string, dialTimeout time.Duration) (*Client, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: load this host's certificate for the other hosts: %w", err)
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: read the hosts' CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: the CA file %s holds no PEM certificate", t.CAFile)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS13}
	return &Client{self: self, creds: credentials.NewTLS(tc), token: token, dial: dialTimeout, conns: make(map[string]*peerConn)}, nil
}

// Close closes the connections to the other hosts.
func (p *Client) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.conns {
		c.conn.Close()
		delete(p.conns, id)
	}
	return nil
}

// conn returns the connection to m, made anew when its address changed.
func (p *Client) conn(m hearth.Member) (*peerConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.conns[m.ID]; c != nil {
		if c.addr == m.Addr {
			return c, nil
		}
		c.conn.Close()
		delete(p.conns, m.ID)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(p.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(wire.MaxMessage), grpc.MaxCallRecvMsgSize(wire.MaxReply)),
		// gRPC's reconnection backoff grows to 2 minutes: a host that
		// restarted at the same address would be unreachable that long.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: p.dial,
		}),
		// A connection whose peer stopped answering (paused, or cut
		// without a reset) fails its calls after Time+Timeout, instead
		// of when the peer wakes: the forward then asks about the task,
		// and reads its completion once the host left. gRPC pings no
		// more often than every 10 s; a peer that left the cluster is
		// given up on sooner, when its lease expires (member.forward).
		// The daemons allow it (api: KeepaliveEnforcementPolicy).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: p.dial, PermitWithoutStream: false}),
	}
	if p.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{p.token}))
	}
	cc, err := grpc.NewClient("dns:///"+m.Addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: host %s at %s: %v", cluster.ErrUnreachable, m.ID, m.Addr, err)
	}
	c := &peerConn{addr: m.Addr, conn: cc, rpc: peerpb.NewPeerClient(cc)}
	p.conns[m.ID] = c
	return c, nil
}

// ready waits until the connection to m is up, within the dial timeout:
// a request that goes out on a ready connection may have reached the
// host; one that never found one did not.
func (p *Client) ready(ctx context.Context, m hearth.Member) (*peerConn, error) {
	c, err := p.conn(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.dial)
	defer cancel()
	c.conn.Connect()
	for st := c.conn.GetState(); st != connectivity.Ready; st = c.conn.GetState() {
		if st == connectivity.TransientFailure {
			// The last attempt failed (refused, reset, no route): the
			// host is not there now. Waiting for the next attempt would
			// cost the whole dial timeout after a crash.
			return nil, fmt.Errorf("%w: host %s at %s: cannot connect", cluster.ErrUnreachable, m.ID, m.Addr)
		}
		if st == connectivity.Shutdown || !c.conn.WaitForStateChange(ctx, st) {
			return nil, fmt.Errorf("%w: host %s at %s: no connection within %s (last state %s)", cluster.ErrUnreachable, m.ID, m.Addr, p.dial, st)
		}
	}
	return c, nil
}

// Probe checks that m takes this host's calls now: a connection whose
// handshake (mutual TLS) completes and a call it accepts (the token),
// within the dial timeout. It asks about no key (an empty one, which
// every release answers "unknown"), so it costs the other host a map
// lookup. The error says why m cannot be worked with: its handshake
// fails (a certificate from another CA), it refuses this host, or it
// does not answer.
//
// After a failure the connection is closed rather than left to gRPC,
// which would dial it again on its own every second or two (its backoff)
// for as long as it exists: each such dial that fails the handshake
// was a warning in both hosts' logs (issue 26). The next call dials
// afresh.
func (p *Client) Probe(ctx context.Context, m hearth.Member) error {
	c, err := p.conn(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.dial)
	defer cancel()
	// Fail-fast (no WaitForReady): a connection whose last attempt
	// failed fails the call with that attempt's error, the handshake's
	// included.
	_, err = c.rpc.TaskStatus(ctx, &peerpb.TaskStatusRequest{})
	if err == nil {
		return nil
	}
	if c.conn.GetState() != connectivity.Ready {
		p.drop(m.ID, c)
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("host %s at %s does not answer within %s", m.ID, m.Addr, p.dial)
	case codes.Unavailable:
		if strings.Contains(st.Message(), "handshake") || strings.Contains(st.Message(), "tls:") {
			return fmt.Errorf("the peer handshake with host %s at %s fails: %s (every host's certificate must be signed by the CA in the others' client_ca_file)", m.ID, m.Addr, st.Message())
		}
		return fmt.Errorf("host %s at %s cannot be reached: %s", m.ID, m.Addr, st.Message())
	}
	return peerError(m, "probing", err)
}

// drop closes c, the connection to host id, if it is still the one
// kept for it.
func (p *Client) drop(id string, c *peerConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[id] == c {
		delete(p.conns, id)
		c.conn.Close()
	}
}

// Forward runs t on m under key.
func (p *Client) Forward(ctx context.Context, m hearth.Member, session, key string, t hearth.Task) (cluster.Result, error) {
	c, err := p.ready(ctx, m)
	if err != nil {
		return cluster.Result{}, err
	}
	req := &peerpb.ForwardRequest{Key: key, From: p.self, Session: session, Task: &apipb.SubmitTaskRequest{
		Agent: t.Agent, Id: t.ID, Name: t.Name, Prompt: t.Prompt, Hints: wire.Hints(t.Hints), Metadata: t.Metadata}}
	// The forwarding host's span goes with the task: the receiving
	// host's spans of it join the same trace.
	reply, err := c.rpc.Forward(tracecontext.Outgoing(ctx), req)
	if err != nil {
		return cluster.Result{}, peerError(m, "forwarding task "+key, err)
	}
	return resultOf(ctx, reply), nil
}

// Status asks m about key.
func (p *Client) Status(ctx context.Context, m hearth.Member, key string) (cluster.TaskStatus, cluster.Result, error) {
	c, err := p.ready(ctx, m)
	if err != nil {
		return cluster.TaskUnknown, cluster.Result{}, err
	}
	ctx2, cancel := context.WithTimeout(ctx, p.dial)
	defer cancel()
	r, err := c.rpc.TaskStatus(ctx2, &peerpb.TaskStatusRequest{Key: key})
	if err != nil {
		return cluster.TaskUnknown, cluster.Result{}, peerError(m, "asking about task "+key, err)
	}
	switch r.GetState() {
	case peerpb.TaskStatusReply_RUNNING:
		return cluster.TaskRunning, cluster.Result{}, nil
	case peerpb.TaskStatusReply_DONE:
		return cluster.TaskDone, resultOf(ctx, r.GetResult()), nil
	case peerpb.TaskStatusReply_INTERRUPTED:
		return cluster.TaskInterrupted, cluster.Result{Err: interruptedOn(m, r.GetResult().GetErrorMessage())}, nil
	}
	return cluster.TaskUnknown, cluster.Result{}, nil
}

// ListRuns lists the runs m owns.
func (p *Client) ListRuns(ctx context.Context, m hearth.Member) ([]hearth.RunInfo, error) {
	c, err := p.ready(ctx, m)
	if err != nil {
		return nil, err
	}
	r, err := c.rpc.ListOwnRuns(ctx, &apipb.ListRunsRequest{})
	if err != nil {
		return nil, peerError(m, "listing runs", err)
	}
	out := make([]hearth.RunInfo, 0, len(r.GetRuns()))
	for _, ri := range r.GetRuns() {
		out = append(out, wire.RunInfoOf(ri))
	}
	return out, nil
}

// Run reads the run m owns under id (its ID or a prefix); an error
// wrapping hearth.ErrUnknownRun when m has no such run.
func (p *Client) Run(ctx context.Context, m hearth.Member, id string) (hearth.RunDetail, error) {
	c, err := p.ready(ctx, m)
	if err != nil {
		return hearth.RunDetail{}, err
	}
	r, err := c.rpc.ShowOwnRun(ctx, &apipb.RunRef{Run: id})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return hearth.RunDetail{}, wire.ErrorOf(ctx, err)
		}
		return hearth.RunDetail{}, peerError(m, "reading run "+id, err)
	}
	return wire.RunDetailOf(r), nil
}

// peerError maps a failed call: a refusal wraps cluster.ErrRefused, a
// key whose task the host stopped cluster.ErrInterrupted; the
// caller's own end its context's error; anything else (a connection lost
// after the request went out, a timeout) leaves the outcome unknown.
func peerError(m hearth.Member, what string, err error) error {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		info, ok := d.(*apipb.ErrorInfo)
		switch {
		case ok && info.GetReason() == reasonRefused:
			return fmt.Errorf("%w: host %s: %s", cluster.ErrRefused, m.ID, st.Message())
		case ok && info.GetReason() == reasonInterrupted:
			return interruptedOn(m, st.Message())
		}
	}
	switch st.Code() {
	case codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		// It did not take the request: its credentials or release
		// differ from this host's.
		return fmt.Errorf("%w: host %s at %s: %s: %s (check that every host trusts the same CA, and runs the same hearth release)", cluster.ErrRefused, m.ID, m.Addr, what, st.Message())
	case codes.Canceled:
		return fmt.Errorf("host %s: %s: %w", m.ID, what, context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("host %s: %s: %w", m.ID, what, context.DeadlineExceeded)
	}
	return fmt.Errorf("host %s at %s: %s: %s (%s)", m.ID, m.Addr, what, st.Message(), st.Code())
}

// interruptedOn is the error of a task m stopped before it finished, from
// the message m gave (which names cluster.ErrInterrupted once already).
func interruptedOn(m hearth.Member, msg string) error {
	return fmt.Errorf("%w: host %s: %s", cluster.ErrInterrupted, m.ID, strings.TrimPrefix(msg, cluster.ErrInterrupted.Error()+": "))
}

// bearer sends the cluster's token with every call to another host.
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return true }
