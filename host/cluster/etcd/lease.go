package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hearth-dev/hearth/host/cluster"
)

// lease keeps one etcd lease alive and knows, at every moment, until when
// it is held for certain: the host's fence (cluster.Held).
//
// etcd's concurrency.Session keeps a lease alive too, but says only that
// its keep-alive gave up, which its goroutine notices up to half a second
// after the lease's deadline (and later still after a pause of the whole
// process). Here each renewal is one request (KeepAliveOnce) whose send
// time is known: etcd renewed the lease after it was sent, so the lease
// is held at least until the send time plus the TTL etcd answered with.
// That bound is on this host's monotonic clock, which runs on while the
// process is stopped, so a host that wakes from a pause finds the bound
// passed before any goroutine has run.
type lease struct {
	client *clientv3.Client
	id     clientv3.LeaseID
	ttl    time.Duration

	ctx    context.Context // the fence: ends when the lease is lost or given up
	cancel context.CancelFunc
	done   chan struct{} // closed when the keep-alive stopped

	mu    sync.Mutex
	until time.Time
	// why says why the keep-alive stopped, once it has (Done).
	why string
}

// keepLease keeps lease id, granted with ttl by a request sent at sent,
// alive until it is lost or stop (Orphan) is called; parent ending stops
// it too.
func keepLease(parent context.Context, c *clientv3.Client, id clientv3.LeaseID, ttl time.Duration, sent time.Time) *lease {
	l := &lease{client: c, id: id, ttl: ttl, until: sent.Add(ttl), done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(parent)
	go l.keep()
	return l
}

// The lease as cluster.Lease.
var _ cluster.Lease = (*lease)(nil)

// Epoch is the lease's ID.
func (l *lease) Epoch() int64 { return int64(l.id) }

// Until is when the lease is held until for certain.
func (l *lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Lease is the lease's ID.
func (l *lease) Lease() clientv3.LeaseID { return l.id }

// Ctx is the fence: it ends when the lease is lost.
func (l *lease) Ctx() context.Context { return l.ctx }

// Done is closed once the keep-alive stopped: the lease is lost, or
// given up (Orphan).
func (l *lease) Done() <-chan struct{} { return l.done }

// Orphan stops keeping the lease alive, without revoking it, and waits
// for the keep-alive to stop.
func (l *lease) Orphan() {
	l.cancel()
	<-l.done
}

// keep renews the lease every third of its TTL, sooner after a failed
// attempt, until it is lost: etcd says it is gone, or the bound passed
// without a renewal.
func (l *lease) keep() {
	defer close(l.done)
	defer l.cancel()
	every := l.ttl / 3
	next := time.Now().Add(every)
	for {
		until := l.Until()
		wait := time.NewTimer(time.Until(earlier(next, until)))
		select {
		case <-l.ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		}
		now := time.Now()
		if !now.Before(until) {
			l.ended(fmt.Sprintf("no renewal answered within its TTL (%s after the last renewal's send; renewals are sent every %s)", l.ttl+now.Sub(until), every))
			return
		}
		// An attempt that could only answer after the bound is of no use.
		ctx, cancel := context.WithDeadline(l.ctx, until)
		resp, err := l.client.KeepAliveOnce(ctx, l.id)
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			l.until = later(l.until, now.Add(time.Duration(resp.TTL)*time.Second))
			l.mu.Unlock()
			next = now.Add(every)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			// Expired or revoked at etcd (etcd replaced by an empty one).
			l.ended("etcd no longer knows it (expired or revoked there)")
			return
		default:
			next = time.Now().Add(minBackoff)
		}
	}
}

func (l *lease) ended(why string) {
	l.mu.Lock()
	l.why = why
	l.mu.Unlock()
}

// Why says why the lease was lost, once Done is closed; "" when it was
// given up (Orphan).
func (l *lease) Why() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Complete writes c, the completion of a task forwarded to this host, to
// etcd, in a transaction that succeeds only while the host's record is
// bound to the lease fence was made under: etcd refuses the write of a
// host whose lease expired, however long the host was paused before it
// tried (cluster.Completion). c.Epoch is set to that lease. An error
// wrapping cluster.ErrFenced means the completion is refused for good:
// the lease is lost. Any other error leaves it unknown whether the write
// went through; calling again with the same c answers that (a
// completion already written by this host under this lease is success).
func (n *Node) Complete(ctx, fence context.Context, c cluster.Completion) error {
	epoch, err := cluster.Held(fence, time.Now())
	if err != nil {
		return fmt.Errorf("completing task %s on host %s: %w", c.Key, n.id, err)
	}
	c.Host, c.Epoch = n.id, epoch
	val, err := cluster.EncodeCompletion(c)
	if err != nil {
		return err
	}
	rl, err := n.completionLease(ctx)
	if err != nil {
		return fmt.Errorf("completing task %s on host %s: granting the completions' lease: %w", c.Key, n.id, err)
	}
	key := cluster.CompletionKey(c.Key)
	resp, err := n.client.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(cluster.HostKey(n.id)), "=", clientv3.LeaseID(epoch)),
			clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val), clientv3.WithLease(rl))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// The completions' lease is gone (etcd replaced by an empty
			// one): grant another for the next attempt.
			n.complMu.Lock()
			n.complLease = 0
			n.complMu.Unlock()
		}
		return fmt.Errorf("completing task %s on host %s: %w", c.Key, n.id, err)
	}
	n.stats.txns.Add(1)
	if resp.Succeeded {
		n.stats.puts.Add(1)
		return nil
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		prev, derr := cluster.DecodeCompletion(c.Key, kvs[0].Value)
		if derr == nil && prev.Host == n.id && prev.Epoch == epoch {
			return nil // an earlier attempt of this call went through
		}
		who := "an unreadable record"
		if derr == nil {
			who = fmt.Sprintf("host %s under lease %x", prev.Host, prev.Epoch)
		}
		return fmt.Errorf("%w: task %s completed already, on %s; host %s's result is stale", cluster.ErrFenced, c.Key, who, n.id)
	}
	return fmt.Errorf("%w: etcd refused the completion of task %s: host %s's record is no longer bound to lease %x", cluster.ErrFenced, c.Key, n.id, epoch)
}

// Completion reads whether the forwarded task with idempotency key key
// completed, on any host (Complete).
func (n *Node) Completion(ctx context.Context, key string) (cluster.Completion, bool, error) {
	resp, err := n.client.Get(ctx, cluster.CompletionKey(key))
	if err != nil {
		return cluster.Completion{}, false, fmt.Errorf("reading whether task %s completed: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return cluster.Completion{}, false, nil
	}
	c, err := cluster.DecodeCompletion(key, resp.Kvs[0].Value)
	if err != nil {
		return cluster.Completion{}, false, err
	}
	return c, true, nil
}

// completionLease returns the lease completions are written under: one
// of cluster.CompletionTTL, replaced by a new one once half of it is
// gone, never kept alive, so that each completion is dropped by etcd
// between half of it and all of it after it was written.
func (n *Node) completionLease(ctx context.Context) (clientv3.LeaseID, error) {
	n.complMu.Lock()
	defer n.complMu.Unlock()
	if n.complLease != 0 && time.Since(n.complGranted) < cluster.CompletionTTL/2 {
		return n.complLease, nil
	}
	g, err := n.client.Grant(ctx, int64(cluster.CompletionTTL/time.Second))
	if err != nil {
		return 0, err
	}
	n.complLease, n.complGranted = g.ID, time.Now()
	return g.ID, nil
}
