package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/hosttest"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// reads is a scripted prompt that reads files, and the hints that name them.
func reads(files ...string) (string, sdk.Hints) {
	var b strings.Builder
	dirs := map[string]bool{}
	var hints sdk.Hints
	for _, f := range files {
		b.WriteString("read:" + f + ";")
		hints.Files = append(hints.Files, f)
		if d := filepath.Dir(f); !dirs[d] {
			dirs[d] = true
			hints.Directories = append(hints.Directories, d)
		}
	}
	hints.Technologies = []string{"go"}
	return b.String(), hints
}

func submitReads(t *testing.T, h *Engine, files ...string) *hearth.Outcome {
	t.Helper()
	prompt, hints := reads(files...)
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt, Hints: hints})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWarmSessionFollowsContext: each task goes to the session that
// already read its files; a task in new territory gets a new session.
func TestWarmSessionFollowsContext(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	a1 := submitReads(t, h, "billing/ledger.go", "billing/invoice.go")
	b1 := submitReads(t, h, "search/index.go", "search/query.go")
	if a1.Decision.Action != hearth.ActionSpawned || b1.Decision.Action != hearth.ActionSpawned || a1.Session == b1.Session {
		t.Fatalf("first tasks: got %s on %s and %s on %s, want two spawns", a1.Decision.Action, a1.Session, b1.Decision.Action, b1.Session)
	}
	if b1.Decision.Outcome != "spawn-below-threshold" || !strings.Contains(b1.Decision.Reason, "not above 0.60") {
		t.Errorf("second task: got %q (%s), want a spawn explained by a score below the threshold", b1.Decision.Reason, b1.Decision.Outcome)
	}
	a2 := submitReads(t, h, "billing/ledger.go", "billing/tax.go")
	b2 := submitReads(t, h, "search/query.go")
	if a2.Session != a1.Session || a2.Decision.Action != hearth.ActionReused {
		t.Errorf("billing again: got %s (%s), want %s reused", a2.Session, a2.Decision.Reason, a1.Session)
	}
	if b2.Session != b1.Session || b2.Decision.Action != hearth.ActionReused {
		t.Errorf("search again: got %s (%s), want %s reused", b2.Session, b2.Decision.Reason, b1.Session)
	}
	// The decision explains itself: the winner's factors and the loser's.
	if len(a2.Decision.Candidates) != 2 {
		t.Fatalf("candidates: got %+v, want both sessions scored", a2.Decision.Candidates)
	}
	win, lose := a2.Decision.Candidates[0], a2.Decision.Candidates[1]
	if win.Session != a1.Session || win.Directory != 1 || win.File != 0.5 || win.Tech != 1 || lose.Directory != 0 {
		t.Errorf("scores: got winner %+v, runner-up %+v", win, lose)
	}
	if a2.Decision.Score <= 0.6 || !strings.HasPrefix(a2.Decision.Reason, "reused "+a1.Session) {
		t.Errorf("reason: got %q (%.2f)", a2.Decision.Reason, a2.Decision.Score)
	}
	// Decisions are in the store, indexed by the sessions they involved.
	evs, err := h.store.DecisionsFor(a1.Session, 10)
	if err != nil || len(evs) != 4 {
		t.Fatalf("decisions involving %s: got %d, %v; want 4 (its spawn, a reuse, and two as a candidate)", a1.Session, len(evs), err)
	}
	if d := evs[0].Decision; d.Session != b2.Session || d.Action != hearth.ActionReused {
		t.Errorf("newest decision: got %+v", d)
	}
}

