package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// RunLister lists the runs one host owns: the engine implements it over
// the member's API (and, for this host, over its own store). R is the
// engine's description of a run.
type RunLister[R any] interface {
	ListRuns(ctx context.Context, h HostInfo) ([]R, error)
}

// OwnerState says how current a host's part of a cluster-wide run
// listing is.
type OwnerState int

// The states of a run's owner.
const (
	// OwnerUp: the owner answered; its runs are current.
	OwnerUp OwnerState = iota + 1
	// OwnerUnreachable: the owner is a member but did not answer in time;
	// its runs are the last ones it listed, if any.
	OwnerUnreachable
	// OwnerGone: the owner is no member (it died or left); its runs are
	// the last ones it listed. They resume when it returns: a run's state
	// is in its owner's store.
	OwnerGone
)

func (s OwnerState) String() string {
	switch s {
	case OwnerUp:
		return "up"
	case OwnerUnreachable:
		return "unreachable"
	case OwnerGone:
		return "gone"
	}
	return fmt.Sprintf("OwnerState(%d)", int(s))
}

// HostRuns is one host's part of a cluster-wide run listing.
type HostRuns[R any] struct {
	Host  string
	State OwnerState
	// Runs are the host's runs: current for OwnerUp, else as of Listed.
	Runs   []R
	Listed time.Time // when Runs were listed; zero if never
	Err    error     // why the host did not answer, for OwnerUnreachable
}

// RunDirectory lists runs across the cluster by asking every member at
// once, each within a timeout, and remembers each host's last answer, so
// that the runs of a host that stopped answering or left the cluster are
// still listed, marked as such, instead of vanishing. What it remembers is
// this process's: a host that never listed a dead host's runs does not
// know them (see the package doc for what a durable run directory would
// take). Safe for concurrent use.
type RunDirectory[R any] struct {
	lister  RunLister[R]
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	last map[string]HostRuns[R]
}

// NewRunDirectory returns a directory asking each member through lister,
// giving each timeout (a member slower than that is listed as
// unreachable); now is the clock.
func NewRunDirectory[R any](lister RunLister[R], timeout time.Duration, now func() time.Time) *RunDirectory[R] {
	return &RunDirectory[R]{lister: lister, timeout: timeout, now: now, last: make(map[string]HostRuns[R])}
}

// List asks every member for its runs at once and returns one entry per
// member and per host remembered from an earlier listing, by host ID.
func (d *RunDirectory[R]) List(ctx context.Context, members []HostInfo) []HostRuns[R] {
	answers := make([]HostRuns[R], len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, d.timeout)
			defer cancel()
			runs, err := d.lister.ListRuns(cctx, m)
			if err == nil && cctx.Err() != nil {
				err = cctx.Err() // answered past its deadline: treat as late
			}
			if err != nil {
				answers[i] = HostRuns[R]{Host: m.ID, State: OwnerUnreachable, Err: fmt.Errorf("listing runs of host %s at %s: %w", m.ID, m.Addr, err)}
				return
			}
			answers[i] = HostRuns[R]{Host: m.ID, State: OwnerUp, Runs: runs, Listed: d.now()}
		})
	}
	wg.Wait()

	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]HostRuns[R], 0, len(answers)+len(d.last))
	seen := make(map[string]bool, len(answers))
	for _, a := range answers {
		seen[a.Host] = true
		if a.State == OwnerUp {
			d.last[a.Host] = a
		} else if prev, ok := d.last[a.Host]; ok {
			a.Runs, a.Listed = prev.Runs, prev.Listed
		}
		out = append(out, a)
	}
	for host, prev := range d.last {
		if !seen[host] {
			prev.State, prev.Err = OwnerGone, nil
			out = append(out, prev)
		}
	}
	slices.SortFunc(out, func(a, b HostRuns[R]) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// Forget drops what the directory remembers of host, for a host removed
// for good.
func (d *RunDirectory[R]) Forget(host string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, host)
}
