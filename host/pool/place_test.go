package pool

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// reading is a task of agent coder that reads files, with the hints a
// user would give: the files and their directories.
func reading(files ...string) hearth.Task {
	var dirs []string
	for _, f := range files {
		if d := parent(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return hearth.Task{Agent: "coder", ID: "task-1", Hints: sdk.Hints{Files: files, Directories: dirs}}
}

// TestPlacement holds the placement policy (decideLocked, as Place
// reports it) to what the package doc of decideLocked says, one rule a
// row, over sessions made by hand: which session, or a spawn or a wait,
// and the reason the decision gives.
func TestPlacement(t *testing.T) {
	ledger := []string{"billing/ledger.go", "billing/tax.go"}
	index := []string{"search/index.go"}
	for _, tc := range []struct {
		name     string
		spec     func(*Spec)
		guards   []guard.Spec
		sessions []hand
		task     hearth.Task
		// want: the action, the session ("" for none), and words of the
		// reason.
		action  hearth.Action
		session string
		reason  []string
		vetoed  []string
		retired string
	}{
		{
			name: "no session: spawn", task: reading(ledger...),
			action: hearth.ActionSpawned, reason: []string{"would spawn: no session to reuse"},
		},
		{
			name:     "a live session that read the files is reused",
			sessions: []hand{{id: "coder-1", status: statusLive, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionReused, session: "coder-1", reason: []string{"would reuse coder-1 (", " > 0.6"},
		},
		{
			name:     "a live session that knows nothing of the task: spawn, with the best score",
			sessions: []hand{{id: "coder-1", status: statusLive, reads: index}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned, reason: []string{"would spawn: best score", "(coder-1) not above 0.6"},
		},
		{
			name: "the better of two sessions wins",
			sessions: []hand{
				{id: "coder-1", status: statusLive, reads: index},
				{id: "coder-2", status: statusLive, reads: ledger},
			},
			task:   reading(ledger...),
			action: hearth.ActionReused, session: "coder-2",
		},
		{
			name:     "a full session is never chosen: room in the pool, so spawn",
			sessions: []hand{{id: "coder-1", status: statusLive, load: 1, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned, reason: []string{"all 1 candidates busy"},
		},
		{
			name:     "a starting session is not a candidate",
			sessions: []hand{{id: "coder-1", status: statusStarting, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned,
		},
		{
			name:     "a dormant session with saved state is rehydrated",
			sessions: []hand{{id: "coder-1", status: statusDormant, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionRehydrated, session: "coder-1", reason: []string{"would rehydrate dormant coder-1"},
		},
		{
			name:     "a dormant session without saved state is left out, and the reason says so",
			sessions: []hand{{id: "coder-1", status: statusDormant, reads: ledger, stateless: true}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned, reason: []string{"1 dormant session(s) left out", "sdk.StateExporter"},
		},
		{
			name:     "full pool: a busy session would win, so wait for it",
			spec:     func(s *Spec) { s.MaxSessions = 1 },
			sessions: []hand{{id: "coder-1", status: statusLive, load: 1, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionWait, session: "coder-1", reason: []string{"the pool is full at 1 sessions, and busy coder-1 would win"},
		},
		{
			name:     "full pool, all busy and none would win: wait for any slot",
			spec:     func(s *Spec) { s.MaxSessions = 1 },
			sessions: []hand{{id: "coder-1", status: statusLive, load: 1, reads: index}},
			task:     reading(ledger...),
			action:   hearth.ActionWait, reason: []string{"would wait for a free slot: the pool is full at 1 sessions, all busy"},
		},
		{
			name:     "full pool, when_full wait: an idle session is reused below the threshold",
			spec:     func(s *Spec) { s.MaxSessions = 1 },
			sessions: []hand{{id: "coder-1", status: statusLive, reads: index}},
			task:     reading(ledger...),
			action:   hearth.ActionReused, session: "coder-1", reason: []string{"below the threshold", "the pool is full at 1 sessions"},
		},
		{
			name: "full pool, when_full retire_idle: the least recently used idle session makes room",
			spec: func(s *Spec) { s.MaxSessions = 2; s.WhenFull = hearth.WhenFullRetireIdle },
			sessions: []hand{
				{id: "coder-1", status: statusLive, reads: index, idle: time.Minute},
				{id: "coder-2", status: statusLive, reads: []string{"docs/a.md"}, idle: time.Hour},
			},
			task:   reading(ledger...),
			action: hearth.ActionSpawned, retired: "coder-2", reason: []string{"would retire idle coder-2 to make room"},
		},
		{
			name:   "a session_reuse guard vetoes the winner: the next best, here a spawn",
			guards: []guard.Spec{{Name: "one-task-each", Hook: guard.SessionReuse, Condition: `session.tasks >= 1`, Message: "fresh sessions only"}},
			sessions: []hand{
				{id: "coder-1", status: statusLive, reads: ledger, tasks: 1},
			},
			task:   reading(ledger...),
			action: hearth.ActionSpawned, vetoed: []string{"coder-1:one-task-each"}, reason: []string{"vetoed coder-1:one-task-each"},
		},
		{
			name:   "a veto falls to the next session that scores above the threshold",
			guards: []guard.Spec{{Name: "one-task-each", Hook: guard.SessionReuse, Condition: `session.tasks >= 1`, Message: "fresh sessions only"}},
			sessions: []hand{
				{id: "coder-1", status: statusLive, reads: ledger, tasks: 1},
				{id: "coder-2", status: statusLive, reads: ledger[:1]},
			},
			task:   reading(ledger...),
			action: hearth.ActionReused, session: "coder-2", vetoed: []string{"coder-1:one-task-each"},
		},
		{
			name:     "placement fresh: a new session for every task",
			spec:     func(s *Spec) { s.Placement = hearth.PlacementFresh },
			sessions: []hand{{id: "coder-1", status: statusLive, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned, reason: []string{"a new session per task (placement = fresh)"},
		},
		{
			name:     "placement round_robin: the pool fills first",
			spec:     func(s *Spec) { s.Placement = hearth.PlacementRoundRobin; s.MaxSessions = 2 },
			sessions: []hand{{id: "coder-1", status: statusLive, reads: ledger}},
			task:     reading(ledger...),
			action:   hearth.ActionSpawned, reason: []string{"filling the pool (placement = round_robin)"},
		},
		{
			name: "placement round_robin: then each in its turn, whatever it knows",
			spec: func(s *Spec) { s.Placement = hearth.PlacementRoundRobin; s.MaxSessions = 2 },
			sessions: []hand{
				{id: "coder-1", status: statusLive, reads: index, idle: time.Hour},
				{id: "coder-2", status: statusLive, reads: ledger},
			},
			task:   reading(ledger...),
			action: hearth.ActionReused, session: "coder-1", reason: []string{"its turn (placement = round_robin)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := testSpec("coder")
			if tc.spec != nil {
				tc.spec(&sp)
			}
			k := newKit(t, sp, tc.guards...)
			k.add(t, tc.sessions...)
			d := k.p.Place(tc.task)
			if d.Action != tc.action || d.Session != tc.session {
				t.Fatalf("got %s %q (%s), want %s %q", d.Action, d.Session, d.Reason, tc.action, tc.session)
			}
			for _, w := range tc.reason {
				if !strings.Contains(d.Reason, w) {
					t.Errorf("reason %q, want it to say %q", d.Reason, w)
				}
			}
			if !slices.Equal(d.Vetoed, tc.vetoed) || d.Retired != tc.retired {
				t.Errorf("vetoed %v, retired %q; want %v and %q", d.Vetoed, d.Retired, tc.vetoed, tc.retired)
			}
			if d.Agent != "coder" || d.Threshold != sp.Matcher.Threshold || d.Task != tc.task.ID {
				t.Errorf("decision names agent %q, threshold %v, task %q", d.Agent, d.Threshold, d.Task)
			}
		})
	}
}

// TestPlaceActsOnNothing: Place decides without changing the pool: no
// slot reserved, no session retired, no turn of round_robin taken, no
// event, nothing written; asked again, it answers the same.
func TestPlaceActsOnNothing(t *testing.T) {
	for _, sp := range []func(*Spec){
		func(*Spec) {},
		func(s *Spec) { s.MaxSessions = 2; s.WhenFull = hearth.WhenFullRetireIdle },
		func(s *Spec) { s.Placement = hearth.PlacementRoundRobin; s.MaxSessions = 2 },
	} {
		spec := testSpec("coder")
		sp(&spec)
		k := newKit(t, spec)
		k.add(t, hand{id: "coder-1", status: statusLive, reads: []string{"a/1.go"}, idle: time.Hour},
			hand{id: "coder-2", status: statusLive, reads: []string{"b/2.go"}})
		first := k.p.Place(reading("a/1.go"))
		again := k.p.Place(reading("a/1.go"))
		if first.Action != again.Action || first.Session != again.Session || first.Retired != again.Retired {
			t.Errorf("%s: Place changed its answer: %s then %s", spec.Placement, first.Reason, again.Reason)
		}
		k.p.mu.Lock()
		for _, s := range k.p.sessions {
			if s.load != 0 || s.status != statusLive {
				t.Errorf("%s: Place left %s %s with load %d", spec.Placement, s.id, s.status, s.load)
			}
		}
		turn := k.p.rotation
		k.p.mu.Unlock()
		if turn != 0 {
			t.Errorf("%s: Place took round_robin's turn", spec.Placement)
		}
		if evs := k.events.kinds(); len(evs) > 0 || len(k.store.recs) > 0 {
			t.Errorf("%s: Place emitted %v and wrote %d records", spec.Placement, evs, len(k.store.recs))
		}
	}
}

// TestPlaceExternal: an external agent's sessions are pointed at, not
// run: Place names the session to resume and the command that resumes
// it; a busy one is never pointed at.
func TestPlaceExternal(t *testing.T) {
	sp := testSpec("coder")
	sp.External, sp.MaxSessions, sp.Launch.Argv = hearth.ExternalClaudeCode, 16, nil
	k := newKit(t, sp)
	k.add(t, hand{id: "cc-1", status: statusLive, reads: []string{"billing/ledger.go"}})
	d := k.p.Place(reading("billing/ledger.go"))
	if d.Action != hearth.ActionResume || d.Session != "cc-1" || d.Resume != hearth.ResumeCommand(hearth.ExternalClaudeCode, "cc-1") || d.External != hearth.ExternalClaudeCode {
		t.Fatalf("got %+v, want a resume of cc-1", d)
	}
	if err := k.p.Runnable(); err == nil {
		t.Error("an external agent's pool is runnable")
	}
	k.p.mu.Lock()
	k.p.setBusyLocked(k.p.sessions["cc-1"], true)
	k.p.mu.Unlock()
	if d := k.p.Place(reading("billing/ledger.go")); d.Action != hearth.ActionSpawned || d.Session != "" {
		t.Errorf("a busy external session: got %s %s (%s), want a new session", d.Action, d.Session, d.Reason)
	}
}
