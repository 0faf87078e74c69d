package cluster

import (
	"context"
	"fmt"
	"time"
)

// Fencing: the work a host does for another host runs under the host's
// lease, and must not complete once the lease is lost, because the other
// hosts then see this one leave and may run the work elsewhere
// (docs/cluster.md, "Fencing").
//
// A lease is lost at etcd, on etcd's clock, and a host learns of it late
// or not at all while it is paused (SIGSTOP, a VM pause, a swap storm): a
// context cancelled when the keep-alive gives up is cancelled by a
// goroutine, which may run after the goroutine that is about to complete
// the work, at wake-up. So the fence keeps, besides its context, the
// lease's epoch (its ID) and a lower bound of its expiry on this host's
// monotonic clock: the time a renewal that etcd answered was sent, plus
// the TTL it answered with. [Held] compares the clock with that bound at
// the moment of completing, whatever the goroutines did.

// Lease is what a fence knows of the lease it ends with: its epoch, and
// until when it is held for certain.
type Lease interface {
	// Epoch is the lease's ID: a host registered anew holds another.
	Epoch() int64
	// Until is a lower bound of the lease's expiry, on the monotonic
	// clock: the lease is held at least until then, unless revoked.
	Until() time.Time
}

type fenceKey struct{}

// WithLease returns ctx carrying l, for [Held] (host/cluster/etcd's
// Node.Fence).
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, fenceKey{}, l)
}

// Held says whether the lease fence was made under is held at now, and
// its epoch. It fails when fence ended (the keep-alive gave up, the
// lease was revoked), and when now is at or past the bound of the
// lease's expiry even though the keep-alive has not noticed yet: a host
// that woke from a pause longer than its lease. A fence without a lease
// (a static membership in tests) is held while its context lasts.
func Held(fence context.Context, now time.Time) (epoch int64, err error) {
	l, _ := fence.Value(fenceKey{}).(Lease)
	if l != nil {
		epoch = l.Epoch()
	}
	if err := fence.Err(); err != nil {
		return epoch, fmt.Errorf("%w: lease %x ended: %v", ErrFenced, epoch, err)
	}
	if l != nil {
		if until := l.Until(); !now.Before(until) {
			return epoch, fmt.Errorf("%w: lease %x was held for certain until %s, %s ago", ErrFenced, epoch, until.Format(time.RFC3339Nano), now.Sub(until).Round(time.Millisecond))
		}
	}
	return epoch, nil
}
