package member_test

// The tests' kit: real hosts of a cluster, each an engine with the
// scripted test agent as a real plugin (the test binary re-executing
// itself), its store on a temporary directory, its member on a static
// membership or, with hostOptions.Daemon, behind a real daemon whose TCP
// API the hosts reach one another on with mutual TLS. Membership is
// static here: the test feeds each member's view as etcd's watch would
// (host/cluster/etcd tests the etcd side, cmd/hearth the whole on a real
// etcd).

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/internal/testnet"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// The test binary doubles as the scripted agent's plugin:
// HEARTH_TEST_PLUGIN=agent serves it, with HEARTH_TEST_CAPACITY slots a
// session.
const (
	envPlugin   = "HEARTH_TEST_PLUGIN"
	envCapacity = "HEARTH_TEST_CAPACITY"
)

// TestMain serves the scripted agent when the test binary runs as its
// plugin, and otherwise runs the tests and checks that none leaves a
// goroutine behind.
func TestMain(m *testing.M) {
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

// testAgent is the scripted agent (internal/testagent), served by the test
// binary, with capacity slots a session (0: one).
func testAgent(capacity int) *config.Agent {
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
	// Unconfined, as the pool's tests run it: confined, a data directory
	// inside the workspace has the shim grant every other entry of the
	// temporary directory by name, and a busy machine's /tmp holds
	// enough of them for fork/exec to fail with E2BIG (the cluster's
	// tests are not about confinement; host/engine's confine tests are).
	a.Confinement = config.ConfinementOff
	return a
}

// tempDir is a temporary directory with a short path (a unix socket's
// path is at most 107 bytes), removed when the test ends.
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hcl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// static is a membership without etcd: a fence the test ends when it
// likes (the host's lease lost), nothing published.
type static struct {
	mu    sync.Mutex
	fence context.Context
	done  map[string]cluster.Completion // the completions written here
}

// newStatic returns a membership whose fence lasts as long as fence.
func newStatic(fence context.Context) *static { return &static{fence: fence} }

// SetFence replaces the fence, as a new lease would.
func (s *static) SetFence(fence context.Context) {
	s.mu.Lock()
	s.fence = fence
	s.mu.Unlock()
}

func (s *static) Fence() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

// Complete keeps c while fence is held, as etcd does while the lease is.
func (s *static) Complete(_, fence context.Context, c cluster.Completion) error {
	epoch, err := cluster.Held(fence, time.Now())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(map[string]cluster.Completion)
	}
	if prev, ok := s.done[c.Key]; ok {
		return fmt.Errorf("%w: task %s completed already on %s", cluster.ErrFenced, c.Key, prev.Host)
	}
	c.Epoch = epoch
	s.done[c.Key] = c
	return nil
}

func (s *static) Completion(_ context.Context, key string) (cluster.Completion, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.done[key]
	return c, ok, nil
}

func (*static) Changed(string) {}
func (*static) HostChanged()   {}
func (*static) PublishNow()    {}
func (*static) Close() error   { return nil }

// hostOptions say what host to start.
type hostOptions struct {
	// ID is the host's cluster ID.
	ID string
	// DataDir is its data directory; a new temporary one when empty.
	DataDir string
	// CA, Cert and Key are the hosts' mutual TLS (testcert.Write); a CA of its own
	// when empty.
	CA, Cert, Key string
	// Agent is the host's agent; testAgent(0) when nil.
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

// testHost is a started host: its engine, store, member and, with
// hostOptions.Daemon, daemon.
type testHost struct {
	ID         string
	DataDir    string
	Engine     *engine.Engine
	Store      *store.Store
	Member     *member.Member
	membership *static
	// Listeners are the daemon's, with hostOptions.Daemon.
	Listeners *api.Listeners
	// Log holds what the host logged at Warn and above.
	Log *logBuffer

	closeOnce sync.Once
}

// startHost starts a host for o and joins it to its static cluster. Close it
// to stop it as a process would stop; it is closed when the test ends.
func startHost(t testing.TB, o hostOptions) *testHost {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = filepath.Join(tempDir(t), "data")
	}
	if o.Agent == nil {
		o.Agent = testAgent(0)
	}
	if o.Fence == nil {
		o.Fence = t.Context()
	}
	if o.CA == "" {
		o.CA, o.Cert, o.Key = testcert.Write(t, tempDir(t))
	}
	h := &testHost{ID: o.ID, DataDir: o.DataDir, membership: newStatic(o.Fence), Log: &logBuffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: io.MultiWriter(h.Log, testWriter{t})})
	srv := config.Server{Listen: "127.0.0.1:" + strconv.Itoa(testnet.FreePort(t)),
		TLS: &config.ServerTLS{CertFile: o.Cert, KeyFile: o.Key, ClientCAFile: o.CA}}
	mo := member.Options{Cluster: cluster.Config{Endpoints: []string{"http://127.0.0.1:2379"}, HostID: o.ID},
		Listen: srv.Listen, TLS: &peer.TLS{CertFile: o.Cert, KeyFile: o.Key, CAFile: o.CA},
		DataDir: o.DataDir, Logger: logger, Membership: h.membership}
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
	if h.Engine, err = engine.New(engine.Options{Config: cfg, Logger: logger, Store: h.Store, Now: o.Now, Version: "test", Cluster: h.Member}); err != nil {
		_ = h.Store.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if o.Daemon {
		d := api.NewServer(api.Options{Engine: h.Engine, Logger: logger, Register: h.Member.Register})
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
func (h *testHost) Close(ctx context.Context) {
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
func (h *testHost) Record(t testing.TB) []cluster.Change {
	t.Helper()
	src := h.Member.Source()
	changes := []cluster.Change{{Kind: cluster.KeyHost, Host: h.ID, Info: src.Host()}}
	for _, s := range src.Sessions() {
		changes = append(changes, cluster.Change{Kind: cluster.KeySession, Host: h.ID, Summary: s})
	}
	return changes
}

// waitFile waits until path exists: a step of the scripted agent
// ("touch:", "append:") that tells the test where its task is.
func waitFile(t testing.TB, path string) {
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

// lines are the whitespace-separated words of the file at path: what the
// scripted agent's "append:" steps wrote; none for a file not there.
func lines(t testing.TB, path string) []string {
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

// logBuffer collects a host's log for assertions.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced at each write
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.b.Write(p)
}

// wait waits until the log holds s, failing the test after 20 s: a line
// a host logs after its client has its answer (a refused handshake).
func (b *logBuffer) wait(t testing.TB, s string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		if strings.Contains(b.b.String(), s) {
			b.mu.Unlock()
			return
		}
		if b.written == nil {
			b.written = make(chan struct{})
		}
		w := b.written
		b.mu.Unlock()
		select {
		case <-w:
		case <-deadline.C:
			t.Fatalf("the log does not hold %q within 20s:\n%s", s, b)
		}
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
