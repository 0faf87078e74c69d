package engine

import (
	"context"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/sdk"
)

// staticMembership is a cluster membership without etcd (which the
// cluster's end-to-end tests in cmd/hearth run): the view is fed by the
// test, the fence lasts.
type staticMembership struct{ view *cluster.View }

func (s staticMembership) View() *cluster.View  { return s.view }
func (staticMembership) Changed(string)         {}
func (staticMembership) HostChanged()           {}
func (staticMembership) Fence() context.Context { return context.Background() }

// TestPlaceAcrossHosts: the host's pools keep the other hosts' sessions
// from the view in their indexes, and one decision covers both: a task
// whose context is on host b goes there, one whose context is here stays
// here; a spawn goes to the member with room; a host that leaves takes
// its sessions out of placement at once. The host's own record and
// summaries are what it publishes.
func TestPlaceAcrossHosts(t *testing.T) {
	a := testAgent("scripted", "agent")
	a.Pool.MaxSessions = 1
	h := newTestHost(t, a)
	ctx := context.Background()

	// A session here that knows pkg/here.
	out, err := h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:pkg/here/a.go"})
	if err != nil {
		t.Fatal(err)
	}
	local := out.Session

	v := h.ClusterView(ClusterInfo{ID: "a", Addr: "127.0.0.1:1", ConfigHash: "h1"})
	if err := h.JoinCluster(staticMembership{v}, nil); err != nil {
		t.Fatal(err)
	}
	src := h.ClusterSource()
	rec := src.Host()
	if rec.ID != "a" || len(rec.Agents) != 1 || rec.Agents[0].Live != 1 || rec.Agents[0].MaxSessions != 1 {
		t.Fatalf("the host's record: %+v", rec)
	}
	sums := src.Sessions()
	if len(sums) != 1 || sums[0].Session != local || sums[0].Files[0] != "pkg/here/a.go" {
		t.Fatalf("the host's summaries: %+v", sums)
	}
	if _, ok := src.Session("no-such-session"); ok {
		t.Fatal("a session that does not exist is published")
	}

	now := time.Now()
	load := func(live, max int) []cluster.AgentLoad {
		return []cluster.AgentLoad{{Name: "scripted", Live: live, MaxSessions: max, Capacity: live}}
	}
	v.Apply(1, []cluster.Change{
		{Kind: cluster.KeyHost, Host: "a", Info: cluster.HostInfo{ID: "a", Addr: "127.0.0.1:1", Agents: load(1, 1)}},
		{Kind: cluster.KeyHost, Host: "b", Info: cluster.HostInfo{ID: "b", Addr: "127.0.0.1:2", Agents: load(1, 4)}},
		{Kind: cluster.KeySession, Host: "b", Summary: cluster.Summary{Session: "s1", Agent: "scripted",
			Files: []string{"pkg/there/b.go"}, Capacity: 1, LastActivity: now}},
	})

	d, err := h.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/there"}})
	if err != nil || d.Host != "b" || d.Session != "s1" || d.Action != hearth.ActionReused {
		t.Fatalf("pkg/there: %+v %v, want s1 on b", d, err)
	}
	d, err = h.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/here"}})
	if err != nil || d.Host != "" || d.Session != local {
		t.Fatalf("pkg/here: %+v %v, want %s here", d, err, local)
	}
	// Nothing known anywhere: this host is full (1 of 1), b has room.
	d, err = h.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/new"}})
	if err != nil || d.Host != "b" || d.Action != hearth.ActionSpawned {
		t.Fatalf("pkg/new: %+v %v, want a spawn on b", d, err)
	}
	// A task with its context here runs here, without the peers.
	out, err = h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "echo:here", Hints: sdk.Hints{Directories: []string{"pkg/here"}}})
	if err != nil || out.Session != local || out.Decision.Host != "" {
		t.Fatalf("submit pkg/here: %+v %v", out, err)
	}

	// b leaves: its session is no candidate any more.
	v.Apply(2, []cluster.Change{{Kind: cluster.KeyHost, Host: "b", Delete: true}})
	d, err = h.Place(ctx, "scripted", sdk.Hints{Directories: []string{"pkg/there"}})
	if err != nil || d.Host != "" {
		t.Fatalf("pkg/there after b left: %+v %v, want this host", d, err)
	}
	members := v.Members()
	if len(members) != 1 || members[0].ID != "a" {
		t.Fatalf("members after b left: %+v", members)
	}
}
