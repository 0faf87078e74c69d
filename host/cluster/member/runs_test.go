package member_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster/member"
)

// TestLocateRun: how a host finds which member owns a run it does not
// have, in the cluster's run listing: an exact ID wins over a prefix
// (even one another host's run shares), a prefix must name one run of
// the whole cluster, and a run no host lists is hearth.ErrUnknownRun. A
// host listed as unreachable or gone still owns the runs it listed.
// (Reading the run from its owner is TestClusterRunsShowThroughAnyHost,
// in cmd/hearth, between real hosts.)
func TestLocateRun(t *testing.T) {
	runs := func(ids ...string) []hearth.RunInfo {
		out := make([]hearth.RunInfo, len(ids))
		for i, id := range ids {
			out[i] = hearth.RunInfo{ID: id}
		}
		return out
	}
	hosts := []hearth.HostRuns{
		{Host: "a", State: hearth.OwnerUp, Runs: runs("one-1", "two-1")},
		{Host: "b", State: hearth.OwnerUp, Runs: runs("one-10", "three-1")},
		{Host: "c", State: hearth.OwnerGone, Runs: runs("four-1")},
	}
	for _, tc := range []struct {
		id, owner, run, err string
	}{
		{id: "two-1", owner: "a", run: "two-1"},
		{id: "two", owner: "a", run: "two-1"},
		{id: "one-10", owner: "b", run: "one-10"},
		{id: "one-1", owner: "a", run: "one-1"}, // exact, though b's one-10 shares it as a prefix
		{id: "thr", owner: "b", run: "three-1"},
		{id: "four", owner: "c", run: "four-1"},
		{id: "one", err: `"one" names 2 runs of the cluster: one-1 (host a), one-10 (host b); give more of the ID`},
		{id: "five", err: `no such run "five"`},
	} {
		owner, run, err := member.LocateRun(hosts, tc.id)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %s %s %v, want error %q", tc.id, owner.Host, run, err, tc.err)
			}
			if strings.HasPrefix(tc.err, "no such run") && !errors.Is(err, hearth.ErrUnknownRun) {
				t.Errorf("%s: %v, want ErrUnknownRun", tc.id, err)
			}
		case err != nil || owner.Host != tc.owner || run != tc.run:
			t.Errorf("%s: host %s run %s %v, want host %s run %s", tc.id, owner.Host, run, err, tc.owner, tc.run)
		}
	}
}
