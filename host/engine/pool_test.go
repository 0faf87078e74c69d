package engine

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/hosttest"
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
	t.Parallel()
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
	if win.Session != a1.Session || win.Score("directory") != 1 || win.Score("file") != 0.5 || win.Score("tech") != 1 || lose.Score("directory") != 0 {
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

func TestKill9RestoresSessions(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
