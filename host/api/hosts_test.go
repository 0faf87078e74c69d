package api_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/sdk"
)

// The hosts' API to one another, between two real daemons over TCP with
// mutual TLS. Membership is static here (the cluster's end-to-end tests
// in cmd/hearth run it on etcd): a fixed view, and a fence that lasts.

// hostCert makes a CA in dir and a certificate signed by it that a host
// presents both as server and as client, for 127.0.0.1.
func hostCert(t testing.TB, dir string) (caFile, certFile, keyFile string) {
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
	return writeFile(t, dir, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))),
		writeFile(t, dir, "host.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
		writeFile(t, dir, "host.key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
}

// staticMembership is a cluster membership without etcd: a view of the
// given members, a fence that lasts until the test ends.
type staticMembership struct {
	view  *cluster.View
	fence context.Context
}

func (s staticMembership) View() *cluster.View    { return s.view }
func (staticMembership) Changed(string)           {}
func (staticMembership) HostChanged()             {}
func (s staticMembership) Fence() context.Context { return s.fence }

// peerDaemon is a daemon with the TCP API over mutual TLS, joined to a
// static cluster as host id.
func peerDaemon(t testing.TB, id, caFile, certFile, keyFile string) (*daemon, *api.PeerHosts, *cluster.View) {
	t.Helper()
	return peerDaemonIn(t, "", id, caFile, certFile, keyFile)
}

// peerDaemonIn is peerDaemon on the data directory dataDir ("" for a new
// one).
func peerDaemonIn(t testing.TB, dataDir, id, caFile, certFile, keyFile string) (*daemon, *api.PeerHosts, *cluster.View) {
	t.Helper()
	cfg := &config.Config{DataDir: dataDir, Agents: []*config.Agent{testAgent("scripted")}}
	cfg.Server = config.Server{HTTP: "", Listen: "127.0.0.1:0",
		TLS: &config.ServerTLS{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}}
	d := startDaemon(t, cfg)
	peers, err := api.NewPeerHosts(id, cfg.Server, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peers.Close() })
	view := d.h.ClusterView(engineInfo(id, d.l.TCP))
	if err := d.h.JoinCluster(staticMembership{view: view, fence: t.Context()}, peers); err != nil {
		t.Fatal(err)
	}
	return d, peers, view
}

// TestPeerForwardRunsOnceByKey: a task forwarded twice under one key runs
// once; the second forward, and a status query, get the kept result. A
// caller that gives up while the task runs finds it running, then done,
// by its key. An agent the host does not run is refused (the task may go
// elsewhere); a host nobody listens at is unreachable.
func TestPeerForwardRunsOnceByKey(t *testing.T) {
	dir := shortTempDir(t)
	caFile, certFile, keyFile := hostCert(t, dir)
	b, _, _ := peerDaemon(t, "b", caFile, certFile, keyFile)
	_, peers, _ := peerDaemon(t, "a", caFile, certFile, keyFile)
	mb := cluster.HostInfo{ID: "b", Addr: b.l.TCP}
	ctx := t.Context()

	ran := filepath.Join(dir, "ran")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=once;echo:done"}
	for i := range 2 {
		r, err := peers.Forward(ctx, mb, "", "task-key-1", task)
		if err != nil || r.Err != nil || r.Outcome.Result.Output != "done" || r.Outcome.TaskID != "task-key-1" {
			t.Fatalf("forward %d: %+v, %v", i+1, r, err)
		}
	}
	if b, _ := os.ReadFile(ran); string(b) != "once\n" {
		t.Fatalf("the task ran %d times, want once (%q)", strings.Count(string(b), "once"), b)
	}
	st, r, err := peers.Status(ctx, mb, "task-key-1")
	if err != nil || st != cluster.TaskDone || r.Outcome.Result.Output != "done" {
		t.Fatalf("status: %v %+v %v", st, r, err)
	}
	if st, _, err := peers.Status(ctx, mb, "never-sent"); err != nil || st != cluster.TaskUnknown {
		t.Fatalf("status of a key never sent: %v %v", st, err)
	}

	// The caller gives up mid-task: the task goes on, found by its key.
	release := filepath.Join(dir, "release")
	slow := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=slow;wait:" + release + ";echo:slow"}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = peers.Forward(short, mb, "", "task-key-2", slow)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forward past its deadline: %v, want the deadline", err)
	}
	if st, _, err := peers.Status(ctx, mb, "task-key-2"); err != nil || st != cluster.TaskRunning {
		t.Fatalf("status while it runs: %v %v", st, err)
	}
	writeFile(t, dir, "release", "")
	r, err = peers.Forward(ctx, mb, "", "task-key-2", slow)
	if err != nil || r.Err != nil || r.Outcome.Result.Output != "slow" {
		t.Fatalf("forward again: %+v %v", r, err)
	}
	if b, _ := os.ReadFile(ran); string(b) != "once\nslow\n" {
		t.Fatalf("after the second task: %q, want each once", b)
	}

	// A task's own failure is its result, not a refusal.
	r, err = peers.Forward(ctx, mb, "", "task-key-3", hearth.Task{Agent: "scripted", Prompt: "fail:broken"})
	if err != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "broken") {
		t.Fatalf("a failing task: %+v %v", r, err)
	}

	_, err = peers.Forward(ctx, mb, "", "task-key-4", hearth.Task{Agent: "nobody", Prompt: "echo:x"})
	if !errors.Is(err, cluster.ErrRefused) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("an agent b does not run: %v, want a refusal naming it", err)
	}
	if st, _, _ := peers.Status(ctx, mb, "task-key-4"); st != cluster.TaskUnknown {
		t.Fatalf("a refused key is %v, want unknown", st)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	_, err = peers.Forward(ctx, cluster.HostInfo{ID: "gone", Addr: dead}, "", "task-key-5", task)
	if !errors.Is(err, cluster.ErrUnreachable) {
		t.Fatalf("a host nobody listens at: %v, want unreachable", err)
	}
}

