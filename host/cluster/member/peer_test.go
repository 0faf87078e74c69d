package member_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/internal/testcert"
)

// The hosts' API to one another (host/cluster/peer) end to end, between
// real daemons over TCP with mutual TLS: each host an engine with its
// member, behind a daemon that serves the peer service. Membership is
// static here (the cluster's end-to-end tests in cmd/hearth run it on
// etcd): a fence that lasts.

// peerDaemon is a daemon of host id on the data directory dataDir ("" for
// a new one), joined to a static cluster, its TCP API over mutual TLS.
func peerDaemon(t testing.TB, dataDir, id, caFile, certFile, keyFile string) *testHost {
	t.Helper()
	return startHost(t, hostOptions{ID: id, DataDir: dataDir, CA: caFile, Cert: certFile, Key: keyFile, Daemon: true})
}

// peerClient is host id's client of the other hosts' APIs.
func peerClient(t testing.TB, id, caFile, certFile, keyFile string) *peer.Client {
	t.Helper()
	c, err := peer.NewClient(id, peer.TLS{CertFile: certFile, KeyFile: keyFile, CAFile: caFile}, "", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// writeRelease writes the file "release" in dir, which a scripted task's
// "wait:" step waits for.
func writeRelease(t testing.TB, dir string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPeerForwardRunsOnceByKey: a task forwarded twice under one key runs
// once; the second forward, and a status query, get the kept result. A
// caller that gives up while the task runs finds it running, then done,
// by its key. An agent the host does not run is refused (the task may go
// elsewhere); a host nobody listens at is unreachable.
func TestPeerForwardRunsOnceByKey(t *testing.T) {
	dir := tempDir(t)
	caFile, certFile, keyFile := testcert.Write(t, dir)
	b := peerDaemon(t, "", "b", caFile, certFile, keyFile)
	peers := peerClient(t, "a", caFile, certFile, keyFile)
	mb := hearth.Member{ID: "b", Addr: b.Listeners.TCP}
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
	writeRelease(t, dir)
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
	_, err = peers.Forward(ctx, hearth.Member{ID: "gone", Addr: dead}, "", "task-key-5", task)
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
	dir := tempDir(t)
	caFile, certFile, keyFile := testcert.Write(t, dir)
	// Apart from dir: a confined plugin cannot add entries beside a data
	// directory.
	data := filepath.Join(tempDir(t), "data")
	b := peerDaemon(t, data, "b", caFile, certFile, keyFile)
	peers := peerClient(t, "a", caFile, certFile, keyFile)
	mb := hearth.Member{ID: "b", Addr: b.Listeners.TCP}
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
	b.Close(stopped)

	b = peerDaemon(t, data, "b", caFile, certFile, keyFile)
	mb = hearth.Member{ID: "b", Addr: b.Listeners.TCP}
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
	writeRelease(t, dir)
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
	dir := tempDir(t)
	caFile, certFile, keyFile := testcert.Write(t, dir)
	b := peerDaemon(t, "", "b", caFile, certFile, keyFile)
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	oca, ocert, okey := testcert.Write(t, other)
	stranger := peerClient(t, "x", oca, ocert, okey)
	ran := filepath.Join(dir, "ran")
	_, err := stranger.Forward(t.Context(), hearth.Member{ID: "b", Addr: b.Listeners.TCP}, "", "k", hearth.Task{Agent: "scripted", Prompt: "append:" + ran + "=x"})
	if err == nil {
		t.Fatal("a stranger's forward was taken")
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a stranger's task ran: %v", err)
	}
	// Logged once b refused the handshake, which the stranger may learn
	// of first.
	b.Log.wait(t, "TLS handshake failed")
}
