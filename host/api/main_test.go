package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/hostile"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// The test binary doubles as the scripted test agent's plugin
// (HEARTH_TEST_PLUGIN=agent), as in package engine.
const envPlugin = "HEARTH_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envPlugin); mode != "" {
		switch mode {
		case "caller":
			plugin.Serve(caller{testagent.New("scripted", 0)}) // peer_test.go
		case "hostile":
			plugin.Serve(hostile.Agent{}) // escape_test.go
		}
		plugin.Serve(testagent.New("scripted", 0))
		os.Exit(0)
	}
	if os.Getenv(envStranger) != "" {
		stranger() // another user of the machine: stranger_test.go
		os.Exit(0)
	}
	if sock := os.Getenv(envImpostor); sock != "" {
		impostor(sock) // another user's socket: stranger_test.go
		os.Exit(0)
	}
	// Every daemon a test starts is closed by its cleanup: nothing of it
	// may be left running. The one goroutine that starts plugins lives as
	// long as the process, locked to its thread: the parent-death signal
	// is tied to the thread that started the child (golang/go#27505).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hearth-dev/hearth/host/internal/procgroup.spawn.func1.1"))
}

// testAgent is the scripted agent, served by this test binary.
func testAgent(name string) *config.Agent {
	a := config.DefaultAgent(name)
	a.Command = []string{os.Args[0]}
	a.Env = map[string]string{envPlugin: "agent", "GORACE": "atexit_sleep_ms=0"}
	a.StartTimeout = 20 * time.Second // a -race test binary is slow to start
	a.Workspace = os.TempDir()
	return a
}

// daemon is a real daemon for a test: a host on a temp data directory
// with its listeners, and a client on its socket.
type daemon struct {
	h   *engine.Engine
	srv *api.Server
	l   *api.Listeners
	c   *client.Client
	dir string
	// token is what HTTP clients present: the token file's.
	token   string
	metrics *api.Metrics
	log     *syncBuffer
}

// syncBuffer collects the daemon's log for assertions.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// shortTempDir is a temp directory with a path short enough for a unix
// socket (t.TempDir's can pass the 107-byte limit).
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startDaemon starts a daemon for cfg (its DataDir set to a temp
// directory when empty), with HTTP on a free loopback port unless the
// config says otherwise; more change the server's options.
func startDaemon(t testing.TB, cfg *config.Config, more ...func(*api.Options)) *daemon {
	t.Helper()
	return startTracedDaemon(t, cfg, nil, more...)
}

// startTracedDaemon is startDaemon with the host's tracing tp (nil for
// none).
func startTracedDaemon(t testing.TB, cfg *config.Config, tp *telemetry.Provider, more ...func(*api.Options)) *daemon {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(shortTempDir(t), "data")
	}
	if cfg.Matcher == (config.Matcher{}) {
		cfg.Matcher = config.DefaultMatcher()
	}
	if cfg.Server == (config.Server{}) {
		cfg.Server.HTTP = "127.0.0.1:0"
	}
	d := &daemon{dir: cfg.DataDir, metrics: api.NewMetrics(), log: &syncBuffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: d.log})
	var err error
	d.h, err = engine.New(engine.Options{Config: cfg, Logger: logger, Version: "test", Observe: d.metrics.Observe, Telemetry: tp})
	if err != nil {
		t.Fatal(err)
	}
	opts := api.Options{Engine: d.h, Logger: logger, Metrics: d.metrics}
	for _, f := range more {
		f(&opts)
	}
	d.srv = api.NewServer(opts)
	d.l, err = d.srv.Listen(cfg.Server, cfg.DataDir)
	if err != nil {
		_ = d.h.Close(context.Background())
		t.Fatal(err)
	}
	if d.l.TokenFile != "" {
		b, err := os.ReadFile(d.l.TokenFile)
		if err != nil {
			t.Fatal(err)
		}
		d.token = strings.TrimSpace(string(b))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.l.Close(ctx)
		if err := d.h.Close(ctx); err != nil {
			t.Errorf("close the host: %v", err)
		}
	})
	d.c = dial(t, client.Options{DataDir: cfg.DataDir})
	return d
}

func dial(t testing.TB, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSecret writes an owner-only file, as a token file must be.
func writeSecret(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond until it holds; only for state the daemon exposes
// no signal for (a socket file, a log line).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// httpGet fetches url (with the bearer token, if any) and returns its
// body; a status other than 200 fails the test.
func httpGet(t testing.TB, url, token string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
