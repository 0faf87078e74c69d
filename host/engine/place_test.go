package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// The tests below hold Place to what Submit then does: one placement
// policy, decided the same way, whether or not it is acted on.

// agree asks Place where a task would go, then submits it, and checks
// that Submit did what Place said. A spawn names no session in advance;
// a wait names the busy session it waits for, which the task then gets.
func agree(t *testing.T, h *Engine, task hearth.Task) (hearth.Decision, *hearth.Outcome) {
	t.Helper()
	ctx := context.Background()
	d, err := h.Place(ctx, task.Agent, task.Hints)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Submit(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Decision
	switch d.Action {
	case hearth.ActionWait:
		if got.Waited <= 0 {
			t.Errorf("Place said wait (%s); Submit did not wait: %s", d.Reason, got.Reason)
		}
		if d.Session != "" && got.Session != d.Session {
			t.Errorf("Place said wait for %s; Submit ran on %s: %s", d.Session, got.Session, got.Reason)
		}
	case hearth.ActionSpawned:
		if got.Action != hearth.ActionSpawned {
			t.Errorf("Place said spawn (%s); Submit %s %s (%s)", d.Reason, got.Action, got.Session, got.Reason)
		}
	default:
		if got.Action != d.Action || got.Session != d.Session {
			t.Errorf("Place said %s %s (%s); Submit %s %s (%s)", d.Action, d.Session, d.Reason, got.Action, got.Session, got.Reason)
		}
	}
	if !slices.Equal(d.Vetoed, got.Vetoed) || d.Retired != got.Retired {
		t.Errorf("vetoed %v retired %q by Place; %v and %q by Submit", d.Vetoed, d.Retired, got.Vetoed, got.Retired)
	}
	return d, out
}

// readTask is a task that reads files, with the hints a user would give.
func readTask(files ...string) hearth.Task {
	prompt, hints := reads(files...)
	return hearth.Task{Agent: "scripted", Prompt: prompt, Hints: hints}
}

// holdTask occupies a session until release exists, reading files first.
func holdTask(release string, files ...string) hearth.Task {
	t := readTask(files...)
	t.Prompt += "wait:" + release
	return t
}

// startHeld submits task in the background and returns once it runs on a
// session and has reported its reads, and a func that lets it finish and
// waits for it (called at the test's end too: a held task would keep
// the host from closing).
func startHeld(t *testing.T, h *Engine, task hearth.Task, release string) (session string, finish func()) {
	t.Helper()
	sub := h.Subscribe(1024)
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := h.Submit(context.Background(), task); err != nil {
			t.Error(err)
		}
	}()
	reads := len(task.Hints.Files)
	for e := range sub.C {
		if e.Kind == hearth.EventToolUsed {
			session = e.Session
			if reads--; reads == 0 {
				break
			}
		}
	}
	var once sync.Once
	finish = func() {
		once.Do(func() {
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Error(err)
			}
			<-done
		})
	}
	t.Cleanup(finish)
	return session, finish
}

// releaseWhenWaiting calls finish once a task waits for room in the
// scripted agent's pool.
func releaseWhenWaiting(t *testing.T, h *Engine, finish func()) {
	p, err := h.pool("scripted")
	if err != nil {
		t.Error(err)
		return
	}
	for deadline := time.Now().Add(30 * time.Second); p.Waiting() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("no task ever waited for room")
			break
		}
	}
	finish()
}

func agentWith(change func(*config.Agent)) *config.Agent {
	a := testAgent("scripted", "agent")
	change(a)
	return a
}

