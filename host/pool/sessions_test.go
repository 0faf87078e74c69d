package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// The pool's work on real plugin processes (this test binary, serving
// the scripted agent) over a session store in memory: what host/engine's
// pool tests held through the engine, held here where the pool does it.
// The engine keeps the end-to-end ones (a warm session follows context
// with decisions indexed in Badger, sessions restored after kill -9,
// plugins that fail to start or crash, the pool's agents' environment).

func TestFingerprintFromToolUses(t *testing.T) {
	sp := pluginSpec("agent")
	sp.Fingerprint.MaxFiles = 3
	k := newKit(t, sp)
	out := k.runReads(t, "a/1.go", "a/2.go", "b/3.go", "b/4.go", "b/5.go")
	info, _ := k.p.Info(out.Session)
	// The fingerprint, most recently used first: b/5.go was read last.
	files, dirs, techs := info.Files, info.Directories, info.Technologies
	c, _ := k.p.Candidate(out.Session)
	if !slices.Equal(files, []string{"b/5.go", "b/4.go", "b/3.go"}) {
		t.Errorf("files: got %v, want the 3 most recent", files)
	}
	if !slices.Equal(dirs, []string{"b", "a"}) || !slices.Equal(techs, []string{"go"}) {
		t.Errorf("dirs %v techs %v", dirs, techs)
	}
	slices.Sort(c.Files)
	slices.Sort(files)
	if !slices.Equal(c.Files, files) {
		t.Errorf("the index holds %v, the fingerprint %v", c.Files, files)
	}
}

// TestConcurrentTasksRespectCapacityAndPool: many tasks at once never put
// more tasks on a session than its capacity, nor more sessions in the pool
// than its maximum.
func TestConcurrentTasksRespectCapacityAndPool(t *testing.T) {
	sp := pluginSpec("agent")
	sp.Capacity, sp.MaxSessions = 2, 3
	sp.Launch.Env = append(sp.Launch.Env, envCapacity+"=2")
	k := newKit(t, sp)
	var wg sync.WaitGroup
	const tasks = 24
	for i := range tasks {
		wg.Go(func() {
			prompt, hints := reads(fmt.Sprintf("pkg%d/file.go", i%5))
			out, err := k.run(hearth.Task{Prompt: "enter;" + prompt + "sleep:20ms;leave", Hints: hints})
			if err != nil {
				t.Error(err)
				return
			}
			if m := out.Result.Metrics["running_max"]; m > 2 {
				t.Errorf("session %s ran %v tasks at once, capacity 2", out.Session, m)
			}
		})
	}
	wg.Wait()
	if spawned := len(k.events.of(hearth.EventSessionSpawned)); spawned > 3 || spawned == 0 {
		t.Errorf("spawned %d sessions, want 1 to 3", spawned)
	}
}

func TestPlaceDoesNothing(t *testing.T) {
	k := newKit(t, pluginSpec("agent"))
	d := k.p.Place(hearth.Task{Agent: "scripted", Hints: sdk.Hints{Files: []string{"a.go"}}})
	if d.Action != hearth.ActionSpawned || d.Outcome != "spawn-no-candidates" {
		t.Fatalf("got %+v", d)
	}
	if n := k.p.Counts(); n["live"]+n["starting"] != 0 || len(k.events.of(hearth.EventSessionSpawned)) != 0 {
		t.Errorf("Place started a session: %v", n)
	}
}

// awaitEvent waits until an event of kind has been emitted.
func (k *kit) awaitEvent(t *testing.T, kind hearth.EventKind) {
	t.Helper()
	k.events.await(t, "an event "+string(kind), func() bool { return len(k.events.of(kind)) > 0 })
}

