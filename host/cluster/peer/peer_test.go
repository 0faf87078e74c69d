package peer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/sdk"
)

// The peer package's own tests: what crosses the wire between a Client
// and a server registered with Register, over real gRPC with mutual TLS,
// the server answering from a handler the test scripts. The same API
// between real hosts (an engine and its member behind a daemon) is
// tested in host/cluster/member (peer_test.go).

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handler answers as the test says and records what it was asked.
type handler struct {
	mu       sync.Mutex
	forwards []forward
	result   cluster.Result
	err      error
	status   cluster.TaskStatus
	statusR  cluster.Result
	runs     []hearth.RunInfo
	members  hearth.Members
	cruns    hearth.ClusterRuns
}

type forward struct {
	from, key, session string
	task               hearth.Task
}

func (h *handler) RunForwarded(_ context.Context, from, key, session string, t hearth.Task) (cluster.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forwards = append(h.forwards, forward{from, key, session, t})
	return h.result, h.err
}

func (h *handler) ForwardedStatus(string) (cluster.TaskStatus, cluster.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status, h.statusR
}

func (h *handler) DrainHost(_ context.Context, host string, drain bool) (hearth.Member, error) {
	m := hearth.Member{ID: host}
	if drain {
		m.Draining = hearth.DrainMaintenance
	}
	return m, nil
}

func (h *handler) OwnRuns(context.Context) ([]hearth.RunInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs, nil
}

// OwnRun answers the one run in runs whose ID is id, as a store would.
func (h *handler) OwnRun(_ context.Context, id string) (hearth.RunDetail, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.runs {
		if r.ID == id {
			return hearth.RunDetail{RunInfo: r, Description: "from the handler"}, nil
		}
	}
	return hearth.RunDetail{}, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
}

func (h *handler) Members(context.Context) (hearth.Members, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.members, nil
}

func (h *handler) ClusterRuns(context.Context) (hearth.ClusterRuns, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cruns, nil
}

// got is what the handler was asked to run.
func (h *handler) got() []forward {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]forward(nil), h.forwards...)
}

func (h *handler) set(fn func(h *handler)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn(h)
}

// serve serves the peer service over h on a loopback port with mutual
// TLS: the CA of caFile must have signed a caller's certificate.
func serve(t *testing.T, h peer.Handler, caFile, certFile, keyFile string) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert},
		ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})))
	peer.Register(srv, h)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return l.Addr().String()
}

func client(t *testing.T, caFile, certFile, keyFile string) *peer.Client {
	t.Helper()
	c, err := peer.NewClient("a", peer.TLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}, "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestForwardAcrossTheWire: a forward carries its key, sender, session
// and task; a result comes back as it was, a task's own failure with its
// sentinel; a refusal wraps cluster.ErrRefused and an interrupted key
// cluster.ErrInterrupted (saying so once, and not a refusal), each
// naming the host.
func TestForwardAcrossTheWire(t *testing.T) {
	ca, cert, key := testcert.Write(t, t.TempDir())
	h := &handler{}
	b := hearth.Member{ID: "b", Addr: serve(t, h, ca, cert, key)}
	c := client(t, ca, cert, key)
	ctx := t.Context()

	task := hearth.Task{Agent: "coder", ID: "k1", Name: "n", Prompt: "p", Hints: sdk.Hints{Files: []string{"a.go"}, Directories: []string{"pkg"}}, Metadata: map[string]string{"m": "v"}}
	h.set(func(h *handler) {
		h.result = cluster.Result{Outcome: &hearth.Outcome{TaskID: "k1", Session: "coder-1", Result: sdk.Result{Output: "done"}}}
	})
	r, err := c.Forward(ctx, b, "coder-1", "k1", task)
	if err != nil || r.Err != nil || r.Outcome.TaskID != "k1" || r.Outcome.Session != "coder-1" || r.Outcome.Result.Output != "done" {
		t.Fatalf("forward: %+v %v", r, err)
	}
	if got := h.got()[0]; got.from != "a" || got.key != "k1" || got.session != "coder-1" || got.task.Prompt != "p" ||
		got.task.Hints.Files[0] != "a.go" || got.task.Metadata["m"] != "v" || got.task.Name != "n" || got.task.ID != "k1" {
		t.Fatalf("the handler got %+v", got)
	}

	h.set(func(h *handler) {
		h.result = cluster.Result{Err: &hearth.DeniedError{Guard: "budget", Message: "over budget"}}
	})
	if r, err := c.Forward(ctx, b, "", "k2", task); err != nil || !errors.Is(r.Err, hearth.ErrDenied) || !strings.Contains(r.Err.Error(), "over budget") {
		t.Fatalf("a task's own failure: %+v %v, want its result, a denial", r, err)
	}

	h.set(func(h *handler) { h.err = fmt.Errorf("%w: no agent coder here", cluster.ErrRefused) })
	if _, err := c.Forward(ctx, b, "", "k3", task); !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), "host b") || !strings.Contains(err.Error(), "no agent coder") {
		t.Fatalf("a refusal: %v", err)
	}
	h.set(func(h *handler) { h.err = cluster.InterruptedByRestart("b", "k4", "a", time.Now()) })
	_, err = c.Forward(ctx, b, "", "k4", task)
	if !errors.Is(err, cluster.ErrInterrupted) || errors.Is(err, cluster.ErrRefused) || strings.Count(err.Error(), cluster.ErrInterrupted.Error()) != 1 || !strings.Contains(err.Error(), "task k4") {
		t.Fatalf("an interrupted key: %v, want ErrInterrupted, said once, naming the task", err)
	}
}