// TestPeerForwardKeptAcrossRestart: host b runs a task forwarded under a
// key, stops and starts again on the same data directory (at another
// address); the key forwarded again gets the same result over the wire
// and the task ran once. A task b was running when it stopped is
// answered as interrupted, to a status query and to a forward, each
// error wrapping cluster.ErrInterrupted (not a refusal) and saying it
// once; the task did not start again.
func TestPeerForwardKeptAcrossRestart(t *testing.T) {
	dir := shortTempDir(t)
	caFile, certFile, keyFile := hostCert(t, dir)
	// Apart from dir: a confined plugin cannot add entries beside a data
	// directory.
	data := filepath.Join(shortTempDir(t), "data")
	b, _, _ := peerDaemonIn(t, data, "b", caFile, certFile, keyFile)
	_, peers, _ := peerDaemon(t, "a", caFile, certFile, keyFile)
	mb := cluster.HostInfo{ID: "b", Addr: b.l.TCP}
	ctx := t.Context()

	ran, release := filepath.Join(dir, "ran"), filepath.Join(dir, "release")
	task := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=once;echo:done"}
	first, err := peers.Forward(ctx, mb, "", "key-1", task)
	if err != nil || first.Err != nil || first.Outcome.Result.Output != "done" {
		t.Fatalf("forward: %+v %v", first, err)
	}
	slow := hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=slow;wait:" + release + ";echo:slow"}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = peers.Forward(short, mb, "", "key-2", slow)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forward past its deadline: %v", err)
	}
	// b stops at once: the slow task is cancelled.
	stopped, stop := context.WithCancel(ctx)
	stop()
	b.l.Close(stopped)
	_ = b.h.Close(stopped)

	b, _, _ = peerDaemonIn(t, data, "b", caFile, certFile, keyFile)
	mb = cluster.HostInfo{ID: "b", Addr: b.l.TCP}
	again, err := peers.Forward(ctx, mb, "", "key-1", task)
	if err != nil || again.Err != nil || again.Outcome.Result.Output != "done" || again.Outcome.Session != first.Outcome.Session {
		t.Fatalf("forward again after b restarted: %+v %v", again, err)
	}
	if st, r, err := peers.Status(ctx, mb, "key-1"); err != nil || st != cluster.TaskDone || r.Outcome.Result.Output != "done" {
		t.Fatalf("status of key-1: %v %+v %v", st, r, err)
	}
	st, r, err := peers.Status(ctx, mb, "key-2")
	if err != nil || st != cluster.TaskInterrupted || !errors.Is(r.Err, cluster.ErrInterrupted) || !strings.Contains(r.Err.Error(), "key-2") {
		t.Fatalf("status of key-2: %v %v %v, want interrupted", st, r.Err, err)
	}
	writeFile(t, dir, "release", "")
	_, err = peers.Forward(ctx, mb, "", "key-2", slow)
	if !errors.Is(err, cluster.ErrInterrupted) || errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("forward key-2 again: %v, want ErrInterrupted", err)
	}
	if n := strings.Count(err.Error(), cluster.ErrInterrupted.Error()); n != 1 {
		t.Errorf("the error says it %d times: %v", n, err)
	}
	if b, _ := os.ReadFile(ran); string(b) != "once\nslow\n" {
		t.Fatalf("the agent's side effects: %q, want each task started once", b)
	}
}