func TestFingerprintFromToolUses(t *testing.T) {
	a := testAgent("scripted", "agent")
	a.Fingerprint.MaxFiles = 3
	h := newTestHost(t, a)
	out := submitReads(t, h, "a/1.go", "a/2.go", "b/3.go", "b/4.go", "b/5.go")
	p := h.pools["scripted"]
	info, _ := p.Info(out.Session)
	// The fingerprint, most recently used first: b/5.go was read last.
	files, dirs, techs := info.Files, info.Directories, info.Technologies
	c, _ := p.Candidate(out.Session)
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

func TestKill9RestoresSessions(t *testing.T) {
	dir := t.TempDir()
	cmd, sc := startHostIn(t, "sessions", dir)
	f := hosttest.ExpectLine(t, sc, "ready")
	billing, search := f[0], f[1]
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	h := newTestHostIn(t, dir, testAgent("scripted", "agent"))
	p := h.pools["scripted"]
	bs, found := p.Info(billing)
	ok := found && bs.Status == "dormant" && bs.Reason == "the host stopped without retiring it"
	c, indexed := p.Candidate(billing)
	if !ok || !indexed || !slices.Contains(c.Files, "billing/tax.go") || !c.Dormant {
		t.Fatalf("session %s after kill -9: got %+v, indexed %+v", billing, bs, c)
	}
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "seen", Hints: sdk.Hints{Files: []string{"search/index.go"}, Directories: []string{"search"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Session != search || out.Decision.Action != hearth.ActionRehydrated || out.Result.Output != "search/index.go" {
		t.Errorf("got %s %s %q, want %s rehydrated", out.Session, out.Decision.Action, out.Result.Output, search)
	}
}

// TestToolUsesAfterTheSnapshotAreReplayed: a fingerprint snapshot older
// than the session's last tool uses is brought up to date from the log.
func TestToolUsesAfterTheSnapshotAreReplayed(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Write, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.PutSession(ctx, record.Session{ID: "scripted-00000001", Agent: "scripted", Status: record.SessionLive,
		Files: []string{"a/1.go"}, Dirs: []string{"a"}, HasState: true, LastActivity: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"b/2.go", "b/3.go"} {
		ev := hearth.Event{Time: time.Now(), Kind: hearth.EventToolUsed, Agent: "scripted", Session: "scripted-00000001", ToolUse: &sdk.ToolUse{Tool: "Read", Paths: []string{f}, Outcome: sdk.OutcomeOK}}
		if _, pend := st.Append(ev); pend != nil {
			if err := pend.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := ctx.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	h := newTestHostIn(t, dir, testAgent("scripted", "agent"))
	p := h.pools["scripted"]
	info, _ := p.Info("scripted-00000001")
	uses := info.ToolUses
	c, indexed := p.Candidate("scripted-00000001")
	slices.Sort(c.Files)
	if !indexed || !c.Dormant || !slices.Equal(c.Files, []string{"a/1.go", "b/2.go", "b/3.go"}) || uses != 2 {
		t.Errorf("index %+v (%v), tool uses %d: want the snapshot and the two replayed reads", c, indexed, uses)
	}
	// The replayed fingerprint was written back, in recency order.
	rec, err := h.store.SessionRecord("scripted-00000001")
	if err != nil || !slices.Equal(rec.Files, []string{"a/1.go", "b/2.go", "b/3.go"}) {
		t.Errorf("stored fingerprint: got %v, %v", rec.Files, err)
	}
}

// TestConcurrentTasksRespectCapacityAndPool: many tasks at once never put
// more tasks on a session than its capacity, nor more sessions in the pool
// than its maximum.
func TestConcurrentTasksRespectCapacityAndPool(t *testing.T) {
	a := testAgent("scripted", "agent")
	a.Capacity = 2
	a.Pool.MaxSessions = 3
	a.Env[envCapacity] = "2"
	h := newTestHost(t, a)
	sub := h.Subscribe(1024)
	defer sub.Close()
	var wg sync.WaitGroup
	const tasks = 24
	for i := range tasks {
		wg.Go(func() {
			prompt, hints := reads(fmt.Sprintf("pkg%d/file.go", i%5))
			out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "enter;" + prompt + "sleep:20ms;leave", Hints: hints})
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
	sub.Close()
	spawned := 0
	for e := range sub.C {
		if e.Kind == hearth.EventSessionSpawned {
			spawned++
		}
	}
	if spawned > 3 || spawned == 0 {
		t.Errorf("spawned %d sessions, want 1 to 3", spawned)
	}
	if sub.Dropped() != 0 {
		t.Errorf("the subscription dropped %d events", sub.Dropped())
	}
}

func TestPlaceDoesNothing(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	d, err := h.Place(context.Background(), "scripted", sdk.Hints{Files: []string{"a.go"}})
	if err != nil || d.Action != hearth.ActionSpawned || d.Outcome != "spawn-no-candidates" {
		t.Fatalf("got %+v, %v", d, err)
	}
	if st := h.Agents()[0]; st.Live != 0 {
		t.Errorf("Place started a session: %+v", st)
	}
	if _, err := h.Place(context.Background(), "nobody", sdk.Hints{}); !errors.Is(err, hearth.ErrUnknownAgent) {
		t.Errorf("unknown agent: got %v", err)
	}
}

// TestFullPoolWaitsForABusyWinner: with the pool full, a task whose warm
// session is busy waits for it rather than going to an idle, cold one.
func TestFullPoolWaitsForABusyWinner(t *testing.T) {
	a := testAgent("scripted", "agent")
	a.Pool.MaxSessions = 2
	h := newTestHost(t, a)
	billing := submitReads(t, h, "billing/ledger.go")
	search := submitReads(t, h, "search/index.go")
	if billing.Session == search.Session {
		t.Fatal("want two sessions")
	}
	sub := h.Subscribe(64)
	defer sub.Close()
	release := filepath.Join(t.TempDir(), "release")
	prompt, hints := reads("billing/ledger.go")
	busy := make(chan *hearth.Outcome)
	go func() {
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt + "progress:0.5;wait:" + release, Hints: hints})
		if err != nil {
			t.Error(err)
		}
		busy <- out
	}()
	waitEvent(t, sub, hearth.EventTaskProgress)
	next := make(chan *hearth.Outcome)
	go func() {
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt, Hints: hints})
		if err != nil {
			t.Error(err)
		}
		next <- out
	}()
	// The second billing task must not have gone anywhere yet: the only
	// free session is the cold one. Only the release lets it through.
	select {
	case out := <-next:
		t.Fatalf("placed on %s while the warm session was busy: %s", out.Session, out.Decision.Reason)
	case <-time.After(100 * time.Millisecond):
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
	a := testAgent("scripted", "agent")
	a.TaskTimeout = 300 * time.Millisecond
	h := newTestHost(t, a)
	_, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "tools:100000000"})
	if !errors.Is(err, hearth.ErrPluginHung) {
		t.Fatalf("got %v, want the task timed out", err)
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:after"}); err != nil {
		t.Errorf("the next task: %v", err)
	}
}

// TestRefusedStateDoesNotPoisonTheSession: a dormant session whose agent
// refuses its saved state is not rehydrated again and again: the task
// goes to a fresh session, saying why, and the dormant one is no longer a
// candidate.
func TestRefusedStateDoesNotPoisonTheSession(t *testing.T) {
	dir := t.TempDir()
	h := newTestHostIn(t, dir, testAgent("scripted", "agent"))
	first := submitReads(t, h, "billing/ledger.go")
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The saved state is no longer something the agent accepts.
	st, err := store.Open(dir, store.Write, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.SessionRecord(first.Session)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutSessionState(context.Background(), rec, []byte("not a JSON list")); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h2 := newTestHostIn(t, dir, testAgent("scripted", "agent"))
	for i := range 2 {
		out := submitReads(t, h2, "billing/ledger.go")
		if out.Session == first.Session {
			t.Fatalf("task %d ran on %s, whose state the agent refuses", i, first.Session)
		}
		if i == 0 && (out.Decision.Action != hearth.ActionSpawned || !strings.HasPrefix(out.Decision.Reason, "rehydrating "+first.Session+" failed")) {
			t.Errorf("first task: got %+v, want a spawn that says the rehydration failed", out.Decision)
		}
	}
	if _, ok := h2.pools["scripted"].Candidate(first.Session); ok {
		t.Error("the refused session is still a candidate")
	}
}

// TestRootTaskKeepsItsSession: the README's wordcount case. A task naming
// a file at the workspace root goes back to the session that read it for
// the whole idle timeout, not only for the first minutes.
func TestRootTaskKeepsItsSession(t *testing.T) {
	a := testAgent("scripted", "agent")
	clock := &fakeClock{now: time.Now()}
	h, err := New(Options{
		Config: &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher()},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
		Now:    clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	first := submitReads(t, h, "main.go")
	clock.Advance(a.Pool.IdleTimeout - time.Minute)
	d, err := h.Place(context.Background(), "scripted", sdk.Hints{Files: []string{"main.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != hearth.ActionReused || d.Session != first.Session {
		t.Errorf("%s later: got %s %s (%s), want %s reused", a.Pool.IdleTimeout-time.Minute, d.Action, d.Session, d.Reason, first.Session)
	}
	if c := d.Candidates[0]; c.Directory != 1 || c.File != 1 {
		t.Errorf("candidate: got %+v, want dir 1.00 and file 1.00", c)
	}
}
