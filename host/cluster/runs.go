package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
)

// RunLister lists the runs one host owns: host/cluster/member
// implements it over the member's API (and, for this host, over its own
// store).
type RunLister interface {
	ListRuns(ctx context.Context, m hearth.Member) ([]hearth.RunInfo, error)
}

// RunDirectory lists runs across the cluster by asking every member at
// once, each within a timeout, and remembers each host's last answer, so
// that the runs of a host that stopped answering or left the cluster are
// still listed, marked as such, instead of vanishing. What it remembers is
// this process's: a host that never listed a dead host's runs does not
// know them (see the package doc for what a durable run directory would
// take). Safe for concurrent use.
type RunDirectory struct {
	lister  RunLister
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	last map[string]hearth.HostRuns
}

// NewRunDirectory returns a directory asking each member through lister,
// giving each timeout (a member slower than that is listed as
// unreachable); now is the clock.
func NewRunDirectory(lister RunLister, timeout time.Duration, now func() time.Time) *RunDirectory {
	return &RunDirectory{lister: lister, timeout: timeout, now: now, last: make(map[string]hearth.HostRuns)}
}

// List asks every member for its runs at once and returns one entry per
// member and per host remembered from an earlier listing, by host ID.
func (d *RunDirectory) List(ctx context.Context, members []hearth.Member) []hearth.HostRuns {
	answers := make([]hearth.HostRuns, len(members))
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
				answers[i] = hearth.HostRuns{Host: m.ID, State: hearth.OwnerUnreachable, Error: fmt.Sprintf("listing runs of host %s at %s: %v", m.ID, m.Addr, err)}
				return
			}
			answers[i] = hearth.HostRuns{Host: m.ID, State: hearth.OwnerUp, Runs: runs, Listed: d.now()}
		})
	}
	wg.Wait()

	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]hearth.HostRuns, 0, len(answers)+len(d.last))
	seen := make(map[string]bool, len(answers))
	for _, a := range answers {
		seen[a.Host] = true
		if a.State == hearth.OwnerUp {
			d.last[a.Host] = a
		} else if prev, ok := d.last[a.Host]; ok {
			a.Runs, a.Listed = prev.Runs, prev.Listed
		}
		out = append(out, a)
	}
	for host, prev := range d.last {
		if !seen[host] {
			prev.State, prev.Error = hearth.OwnerGone, ""
			out = append(out, prev)
		}
	}
	slices.SortFunc(out, func(a, b hearth.HostRuns) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// Forget drops what the directory remembers of host, for a host removed
// for good.
func (d *RunDirectory) Forget(host string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, host)
}