// TestStatusAcrossTheWire: each answer about a key crosses as it was
// given, a kept result with it; runs are listed as the host has them.
func TestStatusAcrossTheWire(t *testing.T) {
	ca, cert, key := testcert.Write(t, t.TempDir())
	h := &handler{}
	b := hearth.Member{ID: "b", Addr: serve(t, h, ca, cert, key)}
	c := client(t, ca, cert, key)
	ctx := t.Context()
	for _, tc := range []struct {
		st cluster.TaskStatus
		r  cluster.Result
	}{
		{cluster.TaskUnknown, cluster.Result{}},
		{cluster.TaskRunning, cluster.Result{}},
		{cluster.TaskDone, cluster.Result{Outcome: &hearth.Outcome{TaskID: "k", Result: sdk.Result{Output: "kept"}}}},
		{cluster.TaskInterrupted, cluster.Result{Err: cluster.Damaged("b", "k", errors.New("record version 2"))}},
	} {
		h.set(func(h *handler) { h.status, h.statusR = tc.st, tc.r })
		st, r, err := c.Status(ctx, b, "k")
		switch {
		case err != nil || st != tc.st:
			t.Errorf("%v: got %v %v", tc.st, st, err)
		case st == cluster.TaskDone && (r.Outcome == nil || r.Outcome.Result.Output != "kept"):
			t.Errorf("done: %+v, want the kept result", r)
		case st == cluster.TaskInterrupted && (!errors.Is(r.Err, cluster.ErrInterrupted) || !strings.Contains(r.Err.Error(), "host b") || !strings.Contains(r.Err.Error(), "record version 2")):
			t.Errorf("interrupted: %v, want ErrInterrupted naming the host and why", r.Err)
		}
	}
	h.set(func(h *handler) { h.runs = []hearth.RunInfo{{ID: "run-1", Pipeline: "one", Status: hearth.RunPaused}} })
	runs, err := c.ListRuns(ctx, b)
	if err != nil || len(runs) != 1 || runs[0].ID != "run-1" || runs[0].Pipeline != "one" || runs[0].Status != hearth.RunPaused {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	// One run, read from its owner; an unknown one is ErrUnknownRun,
	// not an unreachable host.
	d, err := c.Run(ctx, b, "run-1")
	if err != nil || d.ID != "run-1" || d.Pipeline != "one" || d.Description != "from the handler" {
		t.Fatalf("run: %+v %v", d, err)
	}
	if _, err := c.Run(ctx, b, "run-2"); !errors.Is(err, hearth.ErrUnknownRun) || !strings.Contains(err.Error(), `"run-2"`) {
		t.Fatalf("unknown run: %v, want ErrUnknownRun naming it", err)
	}
}

// TestListingsAcrossTheWire: what `hearth hosts list` and `runs list`
// ask a daemon: the members as the host lists them; its cluster's runs,
// or FAILED_PRECONDITION from a host in no cluster.
func TestListingsAcrossTheWire(t *testing.T) {
	ca, cert, key := testcert.Write(t, t.TempDir())
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := &handler{members: hearth.Members{Self: "b", Clustered: true, Hosts: []hearth.Member{
		{ID: "b", Self: true, Addr: "b:1", Hostname: "box", Started: started, ConfigHash: "abc", Version: "dev", Sessions: 2,
			Agents: []hearth.AgentLoad{{Name: "coder", Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4}}},
	}}}
	addr := serve(t, h, ca, cert, key)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(clientCreds(t, ca, cert, key)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rpc := peerpb.NewPeerClient(cc)
	list, err := rpc.ListHosts(t.Context(), &peerpb.ListHostsRequest{})
	if err != nil || list.GetSelf() != "b" || !list.GetClustered() || len(list.GetHosts()) != 1 {
		t.Fatalf("hosts: %v %v", list, err)
	}
	m := list.GetHosts()[0]
	if m.GetId() != "b" || !m.GetSelf() || m.GetAddr() != "b:1" || m.GetSessions() != 2 || m.GetStartedUnixNano() != started.UnixNano() ||
		m.GetConfigHash() != "abc" || len(m.GetAgents()) != 1 || m.GetAgents()[0].GetMaxSessions() != 4 || m.GetAgents()[0].GetDormant() != 1 {
		t.Fatalf("b as listed: %v", m)
	}
	if _, err := rpc.ListClusterRuns(t.Context(), &apipb.ListRunsRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("a host in no cluster's runs: %v, want FAILED_PRECONDITION", err)
	}
	h.set(func(h *handler) {
		h.cruns = hearth.ClusterRuns{Self: "b", Clustered: true, Hosts: []hearth.HostRuns{
			{Host: "c", State: hearth.OwnerUnreachable, Error: "no answer", Runs: []hearth.RunInfo{{ID: "run-1"}}, Listed: started}}}
	})
	cr, err := rpc.ListClusterRuns(t.Context(), &apipb.ListRunsRequest{})
	if err != nil || cr.GetSelf() != "b" || len(cr.GetHosts()) != 1 {
		t.Fatalf("the cluster's runs: %v %v", cr, err)
	}
	if hr := cr.GetHosts()[0]; hr.GetHost() != "c" || hr.GetState() != "unreachable" || hr.GetError() != "no answer" || hr.GetListedUnixNano() != started.UnixNano() || hr.GetRuns()[0].GetId() != "run-1" {
		t.Fatalf("c's runs: %v", hr)
	}
}

// TestClientMeetsNoHost: a host nobody listens at is unreachable (the
// task did not start there); one whose certificate another CA signed is
// not let in, and its handler is never asked.
func TestClientMeetsNoHost(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := testcert.Write(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	c := client(t, ca, cert, key)
	task := hearth.Task{Agent: "coder", Prompt: "p"}
	if _, err := c.Forward(t.Context(), hearth.Member{ID: "gone", Addr: dead}, "", "k", task); !errors.Is(err, cluster.ErrUnreachable) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a host nobody listens at: %v, want unreachable", err)
	}

	h := &handler{}
	b := hearth.Member{ID: "b", Addr: serve(t, h, ca, cert, key)}
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	oca, ocert, okey := testcert.Write(t, other)
	stranger := client(t, oca, ocert, okey)
	if _, err := stranger.Forward(t.Context(), b, "", "k", task); err == nil {
		t.Fatal("a stranger's forward was taken")
	}
	if n := len(h.got()); n != 0 {
		t.Fatalf("the handler was asked %d times for a stranger", n)
	}
}

func clientCreds(t *testing.T, caFile, certFile, keyFile string) credentials.TransportCredentials {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13})
}
