package etcd

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/sdk"
)

// TestCompletionFenced: a host completes a forwarded task by writing its
// completion under its lease, which any host reads back; writing it
// again (a retry whose first outcome was unknown) is the same
// completion; another host's completion of the same task is refused.
// The lease lost at etcd while the host does not know it yet (as after
// a pause: here revoked behind its back, its fence still open and its
// bound not passed) is refused by etcd itself: the stale result never
// completes, and neither does one written after the host registered
// again under a new lease.
func TestCompletionFenced(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a, b := startNode(t, etcd, "a"), startNode(t, etcd, "b")
	ctx := t.Context()
	out := &hearth.Outcome{TaskID: "k1", Session: "coder-1", Result: sdk.Result{Output: "done"}}

	fence := a.Fence()
	if err := a.Complete(ctx, fence, cluster.Completion{Key: "k1", From: "b", Finished: time.Now(), Result: cluster.Result{Outcome: out}}); err != nil {
		t.Fatalf("completing under a held lease: %v", err)
	}
	lease, _ := a.Lease()
	c, found, err := b.Completion(ctx, "k1")
	if err != nil || !found || c.Host != "a" || c.Epoch != lease || c.Result.Outcome == nil || c.Result.Outcome.Result.Output != "done" {
		t.Fatalf("b reads k1's completion: %+v %v %v, want a's under lease %x with its outcome", c, found, err, lease)
	}
	if err := a.Complete(ctx, fence, cluster.Completion{Key: "k1", Result: cluster.Result{Outcome: out}}); err != nil {
		t.Errorf("the same completion again: %v", err)
	}
	if err := b.Complete(ctx, b.Fence(), cluster.Completion{Key: "k1", Result: cluster.Result{Outcome: out}}); !errors.Is(err, cluster.ErrFenced) {
		t.Errorf("b completing a task a completed: %v, want ErrFenced", err)
	}
	if _, found, err := b.Completion(ctx, "k9"); found || err != nil {
		t.Errorf("a task nobody completed: found %v, %v", found, err)
	}

	// a's lease is revoked behind its back: its fence is still open, as
	// on a host that just woke and has not heard yet.
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		t.Fatal(err)
	}
	err = a.Complete(ctx, fence, cluster.Completion{Key: "k2", Result: cluster.Result{Err: errors.New("the task's own failure")}})
	if !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("completing under a revoked lease: %v, want ErrFenced", err)
	}
	if _, found, _ := b.Completion(ctx, "k2"); found {
		t.Fatal("a stale completion was written")
	}
	// a registers again, under a new lease; the old fence stays stale.
	deadline := time.NewTimer(5 * testTTL)
	defer deadline.Stop()
	for {
		ch := a.StateChanged()
		if l, ok := a.Lease(); ok && l != lease {
			break
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatal("a did not register again under a new lease")
		}
	}
	if err := a.Complete(ctx, fence, cluster.Completion{Key: "k2", Result: cluster.Result{Outcome: out}}); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("completing under the lease before the last registration: %v, want ErrFenced", err)
	}
	if err := a.Complete(ctx, a.Fence(), cluster.Completion{Key: "k2", Result: cluster.Result{Err: errors.New("the task's own failure")}}); err != nil {
		t.Fatalf("completing under the new lease: %v", err)
	}
	if c, _, _ := b.Completion(ctx, "k2"); c.Result.Err == nil || c.Result.Err.Error() != "the task's own failure" {
		t.Errorf("k2's completion keeps its error: %+v", c)
	}
}

// TestFenceBound: the lease's bound is a renewal's send time plus the
// TTL, so it moves on while the host renews and is never past the
// lease's expiry at etcd.
func TestFenceBound(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a := startNode(t, etcd, "a")
	before := time.Now()
	if _, err := cluster.Held(a.Fence(), before); err != nil {
		t.Fatalf("a registered host's fence: %v", err)
	}
	a.mu.Lock()
	l := a.sess
	a.mu.Unlock()
	first := l.Until()
	if first.After(before.Add(testTTL)) {
		t.Fatalf("bound %s is later than now plus the TTL", first)
	}
	// The next renewal moves it on: wait for it on the bound itself
	// (renewals come every third of the TTL).
	deadline := time.Now().Add(3 * testTTL)
	for !l.Until().After(first) {
		if time.Now().After(deadline) {
			t.Fatal("the bound did not move in 3 TTLs")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cluster.Held(a.Fence(), first.Add(-time.Millisecond)); err != nil {
		t.Errorf("held before the bound: %v", err)
	}
	if _, err := cluster.Held(a.Fence(), l.Until()); !errors.Is(err, cluster.ErrFenced) {
		t.Errorf("at the bound (a host that woke after it): %v, want ErrFenced", err)
	}
}
