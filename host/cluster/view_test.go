package cluster

import (
	"reflect"
	"slices"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

func defaults(string) matcher.Config { return matcher.DefaultConfig() }

func put(host string, s Summary) Change {
	return Change{Kind: KeySession, Host: host, Summary: s}
}

func member(id string, agents ...hearth.AgentLoad) Change {
	return Change{Kind: KeyHost, Host: id, Info: hearth.Member{ID: id, Addr: id + ":7420", Agents: agents}}
}

func TestViewIndexesMembersOnly(t *testing.T) {
	v := NewView("self", defaults)
	changed := v.Changed()
	s := Summary{Session: "s1", Agent: "coder", Dirs: []string{"pkg"}, Capacity: 1, LastActivity: t0}
	v.Apply(5, []Change{put("b", s), put("self", s)})
	select {
	case <-changed:
	default:
		t.Fatal("Apply did not signal Changed")
	}
	if n := v.Remote("coder"); n != 0 {
		t.Fatalf("%d remote sessions before their host registered, want 0", n)
	}
	v.Apply(6, []Change{member("b"), member("self")})
	if n := v.Remote("coder"); n != 1 {
		t.Fatalf("%d remote sessions, want 1 (b's; this host's own are the local pool's)", n)
	}
	if len(v.Sessions("self")) != 1 || len(v.Members()) != 2 || v.Revision() != 6 {
		t.Fatalf("sessions of self %v, members %v, revision %d", v.Sessions("self"), v.Members(), v.Revision())
	}
	d := v.Decide("coder", matcher.Hints{Dirs: []string{"pkg"}}, t0, nil)
	if d.Choice != matcher.Reuse || d.Winner != "b/s1" {
		t.Fatalf("got %v, want reuse b/s1", d)
	}
	if d := v.Decide("coder", matcher.Hints{Dirs: []string{"pkg"}}, t0, []string{"b"}); d.Choice != matcher.SpawnNoCandidates || d.Excluded != 1 {
		t.Fatalf("with b left out: got %v (%+v), want no candidates, 1 excluded", d, d)
	}
	if d := v.Decide("other", matcher.Hints{}, t0, nil); d.Choice != matcher.SpawnNoCandidates {
		t.Fatalf("unknown agent: got %v", d)
	}

	// An agent change moves the session between indexes.
	s.Agent = "writer"
	v.Apply(7, []Change{put("b", s)})
	if v.Remote("coder") != 0 || v.Remote("writer") != 1 {
		t.Fatalf("after the agent changed: coder %d writer %d", v.Remote("coder"), v.Remote("writer"))
	}
	// The host leaving takes its sessions out of placement at once.
	v.Apply(8, []Change{{Kind: KeyHost, Host: "b", Delete: true}})
	if v.Remote("writer") != 0 {
		t.Fatal("a departed host's session is still a candidate")
	}
	v.Apply(9, []Change{{Kind: KeySession, Host: "b", Delete: true, Summary: Summary{Session: "s1"}}})
	if len(v.Sessions("b")) != 0 {
		t.Fatal("deleted session still listed")
	}
	v.Reset(3, []Change{member("c")})
	if m := v.Members(); len(m) != 1 || m[0].ID != "c" || m[0].Addr != "c:7420" {
		t.Fatalf("after Reset: %+v", m)
	}
}

func TestSpawnHost(t *testing.T) {
	v := NewView("self", defaults)
	v.Apply(1, []Change{
		member("full", hearth.AgentLoad{Name: "coder", Live: 4, MaxSessions: 4, Load: 0}),
		member("busy", hearth.AgentLoad{Name: "coder", Live: 1, MaxSessions: 4, Load: 1}),
		member("idle-b", hearth.AgentLoad{Name: "coder", Live: 2, MaxSessions: 4}),
		member("idle-a", hearth.AgentLoad{Name: "coder", Live: 2, MaxSessions: 4}),
		member("empty", hearth.AgentLoad{Name: "coder", Live: 0, MaxSessions: 4}),
		member("other", hearth.AgentLoad{Name: "writer", MaxSessions: 4}),
		member("hooks", hearth.AgentLoad{Name: "coder", External: true, MaxSessions: 16}),
	})
	for _, tc := range []struct {
		exclude []string
		want    string
	}{
		{nil, "empty"},                                          // no load, fewest live
		{[]string{"empty"}, "idle-a"},                           // tie on load and live: ID
		{[]string{"empty", "idle-a", "idle-b"}, "busy"},         // room beats load
		{[]string{"empty", "idle-a", "idle-b", "busy"}, "full"}, // no room anywhere: least loaded
	} {
		got, ok := v.SpawnHost("coder", tc.exclude...)
		if !ok || got.ID != tc.want {
			t.Errorf("SpawnHost excluding %v = %q, %v; want %q", tc.exclude, got.ID, ok, tc.want)
		}
	}
	if h, ok := v.SpawnHost("nobody"); ok {
		t.Errorf("SpawnHost of an agent no member runs = %q", h.ID)
	}

	// A draining member spawns nothing and its sessions are left out,
	// whether its drain key says so (maintenance) or its record (it is
	// shutting down); undrained, it takes work again.
	sess := Change{Kind: KeySession, Host: "empty", Summary: Summary{Session: "s1", Agent: "coder"}}
	v.Apply(2, []Change{sess, {Kind: KeyDrain, Host: "empty"}})
	if got, _ := v.SpawnHost("coder"); got.ID != "idle-a" {
		t.Errorf("with empty drained, SpawnHost = %q, want idle-a", got.ID)
	}
	if m, _ := v.Member("empty"); m.Draining != hearth.DrainMaintenance || !slices.Equal(v.Draining(), []string{"empty"}) {
		t.Errorf("drained member listed as %q, draining %v", m.Draining, v.Draining())
	}
	if ex := v.Excluded("coder", nil, nil); !slices.Equal(ex, []string{RemoteID("empty", "s1")}) {
		t.Errorf("Excluded with empty drained = %v", ex)
	}
	v.Apply(3, []Change{{Kind: KeyDrain, Host: "empty", Delete: true}})
	if got, _ := v.SpawnHost("coder"); got.ID != "empty" || len(v.Excluded("coder", nil, nil)) != 0 {
		t.Errorf("undrained, SpawnHost = %q, Excluded %v", got.ID, v.Excluded("coder", nil, nil))
	}
	stopping := member("empty", hearth.AgentLoad{Name: "coder", Live: 0, MaxSessions: 4})
	stopping.Info.Draining = hearth.DrainShutdown
	v.Apply(4, []Change{stopping})
	if got, _ := v.SpawnHost("coder"); got.ID != "idle-a" {
		t.Errorf("with empty shutting down, SpawnHost = %q, want idle-a", got.ID)
	}
}

// TestViewSink: a sink gets a reset and what the view holds when set,
// then every change of the remote sessions in order: puts, removals, a
// departed host's sessions removed, a reset when the view is reset. The
// host's own sessions never reach it.
func TestViewSink(t *testing.T) {
	v := NewView("self", defaults)
	s := Summary{Session: "s1", Agent: "coder", Dirs: []string{"pkg"}, Capacity: 1, LastActivity: t0}
	v.Apply(1, []Change{member("b"), put("b", s), member("self"), put("self", s)})
	var got []Update
	v.SetSink(func(u Update) { got = append(got, u) })
	if len(got) != 2 || !got[0].Reset || got[1].Agent != "coder" || len(got[1].Puts) != 1 || got[1].Puts[0].ID != "b/s1" || got[1].Puts[0].Owner != "b" {
		t.Fatalf("on SetSink: %+v, want a reset then b/s1, owned by b", got)
	}
	got = nil
	s2 := Summary{Session: "s2", Agent: "coder", Capacity: 1, LastActivity: t0}
	v.Apply(2, []Change{put("b", s2), put("self", s2)})
	if len(got) != 1 || len(got[0].Puts) != 1 || got[0].Puts[0].ID != "b/s2" || got[0].Puts[0].Owner != "b" || len(got[0].Removes) != 0 {
		t.Fatalf("a put: %+v, want b/s2 only (self's own stay out)", got)
	}
	got = nil
	v.Apply(3, []Change{{Kind: KeyHost, Host: "b", Delete: true}})
	if len(got) != 1 || len(got[0].Removes) != 2 {
		t.Fatalf("b left: %+v, want its two sessions removed", got)
	}
	got = nil
	v.Reset(4, nil)
	if len(got) != 1 || !got[0].Reset {
		t.Fatalf("a reset: %+v", got)
	}
}

// TestViewMembers: members are listed by ID as their records say, each
// with the count of the summaries it published, this host marked.
func TestViewMembers(t *testing.T) {
	v := NewView("self", defaults)
	s := Summary{Agent: "coder", Capacity: 1, LastActivity: t0}
	s1, s2 := s, s
	s1.Session, s2.Session = "s1", "s2"
	v.Apply(1, []Change{member("b"), put("b", s1), put("b", s2), member("self"), put("self", s1), member("a"), put("ghost", s1)})
	got := v.Members()
	want := []hearth.Member{
		{ID: "a", Addr: "a:7420"},
		{ID: "b", Addr: "b:7420", Sessions: 2},
		{ID: "self", Addr: "self:7420", Sessions: 1, Self: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v (a host without a record is no member)", got, want)
	}
	if m, ok := v.Member("b"); !ok || m.Addr != "b:7420" {
		t.Errorf("Member(b) = %+v, %v", m, ok)
	}
}

// TestDrainedSelf: on the drained host itself, a task submitted there is
// placed over its own sessions as before (they stay in, not excluded),
// but a spawn goes to another member: README's cluster section says
// what an operator sees, a task submitted to the drained host running on
// another host's session or a new one there.
func TestDrainedSelf(t *testing.T) {
	v := NewView("self", defaults)
	v.Apply(1, []Change{
		member("self", hearth.AgentLoad{Name: "coder", Live: 1, MaxSessions: 4}),
		member("b", hearth.AgentLoad{Name: "coder", Live: 3, MaxSessions: 4, Load: 2}),
		put("self", Summary{Session: "s1", Agent: "coder"}),
		put("b", Summary{Session: "s2", Agent: "coder"}),
		{Kind: KeyDrain, Host: "self"},
	})
	if got, _ := v.SpawnHost("coder"); got.ID != "b" {
		t.Errorf("drained self: SpawnHost = %q, want b (self is emptier but drained)", got.ID)
	}
	if ex := v.Excluded("coder", nil, nil); len(ex) != 0 {
		t.Errorf("drained self: Excluded = %v, want its own sessions kept in", ex)
	}
	v.Apply(2, []Change{{Kind: KeyDrain, Host: "self", Delete: true}})
	if got, _ := v.SpawnHost("coder"); got.ID != "self" {
		t.Errorf("undrained self: SpawnHost = %q, want self", got.ID)
	}
}
