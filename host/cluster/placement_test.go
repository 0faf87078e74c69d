package cluster

import (
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
)

// TestExcluded: a forward's exclusions are the sessions it refused and
// every session of the agent on the hosts it left out, and nothing of
// another agent.
func TestExcluded(t *testing.T) {
	v := NewView("self", defaults)
	coder := func(id string) Summary { return Summary{Session: id, Agent: "coder", Capacity: 1, LastActivity: t0} }
	writer := Summary{Session: "w1", Agent: "writer", Capacity: 1, LastActivity: t0}
	v.Apply(1, []Change{member("b"), put("b", coder("s1")), put("b", coder("s2")), put("b", writer), member("c"), put("c", coder("s3"))})
	got := v.Excluded("coder", []string{"b", "gone"}, []string{"c/s3"})
	slices.Sort(got)
	if want := []string{"b/s1", "b/s2", "c/s3"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestTarget: a remote winner is sent to its host; a spawn goes to the
// member with room that runs the agent, leaving out the hosts a forward
// left out, or stays here when this host is that member; anything else
// stays here.
func TestTarget(t *testing.T) {
	v := NewView("self", defaults)
	v.Apply(1, []Change{
		member("self", hearth.AgentLoad{Name: "coder", Live: 2, MaxSessions: 4}),
		member("b", hearth.AgentLoad{Name: "coder", Live: 0, MaxSessions: 4}),
		member("c", hearth.AgentLoad{Name: "coder", Live: 1, MaxSessions: 4}),
	})
	spawn := Placement{Decision: hearth.Decision{Action: hearth.ActionSpawned, Reason: "no session knows pkg"}, Spawn: true}
	for _, tc := range []struct {
		name     string
		pl       Placement
		excluded []string
		want     Target
	}{
		{"remote", Placement{Remote: "c/s9", Decision: hearth.Decision{Host: "c", Session: "s9"}}, nil, Target{Host: "c", Session: "s9"}},
		{"spawn on the emptiest", spawn, nil, Target{Host: "b"}},
		{"spawn without b", spawn, []string{"b"}, Target{Host: "c"}},
		{"spawn here", spawn, []string{"b", "c"}, Target{}},
		{"here", Placement{Decision: hearth.Decision{Action: hearth.ActionReused, Session: "mine"}}, nil, Target{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, d := v.Target("coder", tc.pl, tc.excluded)
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			switch {
			case tc.pl.Spawn && got.Host != "":
				if d.Host != got.Host || d.Action != hearth.ActionSpawned || !strings.Contains(d.Reason, "would spawn on host "+got.Host) || !strings.Contains(d.Reason, tc.pl.Decision.Reason) {
					t.Errorf("decision %+v does not say it spawns on %s, and why", d, got.Host)
				}
			case d.Host != tc.pl.Decision.Host || d.Reason != tc.pl.Decision.Reason:
				t.Errorf("decision %+v, want the placement's %+v", d, tc.pl.Decision)
			}
		})
	}
}
