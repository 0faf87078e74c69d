package member

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hearth-dev/hearth"
)

// A run stays with the host that started it (docs/cluster.md, "Runs"),
// yet `hearth runs show` through any host of the cluster shows it: the
// engine asks its member for a run its store does not have, and the
// member finds the run's owner in the cluster's run listing (ClusterRuns,
// the listing `hearth runs list` prints) and reads the run from there
// over the peer API (ShowOwnRun). Reading is all it forwards: a run's
// writes (pause, resume, cancel, fork, delete) change the owner's store
// and go to the owner; RunOwner lets their errors say which host that
// is.

// OwnRun reads one run this host owns (the peer API's ShowOwnRun).
func (m *Member) OwnRun(ctx context.Context, id string) (hearth.RunDetail, error) {
	return m.d.Run(ctx, id)
}

// Run reads a run another member of the cluster owns, by its ID or a
// prefix no other run of the cluster shares, as its owner has it, with
// Owner set to the owner's ID. A run whose owner does not answer (or
// left) is an error naming the owner; a run no member lists wraps
// hearth.ErrUnknownRun.
func (m *Member) Run(ctx context.Context, id string) (hearth.RunDetail, error) {
	owner, run, err := m.findRun(ctx, id)
	if err != nil {
		return hearth.RunDetail{}, err
	}
	var d hearth.RunDetail
	switch {
	case owner.Host == m.cfg.HostID:
		// Started here between the caller's look and the listing.
		d, err = m.d.Run(ctx, run)
	case owner.State != hearth.OwnerUp:
		return hearth.RunDetail{}, unreachableOwner(run, owner)
	default:
		mm, ok := m.view.Member(owner.Host)
		if !ok {
			owner.State, owner.Error = hearth.OwnerGone, ""
			return hearth.RunDetail{}, unreachableOwner(run, owner)
		}
		d, err = m.peers.Run(ctx, mm, run)
		if err != nil && !errors.Is(err, hearth.ErrUnknownRun) {
			owner.State, owner.Error = hearth.OwnerUnreachable, err.Error()
			return hearth.RunDetail{}, unreachableOwner(run, owner)
		}
	}
	if err != nil {
		return hearth.RunDetail{}, err
	}
	d.Owner = owner.Host
	return d, nil
}

// RunOwner says which member owns run id (its ID or a prefix no other
// run shares) as the cluster's run listing has it; ok is false when no
// member lists it, or not unambiguously.
func (m *Member) RunOwner(ctx context.Context, id string) (host string, ok bool) {
	owner, _, err := m.findRun(ctx, id)
	if err != nil {
		return "", false
	}
	return owner.Host, true
}

// findRun finds the run id names in the cluster's run listing: the
// owner's part of the listing and the run's full ID. An exact ID wins
// over prefixes.
func (m *Member) findRun(ctx context.Context, id string) (hearth.HostRuns, string, error) {
	if strings.TrimSpace(id) == "" {
		return hearth.HostRuns{}, "", fmt.Errorf("%w: give a run ID (hearth runs list shows them)", hearth.ErrUnknownRun)
	}
	cr, err := m.ClusterRuns(ctx)
	if err != nil {
		return hearth.HostRuns{}, "", err
	}
	return locateRun(cr.Hosts, id)
}

// locateRun finds the run id names among hosts' runs: an exact ID, or
// the one run whose ID id begins.
func locateRun(hosts []hearth.HostRuns, id string) (hearth.HostRuns, string, error) {
	type match struct {
		owner hearth.HostRuns
		run   string
	}
	var matches []match
	for _, h := range hosts {
		for _, r := range h.Runs {
			if r.ID == id {
				return h, id, nil
			}
			if strings.HasPrefix(r.ID, id) {
				matches = append(matches, match{h, r.ID})
			}
		}
	}
	switch len(matches) {
	case 0:
		return hearth.HostRuns{}, "", fmt.Errorf("%w %q on any host of the cluster (hearth runs list shows the runs)", hearth.ErrUnknownRun, id)
	case 1:
		return matches[0].owner, matches[0].run, nil
	}
	names := make([]string, len(matches))
	for i, mt := range matches {
		names[i] = mt.run + " (host " + mt.owner.Host + ")"
	}
	return hearth.HostRuns{}, "", fmt.Errorf("%q names %d runs of the cluster: %s; give more of the ID", id, len(matches), strings.Join(names, ", "))
}

// unreachableOwner is the error of a run whose owner cannot be asked.
func unreachableOwner(run string, owner hearth.HostRuns) error {
	if owner.State == hearth.OwnerGone {
		return fmt.Errorf("run %s is on host %s, which is unreachable: it is no member of the cluster now (it stopped or left); the run's state is in its store, and shows again when host %s is back", run, owner.Host, owner.Host)
	}
	return fmt.Errorf("run %s is on host %s, which is unreachable: %s; check that host %s runs and answers (hearth hosts list)", run, owner.Host, owner.Error, owner.Host)
}
