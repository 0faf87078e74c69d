package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
)

func setGuards(t *testing.T, h *Engine, specs ...guard.Spec) {
	t.Helper()
	var rules []*guard.Rule
	for _, s := range specs {
		r, err := guard.Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	h.cfg.Guards = rules
	h.guards.Store(h.cfg.GuardSet())
}

// TestRunAdmissionRefusalAfterAStart: a task refused admission in the
// same scheduling pass as a task that started escalates the run, and the
// started task still runs to its end (it used to be recorded as running
// and never launched, and the run never stopped).
func TestRunAdmissionRefusalAfterAStart(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	setGuards(t, h, guard.Spec{Name: "not-b", Hook: guard.TaskAdmission, Tasks: []string{"b"}, Condition: "true", Message: "b is not admitted"})
	p := pipe("admit", []string{"a", "sleep:50ms;echo:a"}, []string{"b", "echo:b"})
	p.Parallel = 4
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed || err == nil || !strings.Contains(info.Reason, "b is not admitted") {
		t.Fatalf("run: %s (%s), %v; want failed by the admission guard", info.Status, info.Reason, err)
	}
	d, _ := h.Run(context.Background(), info.ID)
	got := map[string]hearth.TaskStatus{}
	for _, ti := range d.TaskList {
		got[ti.Name] = ti.Status
	}
	if got["a"] != hearth.TaskSucceeded || got["b"] != hearth.TaskPending {
		t.Errorf("tasks %v; want a finished (it was in flight) and b never started", got)
	}
}

// TestRunGateDiscardsResultsOfAResetRound: a quality gate sends the work
// back past a task that is still running; when that attempt ends, its
// result belongs to a round that is over and is discarded, and the task
// runs again in the new round.
func TestRunGateDiscardsResultsOfAResetRound(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	setGuards(t, h, guard.Spec{Name: "quality", Hook: guard.TaskResult, Action: guard.SendBack, To: "research", MaxLoops: 2,
		Tasks: []string{"evaluate"}, Condition: "result.metrics.quality < 0.8", Message: "dig deeper"})
	release := filepath.Join(t.TempDir(), "release")
	p := pipe("gate",
		[]string{"research", "echo:notes"},
		[]string{"side", "wait:" + release + ";attempt", "research"},
		[]string{"evaluate", "roundmetric:quality=0.5,0.9", "research"})
	p.Parallel = 2
	id := hearth.NewRunID(p.Name, h.now())
	sub := h.SubscribeRun(id, 1024)
	defer sub.Close()
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: hearth.RunOptions{ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	awaitRunEvent(t, sub, hearth.EventRunGate)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := waitRun(t, rh)
	if err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("run: %s (%s), %v; want completed", info.Status, info.Reason, err)
	}
	outs := outputsOf(t, h, id)
	if side := outs["side"]; len(side) != 1 || side[0].Round != 2 || !strings.Contains(side[0].Output, id+"/side/2") {
		t.Errorf("side's outputs %+v; want only round 2's", side)
	}
	var discarded bool
	for _, e := range mustEvents(t, h, id) {
		discarded = discarded || strings.Contains(e.Message, "side: attempt 1 of round 1 ended after its round was reset")
	}
	if !discarded {
		t.Error("no event says the stale attempt's result was discarded")
	}
}

func mustEvents(t *testing.T, h *Engine, id string) []hearth.Event {
	t.Helper()
	evs, err := h.RunEvents(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRunRevisitChecksBeforeRevising: a revisit that cannot resume the
// run (a file is gone) changes nothing; it used to record the revision
// and reset the tasks first.
func TestRunRevisitChecksBeforeRevising(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := startRun(t, h, pipe("essay", []string{"a", "files"}, []string{"b", "echo:b", "a"}), hearth.RunOptions{Files: []string{notes}})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotRun(t, h, info.ID)
	d, _ := h.Run(context.Background(), info.ID)
	if err := os.Remove(d.Files[0].Path); err != nil {
		t.Fatal(err)
	}
	_, err = h.RevisitRun(context.Background(), info.ID, "a", hearth.ImpactMajor, hearth.RevisitOptions{Reason: "redo"})
	if !errors.Is(err, hearth.ErrRunInvalid) || !strings.Contains(err.Error(), "missing from the file store") {
		t.Fatalf("revisit with a missing file: %v; want the validation error", err)
	}
	if after := snapshotRun(t, h, info.ID); after != before {
		t.Errorf("a refused revisit changed the run:\nbefore %s\nafter  %s", before, after)
	}
}
