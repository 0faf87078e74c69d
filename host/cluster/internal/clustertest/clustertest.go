// Package clustertest starts real hosts of a cluster for the tests of
// the cluster's packages: an engine with the scripted test agent as a real
// plugin (the test binary re-executing itself), its store on a temporary
// directory, its member (host/cluster/member) on a static membership or,
// with Daemon, behind a real daemon whose TCP API the hosts reach one
// another on with mutual TLS. Membership is static here: the test feeds
// each member's view as etcd's watch would (host/cluster/etcd tests the
// etcd side, cmd/hearth the whole on a real etcd).
//
// A test binary that uses it calls Main from its TestMain.
package clustertest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/member"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// The test binary doubles as the scripted agent's plugin:
// HEARTH_TEST_PLUGIN=agent serves it, with HEARTH_TEST_CAPACITY slots a
// session.
const (
	envPlugin   = "HEARTH_TEST_PLUGIN"
	envCapacity = "HEARTH_TEST_CAPACITY"
)

// Main is a TestMain: it serves the scripted agent when the test binary
// runs as its plugin, and otherwise runs the tests and checks that none
// leaves a goroutine behind.
func Main(m *testing.M) {
	if os.Getenv(envPlugin) != "" {
		capacity, _ := strconv.Atoi(os.Getenv(envCapacity))
		plugin.Serve(testagent.New("scripted", capacity))
		os.Exit(0)
	}
	// The one goroutine that starts plugins lives as long as the process,
	// locked to its thread: the parent-death signal is tied to the thread
	// that started the child (golang/go#27505).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}

// Agent is the scripted agent (internal/testagent), served by the test
// binary, with capacity slots a session (0: one).
func Agent(capacity int) *config.Agent {
	a := config.DefaultAgent("scripted")
	a.Command = []string{os.Args[0]}
	// A -race binary sleeps a second on exit so that late races get
	// reported; plugins are stopped all the time here, so skip it.
	a.Env = map[string]string{envPlugin: "agent", "GORACE": "atexit_sleep_ms=0"}
	if capacity > 0 {
		a.Capacity = capacity
		a.Env[envCapacity] = strconv.Itoa(capacity)
	}
	a.StartTimeout = 20 * time.Second // a -race test binary is slow to start on a loaded machine
	a.Workspace = os.TempDir()
	return a
}

// Certs makes a CA in dir and a certificate signed by it that a host
// presents both as server and as client, for 127.0.0.1.
func Certs(t testing.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "peer CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "host"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("host.pem", "CERTIFICATE", der), write("host.key", "EC PRIVATE KEY", kb)
}

// TempDir is a temporary directory with a short path (a unix socket's
// path is at most 107 bytes), removed when the test ends.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hcl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Static is a membership without etcd: a fence the test ends when it
// likes (the host's lease lost), nothing published.
type Static struct {
	mu    sync.Mutex
	fence context.Context
}

// NewStatic returns a membership whose fence lasts as long as fence.
func NewStatic(fence context.Context) *Static { return &Static{fence: fence} }

// SetFence replaces the fence, as a new lease would.
func (s *Static) SetFence(fence context.Context) {
	s.mu.Lock()
	s.fence = fence
	s.mu.Unlock()
}

func (s *Static) Fence() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

func (*Static) Changed(string) {}
func (*Static) HostChanged()   {}
func (*Static) Close() error   { return nil }

// Options say what host to start.
type Options struct {
	// ID is the host's cluster ID.
	ID string
	// DataDir is its data directory; a new temporary one when empty.
	DataDir string
	// CA, Cert and Key are the hosts' mutual TLS (Certs); a CA of its own
	// when empty.
	CA, Cert, Key string
	// Agent is the host's agent; Agent(0) when nil.
	Agent *config.Agent
	// Daemon serves the host's API, the peer service with it, on the
	// unix socket and on TCP with mutual TLS.
	Daemon bool
	// Now is the host's clock; the wall clock when nil.
	Now func() time.Time
	// Fence is the static membership's fence: the test's context when
	// nil.
	Fence context.Context
	// Made, when set, is called with the member once it is made, before
	// the engine takes it.
	Made func(*member.Member)
}

// Host is a started host: its engine, store, member and, with
// Options.Daemon, daemon.
type Host struct {
	ID      string
	DataDir string
	Engine  *engine.Engine
	Store   *store.Store
	Member  *member.Member
	Static  *Static
	// Listeners are the daemon's, with Options.Daemon.
	Listeners *api.Listeners
	// Log holds what the host logged at Warn and above.
	Log *Buffer

	closeOnce sync.Once
}

// Start starts a host for o and joins it to its static cluster. Close it
// to stop it as a process would stop; it is closed when the test ends.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = filepath.Join(TempDir(t), "data")
	}
	if o.Agent == nil {
		o.Agent = Agent(0)
	}
	if o.Fence == nil {
		o.Fence = t.Context()
	}
	if o.CA == "" {
		o.CA, o.Cert, o.Key = Certs(t, TempDir(t))
	}
	h := &Host{ID: o.ID, DataDir: o.DataDir, Static: NewStatic(o.Fence), Log: &Buffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: io.MultiWriter(h.Log, testWriter{t})})
	srv := config.Server{Listen: "127.0.0.1:" + strconv.Itoa(freePort(t)),
		TLS: &config.ServerTLS{CertFile: o.Cert, KeyFile: o.Key, ClientCAFile: o.CA}}
	mo := member.Options{Cluster: cluster.Config{Endpoints: []string{"http://127.0.0.1:2379"}, HostID: o.ID},
		Server: srv, DataDir: o.DataDir, Logger: logger, Membership: h.Static}
	var err error
	if h.Member, err = member.New(mo); err != nil {
		t.Fatal(err)
	}
	if o.Made != nil {
		o.Made(h.Member)
	}
	if h.Store, err = store.Open(o.DataDir, store.Write, store.Options{Logger: logger}); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{DataDir: o.DataDir, Agents: []*config.Agent{o.Agent}, Matcher: config.DefaultMatcher(), Server: srv}
	if h.Engine, err = engine.New(engine.Options{Config: cfg, Logger: logger, Store: h.Store, Now: o.Now, Cluster: h.Member}); err != nil {
		_ = h.Store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if o.Daemon {
		d := api.NewServer(api.Options{Engine: h.Engine, Logger: logger, Version: "test", Register: h.Member.Register})
		if h.Listeners, err = d.Listen(srv, o.DataDir); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Member.Join(t.Context()); err != nil {
		t.Fatal(err)
	}
	return h
}

// Close stops the host as `hearth serve` does: it leaves the cluster,
// closes the daemon's listeners and the engine within ctx (a context
// already done: tasks in flight are cancelled), then the store.
func (h *Host) Close(ctx context.Context) {
	h.closeOnce.Do(func() {
		_ = h.Member.Leave()
		if h.Listeners != nil {
			h.Listeners.Close(ctx)
		}
		_ = h.Engine.Close(ctx)
		_ = h.Store.Close()
	})
}

// Record is what etcd's watch would bring another host about h: its
// record and its sessions' summaries.
func (h *Host) Record(t testing.TB) []cluster.Change {
	t.Helper()
	src := h.Member.Source()
	changes := []cluster.Change{{Kind: cluster.KeyHost, Host: h.ID, Info: src.Host()}}
	for _, s := range src.Sessions() {
		changes = append(changes, cluster.Change{Kind: cluster.KeySession, Host: h.ID, Summary: s})
	}
	return changes
}

// freePort returns a TCP port free on the loopback interface now, for a
// host's advertised address, which its member needs before the daemon
// listens.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFile waits until path exists: a step of the scripted agent
// ("touch:", "append:") that tells the test where its task is.
func WaitFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// Lines are the whitespace-separated words of the file at path: what the
// scripted agent's "append:" steps wrote; none for a file not there.
func Lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// testWriter sends log lines to the test's log, and drops them once the
// test is over (plugins may log while being stopped in Cleanup).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	defer func() { _ = recover() }()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// Buffer collects a host's log for assertions.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
