package pool

import (
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
)

// TestLocalDecisionLeavesRemoteOut: the other hosts' sessions in the
// index are owned by their host, and a decision among this host's own
// sessions neither chooses nor considers them, however well they score,
// while a decision across hosts does; a reset takes them all out.
func TestLocalDecisionLeavesRemoteOut(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	p, err := New(testSpec("coder"), Deps{
		Logger: hclog.NewNullLogger(),
		Now:    func() time.Time { return now },
		Guards: func() *guard.Set { return guard.NewSet(nil) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// A dormant session here that worked in pkg/here, and two sessions of
	// host b that also read the task's file: either scores above it.
	s := newSession(p, "coder-1", now)
	s.status, s.hasState, s.fp = statusDormant, true, nil
	p.sessions[s.id] = s
	p.index.Put(matcher.Candidate{ID: s.id, State: p.stateLocked(s), Dirs: []string{"pkg/here"}})
	remote := func(id string) matcher.Candidate {
		return matcher.Candidate{ID: id, State: matcher.State{Capacity: 1, LastActivity: now},
			Files: []string{"pkg/here/a.go"}, Dirs: []string{"pkg/here"}}
	}
	p.ApplyRemote(false, []matcher.Candidate{remote("b/s1"), remote("b/s2"), remote("no-host")}, nil)
	if got := p.Remote(); got != 2 {
		t.Fatalf("Remote after putting two remote sessions and one without a host: got %d, want 2", got)
	}
	if c, ok := p.index.Candidate("b/s1"); !ok || c.Owner != "b" {
		t.Fatalf("b/s1 in the index: %+v, %t; want it owned by b", c, ok)
	}

	task := hearth.Task{ID: "t1", Agent: "coder", Hints: sdk.Hints{Files: []string{"pkg/here/a.go"}, Directories: []string{"pkg/here"}}}
	d := p.Place(task)
	if d.Action != hearth.ActionRehydrated || d.Session != s.id || d.Host != "" {
		t.Fatalf("local decision: %s %s on %q (%s), want %s rehydrated here", d.Action, d.Session, d.Host, d.Reason, s.id)
	}
	if d.Considered != 1 || len(d.Candidates) != 1 || d.Candidates[0].Session != s.id {
		t.Fatalf("local decision considered %d, ranked %+v; want only %s", d.Considered, d.Candidates, s.id)
	}

	across := p.PlaceAcross(task, nil, now)
	if across.Remote != "b/s1" && across.Remote != "b/s2" || across.Decision.Considered != 3 {
		t.Fatalf("decision across hosts: remote %q, considered %d; want a session of b, of 3", across.Remote, across.Decision.Considered)
	}
	across = p.PlaceAcross(task, []string{"b/s1", "b/s2"}, now)
	if across.Remote != "" || across.Decision.Session != s.id || across.Decision.Considered != 1 {
		t.Fatalf("decision across hosts without b's sessions: remote %q, session %q, considered %d; want %s here, of 1",
			across.Remote, across.Decision.Session, across.Decision.Considered, s.id)
	}

	p.ApplyRemote(true, nil, nil)
	if got := p.Remote(); got != 0 {
		t.Fatalf("Remote after a reset: got %d, want 0", got)
	}
	if _, ok := p.index.Candidate("b/s1"); ok {
		t.Fatal("b/s1 still in the index after a reset")
	}
	if d := p.PlaceAcross(task, nil, now); d.Remote != "" || d.Decision.Considered != 1 {
		t.Fatalf("decision across hosts after a reset: remote %q, considered %d; want none, of 1", d.Remote, d.Decision.Considered)
	}
}