// TestPeerRefusesAStranger: a host whose certificate another CA signed
// is not let in; nothing runs.
func TestPeerRefusesAStranger(t *testing.T) {
	dir := shortTempDir(t)
	caFile, certFile, keyFile := hostCert(t, dir)
	b, _, _ := peerDaemon(t, "b", caFile, certFile, keyFile)
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	oca, ocert, okey := hostCert(t, other)
	stranger, err := api.NewPeerHosts("x", config.Server{Listen: "127.0.0.1:0",
		TLS: &config.ServerTLS{CertFile: ocert, KeyFile: okey, ClientCAFile: oca}}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	ran := filepath.Join(dir, "ran")
	_, err = stranger.Forward(t.Context(), cluster.HostInfo{ID: "b", Addr: b.l.TCP}, "", "k", hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x"})
	if err == nil {
		t.Fatal("a stranger's forward was taken")
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a stranger's task ran: %v", err)
	}
	if !contains(b.log.String(), "TLS handshake failed") {
		t.Errorf("b did not log the refused stranger:\n%s", b.log)
	}
}

// TestPeerNeedsMutualTLS: cluster mode refuses a server block without
// mutual TLS, saying what to set.
func TestPeerNeedsMutualTLS(t *testing.T) {
	for _, srv := range []config.Server{{}, {Listen: "127.0.0.1:0", TokenFile: "t"}} {
		_, err := api.NewPeerHosts("a", srv, time.Second)
		if !errors.Is(err, api.ErrNoPeerTLS) || !strings.Contains(err.Error(), "client_ca_file") {
			t.Errorf("server %+v: %v", srv, err)
		}
	}
}

func engineInfo(id, addr string) engine.ClusterInfo { return engine.ClusterInfo{ID: id, Addr: addr} }

// TestSubmitRefusedGoesElsewhere: host a places a task on b's session,
// which knows its package; b refuses it (its lease is lost: its fence
// has ended), so a places it again without b's session, and runs it
// itself. The task ran once, on a.
func TestSubmitRefusedGoesElsewhere(t *testing.T) {
	dir := shortTempDir(t)
	caFile, certFile, keyFile := hostCert(t, dir)
	hb, _, bview := peerDaemon(t, "b", caFile, certFile, keyFile)
	ha, _, view := peerDaemon(t, "a", caFile, certFile, keyFile)
	ctx := t.Context()
	if _, err := hb.h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:pkg/b/x.go"}); err != nil {
		t.Fatal(err)
	}
	// b loses its lease: a new membership whose fence has ended.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := hb.h.JoinCluster(staticMembership{view: bview, fence: ended}, nil); err != nil {
		t.Fatal(err)
	}
	changes := []cluster.Change{
		{Kind: cluster.KeyHost, Host: "a", Info: ha.h.ClusterSource().Host()},
		{Kind: cluster.KeyHost, Host: "b", Info: hb.h.ClusterSource().Host()},
	}
	for _, s := range hb.h.ClusterSource().Sessions() {
		changes = append(changes, cluster.Change{Kind: cluster.KeySession, Host: "b", Summary: s})
	}
	view.Apply(1, changes)

	d, err := ha.h.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/b"}})
	if err != nil || d.Host != "b" {
		t.Fatalf("place: %+v %v, want b's session", d, err)
	}
	ran := filepath.Join(dir, "ran")
	out, err := ha.h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x;echo:ok", Hints: sdk.Hints{Directories: []string{"pkg/b"}}})
	if err != nil || out.Decision.Host != "" || out.Result.Output != "ok" {
		t.Fatalf("submit: %+v %v, want it run on a after b refused", out, err)
	}
	if b, _ := os.ReadFile(ran); string(b) != "x\n" {
		t.Fatalf("the task ran %q, want once", b)
	}
}