// TestFullPoolWaitsForABusyWinner: with the pool full, a task whose warm
// session is busy waits for it rather than going to an idle, cold one.
func TestFullPoolWaitsForABusyWinner(t *testing.T) {
	sp := pluginSpec("agent")
	sp.MaxSessions = 2
	k := newKit(t, sp)
	billing := k.runReads(t, "billing/ledger.go")
	search := k.runReads(t, "search/index.go")
	if billing.Session == search.Session {
		t.Fatal("want two sessions")
	}
	release := filepath.Join(t.TempDir(), "release")
	prompt, hints := reads("billing/ledger.go")
	busy := make(chan *hearth.Outcome)
	go func() {
		out, err := k.run(hearth.Task{Prompt: prompt + "progress:0.5;wait:" + release, Hints: hints})
		if err != nil {
			t.Error(err)
		}
		busy <- out
	}()
	k.awaitEvent(t, hearth.EventTaskProgress)
	next := make(chan *hearth.Outcome)
	go func() {
		out, err := k.run(hearth.Task{Prompt: prompt, Hints: hints})
		if err != nil {
			t.Error(err)
		}
		next <- out
	}()
	// The second billing task must not have gone anywhere yet: the only
	// free session is the cold one. It waits for room, and only the
	// release lets it through.
	for k.p.Waiting() == 0 {
		select {
		case out := <-next:
			t.Fatalf("placed on %s while the warm session was busy: %s", out.Session, out.Decision.Reason)
		case <-time.After(time.Millisecond):
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-busy
	out := <-next
	if out.Session != billing.Session || out.Decision.Action != hearth.ActionReused || out.Decision.Waited == 0 {
		t.Errorf("got %s: %s; want the warm %s after a wait", out.Session, out.Decision.Reason, billing.Session)
	}
}

// TestReportsAfterATimeout: an agent still streaming tool uses when its
// task times out (and its session is stopped) does not bring the host
// down; the next task runs.
func TestReportsAfterATimeout(t *testing.T) {
	sp := pluginSpec("agent")
	sp.TaskTimeout = 300 * time.Millisecond
	k := newKit(t, sp)
	_, err := k.run(hearth.Task{Prompt: "tools:100000000"})
	if !errors.Is(err, hearth.ErrPluginHung) {
		t.Fatalf("got %v, want the task timed out", err)
	}
	if _, err := k.run(hearth.Task{Prompt: "echo:after"}); err != nil {
		t.Errorf("the next task: %v", err)
	}
}

// TestRefusedStateDoesNotPoisonTheSession: a dormant session whose agent
// refuses its saved state is not rehydrated again and again: the task
// goes to a fresh session, saying why, and the dormant one is no longer a
// candidate.
func TestRefusedStateDoesNotPoisonTheSession(t *testing.T) {
	k := newKit(t, pluginSpec("agent"))
	first := k.runReads(t, "billing/ledger.go")
	k.restart(t)
	// The saved state is no longer something the agent accepts.
	k.store.mu.Lock()
	if _, ok := k.store.state[first.Session]; !ok {
		t.Fatal("the retired session's state was not kept")
	}
	k.store.state[first.Session] = []byte("not a JSON list")
	k.store.mu.Unlock()
	for i := range 2 {
		out := k.runReads(t, "billing/ledger.go")
		if out.Session == first.Session {
			t.Fatalf("task %d ran on %s, whose state the agent refuses", i, first.Session)
		}
		if i == 0 && (out.Decision.Action != hearth.ActionSpawned || !strings.HasPrefix(out.Decision.Reason, "rehydrating "+first.Session+" failed")) {
			t.Errorf("first task: got %+v, want a spawn that says the rehydration failed", out.Decision)
		}
	}
	if _, ok := k.p.Candidate(first.Session); ok {
		t.Error("the refused session is still a candidate")
	}
}

// TestRootTaskKeepsItsSession: the README's wordcount case. A task naming
// a file at the workspace root goes back to the session that read it for
// the whole idle timeout, not only for the first minutes.
func TestRootTaskKeepsItsSession(t *testing.T) {
	sp := pluginSpec("agent")
	k := newKit(t, sp)
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	k.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	first := k.runReads(t, "main.go")
	mu.Lock()
	now = now.Add(sp.IdleTimeout - time.Minute)
	mu.Unlock()
	d := k.p.Place(hearth.Task{Agent: "scripted", Hints: sdk.Hints{Files: []string{"main.go"}}})
	if d.Action != hearth.ActionReused || d.Session != first.Session {
		t.Errorf("%s later: got %s %s (%s), want %s reused", sp.IdleTimeout-time.Minute, d.Action, d.Session, d.Reason, first.Session)
	}
	if c := d.Candidates[0]; c.Score("directory") != 1 || c.Score("file") != 1 {
		t.Errorf("candidate: got %+v, want dir 1.00 and file 1.00", c)
	}
}

// agree asks Place where a task would go, then runs it, and checks that
// Execute did what Place said. A spawn names no session in advance; a
// wait names the busy session it waits for, which the task then gets.
func (k *kit) agree(t *testing.T, task hearth.Task) (hearth.Decision, *hearth.Outcome) {
	t.Helper()
	task.Agent = "scripted"
	d := k.p.Place(task)
	out, err := k.run(task)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Decision
	switch d.Action {
	case hearth.ActionWait:
		if got.Waited <= 0 {
			t.Errorf("Place said wait (%s); Execute did not wait: %s", d.Reason, got.Reason)
		}
		if d.Session != "" && got.Session != d.Session {
			t.Errorf("Place said wait for %s; Execute ran on %s: %s", d.Session, got.Session, got.Reason)
		}
	case hearth.ActionSpawned:
		if got.Action != hearth.ActionSpawned {
			t.Errorf("Place said spawn (%s); Execute %s %s (%s)", d.Reason, got.Action, got.Session, got.Reason)
		}
	default:
		if got.Action != d.Action || got.Session != d.Session {
			t.Errorf("Place said %s %s (%s); Execute %s %s (%s)", d.Action, d.Session, d.Reason, got.Action, got.Session, got.Reason)
		}
	}
	if !slices.Equal(d.Vetoed, got.Vetoed) || d.Retired != got.Retired {
		t.Errorf("vetoed %v retired %q by Place; %v and %q by Execute", d.Vetoed, d.Retired, got.Vetoed, got.Retired)
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

// startHeld runs task in the background and returns once it runs on a
// session and has reported its reads, and a func that lets it finish and
// waits for it (called at the test's end too: a held task would keep
// the pool from closing).
func (k *kit) startHeld(t *testing.T, task hearth.Task, release string) (session string, finish func()) {
	t.Helper()
	done := make(chan struct{})
	task.ID = sdk.NewID("task")
	go func() {
		defer close(done)
		if _, err := k.run(task); err != nil {
			t.Error(err)
		}
	}()
	reads := len(task.Hints.Files)
	k.events.await(t, "the held task's reads", func() bool {
		uses := 0
		for _, e := range k.events.of(hearth.EventToolUsed) {
			if e.Task == task.ID {
				uses++
				session = e.Session
			}
		}
		return uses >= reads
	})
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

// releaseWhenWaiting calls finish once a task waits for room.
func (k *kit) releaseWhenWaiting(t *testing.T, finish func()) {
	for deadline := time.Now().Add(30 * time.Second); k.p.Waiting() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("no task ever waited for room")
			break
		}
	}
	finish()
}

// The tests below hold Place to what Execute then does: one placement
// policy, decided the same way, whether or not it is acted on.
func TestPlaceAndExecuteAgree(t *testing.T) {
	with := func(change func(*Spec)) Spec {
		sp := pluginSpec("agent")
		change(&sp)
		return sp
	}
	t.Run("warm session reused", func(t *testing.T) {
		k := newKit(t, pluginSpec("agent"))
		first := k.runReads(t, "billing/ledger.go")
		d, _ := k.agree(t, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionReused || d.Session != first.Session {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("reuse guard vetoes the best session", func(t *testing.T) {
		k := newKit(t, pluginSpec("agent"), guard.Spec{Name: "one-task-each", Hook: guard.SessionReuse,
			Condition: `session.tasks >= 1`, Message: "fresh sessions only"})
		first := k.runReads(t, "billing/ledger.go")
		d, out := k.agree(t, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionSpawned || !slices.Equal(d.Vetoed, []string{first.Session + ":one-task-each"}) {
			t.Errorf("Place: %+v", d)
		}
		// The veto is a guard that fired, recorded once for the task.
		if fired := k.events.of(hearth.EventGuardFired); len(fired) != 1 || fired[0].Guard != "one-task-each" || fired[0].Task != out.TaskID {
			t.Errorf("guard events: %+v", fired)
		}
	})

	t.Run("busy best session, room in the pool", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 2 }))
		release := filepath.Join(t.TempDir(), "release")
		busy, finish := k.startHeld(t, holdTask(release, "billing/ledger.go"), release)
		defer finish()
		d, out := k.agree(t, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionSpawned || out.Session == busy {
			t.Errorf("Place: %s; Execute ran on %s", d.Reason, out.Session)
		}
	})

	t.Run("full pool: a busy session would win, so wait for it", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 1 }))
		release := filepath.Join(t.TempDir(), "release")
		busy, finish := k.startHeld(t, holdTask(release, "billing/ledger.go"), release)
		if d := k.p.Place(readTask("billing/ledger.go")); d.Action != hearth.ActionWait || d.Session != busy {
			t.Fatalf("Place: %+v; want a wait for %s", d, busy)
		}
		go k.releaseWhenWaiting(t, finish)
		k.agree(t, readTask("billing/ledger.go"))
	})

	t.Run("full pool, wait: an idle session is reused below the threshold", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 1 }))
		first := k.runReads(t, "billing/ledger.go")
		d, _ := k.agree(t, readTask("search/index.go"))
		if d.Action != hearth.ActionReused || d.Session != first.Session || !strings.Contains(d.Reason, "below the threshold") {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("full pool, retire_idle: the idle session makes room", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 1; s.WhenFull = hearth.WhenFullRetireIdle }))
		first := k.runReads(t, "billing/ledger.go")
		d, out := k.agree(t, readTask("search/index.go"))
		if d.Action != hearth.ActionSpawned || d.Retired != first.Session || out.Session == first.Session {
			t.Errorf("Place: %+v; Execute on %s", d, out.Session)
		}
	})

	t.Run("full pool, all busy and none would win: wait for any slot", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 1 }))
		release := filepath.Join(t.TempDir(), "release")
		_, finish := k.startHeld(t, holdTask(release, "billing/ledger.go"), release)
		if d := k.p.Place(readTask("search/index.go")); d.Action != hearth.ActionWait || d.Session != "" {
			t.Fatalf("Place: %+v; want a wait for any slot", d)
		}
		go k.releaseWhenWaiting(t, finish)
		k.agree(t, readTask("search/index.go"))
	})

	t.Run("dormant session with saved state is rehydrated", func(t *testing.T) {
		k := newKit(t, pluginSpec("agent"))
		first := k.runReads(t, "billing/ledger.go")
		k.restart(t)
		d, _ := k.agree(t, readTask("billing/ledger.go"))
		if d.Action != hearth.ActionRehydrated || d.Session != first.Session {
			t.Errorf("Place: %s", d.Reason)
		}
	})

	t.Run("dormant session without saved state is left out", func(t *testing.T) {
		k := newKit(t, pluginSpec("stateless"))
		k.runReads(t, "billing/ledger.go")
		k.restart(t)
		d, out := k.agree(t, readTask("billing/ledger.go"))
		const note = "1 dormant session(s) left out"
		if d.Action != hearth.ActionSpawned || !strings.Contains(d.Reason, note) || !strings.Contains(out.Decision.Reason, note) {
			t.Errorf("Place: %s; Execute: %s", d.Reason, out.Decision.Reason)
		}
	})

	t.Run("round_robin placement: Place does not take the turn", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.MaxSessions = 2; s.Placement = hearth.PlacementRoundRobin }))
		k.runReads(t, "a/1.go")
		k.runReads(t, "b/2.go")
		for range 4 {
			// Asked twice, Place answers the same; Execute then takes
			// that turn, and the next question gets the other session.
			first := k.p.Place(readTask("c/3.go"))
			again, _ := k.agree(t, readTask("c/3.go"))
			if first.Session != again.Session {
				t.Errorf("Place moved the rotation: %s then %s", first.Session, again.Session)
			}
		}
	})

	t.Run("fresh placement: always a new session", func(t *testing.T) {
		k := newKit(t, with(func(s *Spec) { s.Placement = hearth.PlacementFresh }))
		first := k.runReads(t, "a/1.go")
		d, out := k.agree(t, readTask("a/1.go"))
		if d.Action != hearth.ActionSpawned || out.Session == first.Session {
			t.Errorf("Place: %s; Execute on %s", d.Reason, out.Session)
		}
	})
}

