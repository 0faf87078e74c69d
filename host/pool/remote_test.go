package pool

import (
	"slices"
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

// TestPlacementRecordsHints: a task's hints are recorded against the
// session it was placed on before the agent reports any tool use (the
// task only echoes), in the index that decides the next task; Learned
// is told when the task starts and when it ends, and not for a task
// whose hints the session holds already. A task forwarded to another
// host's session records them against that session in this host's
// index (ExpectRemote); an ID that is no remote session is left alone.
func TestPlacementRecordsHints(t *testing.T) {
	k := newKit(t, pluginSpec("agent"))
	var learned []string
	k.p.d.Learned = func(id string) { learned = append(learned, id) }
	hints := sdk.Hints{Files: []string{"pkg/fast/a.go"}, Directories: []string{"pkg/fast"}, Technologies: []string{"Go"}}
	out, err := k.run(hearth.Task{Prompt: "echo:first", Hints: hints})
	if err != nil {
		t.Fatal(err)
	}
	if out.ToolUses != 0 {
		t.Fatalf("the task reported %d tool uses, want none", out.ToolUses)
	}
	k.p.mu.Lock()
	c, ok := k.p.index.Candidate(out.Session)
	k.p.mu.Unlock()
	if !ok || !slices.Contains(c.Files, "pkg/fast/a.go") || !slices.Contains(c.Dirs, "pkg/fast") || !slices.Contains(c.Techs, "go") {
		t.Fatalf("session %s in the index: %+v (%t); want the task's file, directory and technology", out.Session, c, ok)
	}
	if !slices.Equal(learned, []string{out.Session, out.Session}) {
		t.Fatalf("Learned told %v, want %s at the start and the end of the task", learned, out.Session)
	}
	again, err := k.run(hearth.Task{Prompt: "echo:again", Hints: hints})
	if err != nil {
		t.Fatal(err)
	}
	if again.Session != out.Session || len(learned) != 2 {
		t.Fatalf("the same hints again ran on %s and told Learned %v; want %s, told nothing more", again.Session, learned, out.Session)
	}

	k.p.ApplyRemote(false, []matcher.Candidate{{ID: "b/s1", State: matcher.State{Capacity: 1}}}, nil)
	task := hearth.Task{Agent: k.p.cfg().Agent, Hints: sdk.Hints{Directories: []string{"pkg/remote"}}}
	k.p.ExpectRemote("b/s1", task)
	k.p.ExpectRemote("b/none", task)
	k.p.ExpectRemote(out.Session, task) // a local session is Execute's
	k.p.mu.Lock()
	defer k.p.mu.Unlock()
	if c, _ := k.p.index.Candidate("b/s1"); !slices.Contains(c.Dirs, "pkg/remote") {
		t.Fatalf("b/s1 after ExpectRemote: %+v, want pkg/remote among its directories", c)
	}
	if _, ok := k.p.index.Candidate("b/none"); ok {
		t.Fatal("ExpectRemote put a session that is not in the index")
	}
	if c, _ := k.p.index.Candidate(out.Session); slices.Contains(c.Dirs, "pkg/remote") {
		t.Fatal("ExpectRemote recorded hints against a session of this host")
	}
}
