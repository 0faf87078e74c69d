// Package clustertest runs a real etcd server for tests: embedded in the
// test process, on loopback ports of its own (internal/testnet.FreePort)
// and a temporary data directory. It is the one embedded etcd of the
// module's tests (host/cluster/etcd's, and cmd/hearth's cluster tests,
// which run `hearth serve` processes against it), so that every test of
// the cluster meets etcd configured the same way.
//
// Elections are fast (10 ms ticks, 100 ms election timeout), which is
// what lets the tests' hosts take a 2 s lease TTL: etcd's least lease TTL
// is 1.5 election timeouts, rounded up to a second. Writes are not
// fsynced: a test's etcd outlives no power loss. An etcd can be stopped
// and started again on the same directory and ports, as an operator
// restarts one.
//
// It is a test kit: no package the hearth binary links imports it
// (docs/architecture.md, the rules), so the binary links no etcd server.
package clustertest

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/hearth-dev/hearth/internal/testnet"
)

// Etcd is an etcd server of one test, a cluster of one member named
// "test". Its methods are for the test's goroutine, as testing.TB's
// Fatal is.
type Etcd struct {
	t testing.TB
	// Dir is its data directory.
	Dir string
	// ClientURL is where clients reach it; PeerURL, where its raft peers
	// would (it has none).
	ClientURL, PeerURL url.URL
	// ClientTLS, when set before Start, makes the client URL https and
	// asks clients for the certificates it names (ClientCertAuth).
	ClientTLS *transport.TLSInfo

	e *embed.Etcd
}

// NewEtcd picks an etcd's data directory and ports and starts nothing:
// for a test that sets ClientTLS before Start, or runs another etcd
// program on them. It is stopped when the test ends.
func NewEtcd(t testing.TB) *Etcd {
	t.Helper()
	s := &Etcd{t: t, Dir: t.TempDir(),
		ClientURL: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t))},
		PeerURL:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t))},
	}
	t.Cleanup(s.Stop)
	return s
}

// StartEtcd starts an etcd and waits until it serves; it is stopped
// when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	s := NewEtcd(t)
	s.Start()
	return s
}

// Start starts the server on its directory and ports and waits until it
// serves, failing the test when it does not within 20 s.
func (s *Etcd) Start() {
	s.t.Helper()
	if s.ClientTLS != nil {
		s.ClientURL.Scheme = "https"
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "test", s.Dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{s.ClientURL}, []url.URL{s.ClientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{s.PeerURL}, []url.URL{s.PeerURL}
	cfg.InitialCluster = "test=" + s.PeerURL.String()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.UnsafeNoFsync = true
	if s.ClientTLS != nil {
		cfg.ClientTLSInfo = *s.ClientTLS
	}
	var (
		e   *embed.Etcd
		err error
	)
	// A port the previous server just released may linger briefly.
	for range 50 {
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("starting etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		e.Close()
		s.t.Fatal("etcd did not become ready in 20s")
	}
	s.e = e
}

// Stop stops the server, keeping its directory; a server not running is
// left as it is.
func (s *Etcd) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// Restart stops the server and starts it again on the same directory
// and ports.
func (s *Etcd) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Endpoints are the client URLs, as a client's configuration takes them.
func (s *Etcd) Endpoints() []string { return []string{s.ClientURL.String()} }

// Revision is the server's current revision: every write transaction
// adds one. The server must be running.
func (s *Etcd) Revision() int64 { return s.e.Server.KV().Rev() }