func TestPlaceAndSubmitAgree(t *testing.T) {
	t.Run("warm session reused", func(t *testing.T) {
		h := newTestHost(t, testAgent("scripted", "agent"))
		first := submitReads(t, h, "billing/ledger.go")
		d, _ := agree(t, h, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionReused || d.Session != first.Session {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("reuse guard vetoes the best session", func(t *testing.T) {
		h := newGuardedHost(t, rule(t, guard.Spec{Name: "one-task-each", Hook: guard.SessionReuse,
			Condition: `session.tasks >= 1`, Message: "fresh sessions only"}))
		first := submitReads(t, h, "billing/ledger.go")
		d, _ := agree(t, h, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionSpawned || !slices.Equal(d.Vetoed, []string{first.Session + ":one-task-each"}) {
			t.Errorf("Place: %+v", d)
		}
	})

	t.Run("busy best session, room in the pool", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) { a.Pool.MaxSessions = 2 }))
		release := filepath.Join(t.TempDir(), "release")
		busy, finish := startHeld(t, h, holdTask(release, "billing/ledger.go"), release)
		defer finish()
		d, out := agree(t, h, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionSpawned || out.Session == busy {
			t.Errorf("Place: %s; Submit ran on %s", d.Reason, out.Session)
		}
	})

	t.Run("full pool: a busy session would win, so wait for it", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) { a.Pool.MaxSessions = 1 }))
		release := filepath.Join(t.TempDir(), "release")
		busy, finish := startHeld(t, h, holdTask(release, "billing/ledger.go"), release)
		ctx := context.Background()
		d, err := h.Place(ctx, "scripted", readTask("billing/ledger.go").Hints)
		if err != nil || d.Action != hearth.ActionWait || d.Session != busy {
			t.Fatalf("Place: %+v, %v; want a wait for %s", d, err, busy)
		}
		// Submit waits for the busy session: it is let go once Submit
		// waits.
		go releaseWhenWaiting(t, h, finish)
		agree(t, h, readTask("billing/ledger.go"))
	})

	t.Run("full pool, wait: an idle session is reused below the threshold", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) { a.Pool.MaxSessions = 1 }))
		first := submitReads(t, h, "billing/ledger.go")
		d, _ := agree(t, h, readTask("search/index.go"))
		if d.Action != hearth.ActionReused || d.Session != first.Session || !strings.Contains(d.Reason, "below the threshold") {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("full pool, retire_idle: the idle session makes room", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) {
			a.Pool.MaxSessions = 1
			a.Pool.WhenFull = config.WhenFullRetireIdle
		}))
		first := submitReads(t, h, "billing/ledger.go")
		d, out := agree(t, h, readTask("search/index.go"))
		if d.Action != hearth.ActionSpawned || d.Retired != first.Session || out.Session == first.Session {
			t.Errorf("Place: %+v; Submit on %s", d, out.Session)
		}
	})

	t.Run("full pool, all busy and none would win: wait for any slot", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) { a.Pool.MaxSessions = 1 }))
		release := filepath.Join(t.TempDir(), "release")
		_, finish := startHeld(t, h, holdTask(release, "billing/ledger.go"), release)
		d, err := h.Place(context.Background(), "scripted", readTask("search/index.go").Hints)
		if err != nil || d.Action != hearth.ActionWait || d.Session != "" {
			t.Fatalf("Place: %+v, %v; want a wait for any slot", d, err)
		}
		go releaseWhenWaiting(t, h, finish)
		agree(t, h, readTask("search/index.go"))
	})

	t.Run("dormant session with saved state is rehydrated", func(t *testing.T) {
		dir := t.TempDir()
		h := newTestHostIn(t, dir, testAgent("scripted", "agent"))
		first := submitReads(t, h, "billing/ledger.go")
		if err := h.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		h = newTestHostIn(t, dir, testAgent("scripted", "agent"))
		d, _ := agree(t, h, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionRehydrated || d.Session != first.Session {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("dormant session without saved state is left out", func(t *testing.T) {
		dir := t.TempDir()
		h := newTestHostIn(t, dir, testAgent("scripted", "stateless"))
		submitReads(t, h, "billing/ledger.go")
		if err := h.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		h = newTestHostIn(t, dir, testAgent("scripted", "stateless"))
		d, out := agree(t, h, readTask("billing/ledger.go"))
		const note = "1 dormant session(s) left out"
		if d.Action != hearth.ActionSpawned || !strings.Contains(d.Reason, note) || !strings.Contains(out.Decision.Reason, note) {
			t.Errorf("Place: %s; Submit: %s", d.Reason, out.Decision.Reason)
		}
	})

	t.Run("round_robin placement: Place does not take the turn", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) {
			a.Pool.MaxSessions = 2
			a.Pool.Placement = config.PlacementRoundRobin
		}))
		submitReads(t, h, "a/1.go")
		submitReads(t, h, "b/2.go")
		for range 4 {
			// Asked twice, Place answers the same; Submit then takes
			// that turn, and the next question gets the other session.
			first, _ := h.Place(context.Background(), "scripted", readTask("c/3.go").Hints)
			again, _ := agree(t, h, readTask("c/3.go"))
			if first.Session != again.Session {
				t.Errorf("Place moved the rotation: %s then %s", first.Session, again.Session)
			}
		}
	})

	t.Run("fresh placement: always a new session", func(t *testing.T) {
		h := newTestHost(t, agentWith(func(a *config.Agent) { a.Pool.Placement = config.PlacementFresh }))
		first := submitReads(t, h, "a/1.go")
		d, out := agree(t, h, readTask("a/1.go"))
		if d.Action != hearth.ActionSpawned || out.Session == first.Session {
			t.Errorf("Place: %s; Submit on %s", d.Reason, out.Session)
		}
	})

	t.Run("external sessions are pointed at, not run", func(t *testing.T) {
		ext := config.DefaultExternal("claude-code", hearth.ExternalClaudeCode)
		ext.Workspace = "/src/app"
		h := newTestHost(t, ext)
		ctx := context.Background()
		ref := hearth.ExternalRef{Agent: "claude-code", Session: "cc-1", Workspace: "/src/app"}
		if err := h.ReportExternalToolUse(ctx, ref, sdk.ToolUse{Tool: "Read", Paths: []string{"/src/app/billing/ledger.go"}, Outcome: sdk.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		if err := h.ExternalTurn(ctx, ref, false); err != nil {
			t.Fatal(err)
		}
		d, err := h.Place(ctx, "claude-code", sdk.Hints{Files: []string{"billing/ledger.go"}, Directories: []string{"billing"}})
		if err != nil || d.Action != hearth.ActionResume || d.Session != "cc-1" {
			t.Fatalf("Place: %+v, %v", d, err)
		}
		if _, err := h.Submit(ctx, hearth.Task{Agent: "claude-code", Prompt: "x"}); !errors.Is(err, hearth.ErrExternalAgent) {
			t.Errorf("Submit to an external agent: %v, want ErrExternalAgent", err)
		}
	})
}