// TestPreToolUseGuardDenies: a pre_tool_use guard's denial reaches the
// agent as the reason, keeps the denied path out of the fingerprint, is
// an event, and counts as a firing.
func TestPreToolUseGuardDenies(t *testing.T) {
	k := newKit(t, pluginSpec("agent"), guard.Spec{Name: "no-secrets", Hook: guard.PreToolUse,
		Condition: `tool == "Read" && any(paths, glob(#, "**/.env*"))`, Message: "secrets are off limits"})
	out, err := k.run(hearth.Task{Prompt: "read:app/.env.production;read:app/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Result.Output, "denied app/.env.production: secrets are off limits") {
		t.Errorf("output %q: want the agent to have got the guard's message as the reason", out.Result.Output)
	}
	info := k.info(t, out.Session)
	if slices.Contains(info.Files, "app/.env.production") || !slices.Contains(info.Files, "app/main.go") {
		t.Errorf("fingerprint %v: want the allowed read only", info.Files)
	}
	fired := k.events.of(hearth.EventGuardFired)
	if len(fired) != 1 {
		t.Fatalf("guard events: %+v", fired)
	}
	if d := fired[0]; d.Guard != "no-secrets" || d.Hook != "pre_tool_use" || d.Action != "deny" || d.Message != "secrets are off limits" || d.Task != out.TaskID || d.Session != out.Session {
		t.Errorf("denial event: got %+v", d)
	}
	if st := k.set.Stats(); st[0].Fired != 1 {
		t.Errorf("stats: got %+v, want one firing counted", st)
	}
}

func TestPreToolUseGuardSeesTheSession(t *testing.T) {
	k := newKit(t, pluginSpec("agent"), guard.Spec{Name: "two-files", Hook: guard.PreToolUse,
		Condition: `len(session.files) >= 2 && !(paths[0] in session.files)`, Message: "this session has read enough new files"})
	// The first task's reads are acknowledged when it returns, so the
	// second's questions see them. (Within one task, a question can
	// overtake the task's own reports still in flight.)
	first, err := k.run(hearth.Task{Prompt: "read:a.go;read:b.go"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.run(hearth.Task{Prompt: "read:c.go;read:a.go"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Session != first.Session || out.Result.Output != "denied c.go: this session has read enough new files" {
		t.Errorf("got %q on %s, want c.go denied and a.go (already known) allowed on %s", out.Result.Output, out.Session, first.Session)
	}
}

func TestReuseGuardVetoes(t *testing.T) {
	k := newKit(t, pluginSpec("agent"), guard.Spec{Name: "one-task-each", Hook: guard.SessionReuse,
		Condition: `session.tasks >= 1`, Message: "sessions run one task"})
	first := k.runReads(t, "a/x.go")
	second := k.runReads(t, "a/x.go")
	if second.Session == first.Session || second.Decision.Action != hearth.ActionSpawned {
		t.Fatalf("got %s (%s), want a new session: the warm one was vetoed", second.Session, second.Decision.Reason)
	}
	if !slices.Equal(second.Decision.Vetoed, []string{first.Session + ":one-task-each"}) || !strings.HasPrefix(second.Decision.Reason, "vetoed "+first.Session+":one-task-each; spawned") {
		t.Errorf("decision: got %+v", second.Decision)
	}
}

func TestUncheckedToolUseIsFlagged(t *testing.T) {
	noEnv := guard.Spec{Name: "no-env", Hook: guard.PreToolUse,
		Condition: `tool == "Read" && any(paths, glob(#, "**/.env"))`, Message: "secrets are off limits"}
	unchecked := func(k *kit, out *hearth.Outcome) []string {
		var msgs []string
		for _, e := range k.events.of(hearth.EventToolUnchecked) {
			if e.Task == out.TaskID {
				msgs = append(msgs, e.Message)
			}
		}
		return msgs
	}

	k := newKit(t, pluginSpec("agent"), noEnv)
	out, err := k.run(hearth.Task{Prompt: "sneak:app/.env;read:app/main.go"})
	if err != nil {
		t.Fatalf("without require_checks the task stands: %v", err)
	}
	if n := k.info(t, out.Session).Unchecked; n != 1 {
		t.Errorf("the session counts %d unchecked uses, want 1 (sessions show and the dashboard show it)", n)
	}
	msgs := unchecked(k, out)
	if len(msgs) != 1 || !strings.Contains(msgs[0], "Read app/.env was reported without a check") || !strings.Contains(msgs[0], `guard "no-env" would have denied it`) {
		t.Errorf("tool.unchecked events %q: want one, for app/.env, naming no-env", msgs)
	}

	out, err = k.run(hearth.Task{Prompt: "sneak:app/.env", RequireChecks: true})
	if err == nil || !errors.Is(err, hearth.ErrUnchecked) || !errors.Is(err, sdk.ErrPermanent) ||
		!strings.Contains(err.Error(), "require_checks") || !strings.Contains(err.Error(), "no-env") {
		t.Fatalf("with checks required: err %v (outcome %+v); want a permanent failure naming the use, the guard and require_checks", err, out)
	}

	// The agent's require_checks applies to every task.
	sp := pluginSpec("agent")
	sp.RequireChecks = true
	strict := newKit(t, sp, noEnv)
	if _, err := strict.run(hearth.Task{Prompt: "sneak:app/.env"}); !errors.Is(err, hearth.ErrUnchecked) {
		t.Errorf("agent block with require_checks: err %v, want ErrUnchecked", err)
	}
	out, err = strict.run(hearth.Task{Prompt: "read:app/main.go"})
	if err != nil {
		t.Fatalf("an agent that asks is never failed for it: %v", err)
	}
	if msgs := unchecked(strict, out); len(msgs) != 0 {
		t.Errorf("a checked use was flagged: %q", msgs)
	}
}
