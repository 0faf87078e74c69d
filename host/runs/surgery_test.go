package runs

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
)

// completed drives p to completion, every task succeeding once, and
// records its end.
func completed(t *testing.T, p *hearth.Pipeline) *driver {
	t.Helper()
	d := start(t, p, guards{})
	for !d.s.Stopping() {
		names := d.next()
		if len(names) == 0 && len(d.running) == 0 {
			break
		}
		for len(d.running) > 0 {
			for id := range d.running {
				d.advance(time.Minute)
				d.succeed(id, nil)
				break
			}
		}
	}
	if info := d.finish(); info.Status != hearth.RunCompleted {
		t.Fatalf("run %s: %s", info.Status, info.Reason)
	}
	return d
}

// TestRevise: a revisit runs its task again and treats what came after
// it by impact, recording the revision in the run's history.
func TestRevise(t *testing.T) {
	// outline -> draft -> edit, outline -> sources, draft -> summary
	p := pipeline(1, task("outline"), task("draft", "outline"), task("sources", "outline"), task("edit", "draft"), task("summary", "draft"))
	for _, tc := range []struct {
		name    string
		task    string
		impact  hearth.Impact
		affects []string
		want    string // statuses after, "r" for needs review
		archive []string
		wantErr string
	}{
		{name: "minor: downstream needs review", task: "draft", impact: hearth.ImpactMinor,
			want: "outline=succeeded draft=pending sources=succeeded edit=succeeded(r) summary=succeeded(r)", archive: []string{"draft v1"}},
		{name: "moderate: the direct dependents run again, the rest needs review", task: "outline", impact: hearth.ImpactModerate,
			want:    "outline=pending draft=pending sources=pending edit=succeeded(r) summary=succeeded(r)",
			archive: []string{"outline v1", "draft v1", "sources v1"}},
		{name: "moderate, affects: those tasks run again", task: "outline", impact: hearth.ImpactModerate, affects: []string{"edit"},
			want:    "outline=pending draft=succeeded(r) sources=succeeded(r) edit=pending summary=succeeded(r)",
			archive: []string{"outline v1", "edit v1"}},
		{name: "major: everything downstream runs again", task: "draft", impact: hearth.ImpactMajor,
			want: "outline=succeeded draft=pending sources=succeeded edit=pending summary=pending", archive: []string{"draft v1", "edit v1", "summary v1"}},
		{name: "an unknown task", task: "polish", impact: hearth.ImpactMinor, wantErr: `run essay-1 has no task "polish"; its tasks: outline, draft, sources, edit, summary`},
		{name: "affects on a minor revisit", task: "draft", impact: hearth.ImpactMinor, affects: []string{"edit"}, wantErr: "a minor revisit takes none"},
		{name: "affects not downstream", task: "draft", impact: hearth.ImpactModerate, affects: []string{"sources"}, wantErr: `"sources" is not downstream of it; downstream: edit, summary`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := completed(t, p)
			before := len(d.writes)
			eff, err := d.s.Revise(d.now, tc.task, tc.impact, hearth.RevisitOptions{Reason: "the thesis changed", Affects: tc.affects})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || eff.Write != nil {
					t.Fatalf("got %v (write %v), want an error saying %q and nothing written", err, eff.Write != nil, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d.take(eff)
			var got []string
			for _, rt := range d.s.tasks {
				s := rt.Name + "=" + string(rt.Status)
				if rt.NeedsReview {
					s += "(r)"
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %s\nwant %s", strings.Join(got, " "), tc.want)
			}
			revs := d.s.head.Revisions
			if len(revs) != 1 || !slices.Equal(revs[0].Archived, tc.archive) || revs[0].Reason != "the thesis changed" {
				t.Errorf("revisions %+v, want one archiving %v", revs, tc.archive)
			}
			if w := d.writes[len(d.writes)-1]; len(d.writes) != before+1 || w.Checkpoint == nil || !strings.HasPrefix(w.Checkpoint.Label, "revisit of "+tc.task) {
				t.Errorf("the revision is not in one checkpointed write: %+v", w.Checkpoint)
			}
			rt := d.s.tasks[d.s.index[tc.task]]
			if rt.Feedback != "This task is revisited: the thesis changed" || rt.Round != 2 {
				t.Errorf("%s: feedback %q, round %d", tc.task, rt.Feedback, rt.Round)
			}
			// Resumed from what was written, the revisited task runs again,
			// and its next output is v2.
			k := &disk{tasks: map[string]*record.Task{}, said: map[string]int{}, saidOK: map[string]int{}}
			for _, w := range d.writes {
				k.apply(w)
			}
			d, _ = resume(t, k, d.now, "revisit of "+tc.task)
			for range 10 {
				if slices.Contains(d.next(), tc.task) {
					break
				}
				for id := range d.running {
					d.succeed(id, nil)
				}
			}
			d.succeed(tc.task, nil)
			if v := d.s.tasks[d.s.index[tc.task]].Version; v != 2 {
				t.Errorf("%s's output after the revisit: v%d, want v2", tc.task, v)
			}
		})
	}
	t.Run("a running run is not revisited", func(t *testing.T) {
		d := start(t, p, guards{})
		if _, err := d.s.Revise(d.now, "draft", hearth.ImpactMinor, hearth.RevisitOptions{}); err == nil || !strings.Contains(err.Error(), "pause it first") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestProblems: what a resume refuses (or repairs) in a run's task
// records.
func TestProblems(t *testing.T) {
	p := pipeline(1, task("a"), task("b", "a"), task("c", "b"))
	for _, tc := range []struct {
		name   string
		change func(s *Schedule)
		want   []string
	}{
		{"consistent records", func(*Schedule) {}, nil},
		{"succeeded without an output", func(s *Schedule) { s.tasks[1].Version = 0 }, []string{"b: marked succeeded but has no output"}},
		{"its output gone", func(s *Schedule) { s.current[2] = nil }, []string{"c: its output v1 no longer exists"}},
		{"succeeded while what it depends on is not", func(s *Schedule) { s.tasks[0].Status = hearth.TaskPending },
			[]string{"b: marked succeeded while a, which it depends on, is pending"}},
		{"flagged for review: it stands", func(s *Schedule) { s.tasks[0].Status, s.tasks[1].NeedsReview = hearth.TaskPending, true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := completed(t, p)
			tc.change(d.s)
			var got []string
			for _, pr := range d.s.Problems() {
				got = append(got, pr.Task+": "+pr.Message)
				if pr.Repair == "" {
					t.Errorf("%s: no repair", pr.Message)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if len(got) == 0 {
				return
			}
			// A repair runs the tasks with a problem again (only those:
			// what depends on them stands, as it was).
			d.take(d.s.Repair(d.now, d.s.Problems()))
			for _, pr := range got {
				if name, _, _ := strings.Cut(pr, ":"); d.status(name) != hearth.TaskPending {
					t.Errorf("after repair, %s is %s", name, d.status(name))
				}
			}
			if w := d.writes[len(d.writes)-1]; w.Checkpoint == nil || w.Checkpoint.Label != "repaired on resume" {
				t.Errorf("the repair is not checkpointed: %+v", w.Checkpoint)
			}
		})
	}
}

// TestResumable: which runs may run again, and how a record that says
// running (its host stopped without saying how it ended) is read.
func TestResumable(t *testing.T) {
	for _, tc := range []struct {
		status hearth.RunStatus
		why    string
		want   string
	}{
		{hearth.RunPaused, "resumed", ""},
		{hearth.RunFailed, "resumed", ""},
		{hearth.RunRunning, "resumed", ""},
		{hearth.RunCompleted, "resumed", "completed; revisit a task to run it again"},
		{hearth.RunCompleted, "revisit of a (minor impact)", ""},
		{hearth.RunCancelled, "resumed", "cancelled; it cannot become running"},
	} {
		d := start(t, pipeline(1, task("a")), guards{})
		d.s.head.Status = tc.status
		err := d.s.Resumable(tc.why)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s, %s: got %v, want %q", tc.status, tc.why, err, tc.want)
		}
	}
}

// TestResumeResets: what runs again after a resume.
func TestResumeResets(t *testing.T) {
	d := start(t, pipeline(3, task("a"), task("b"), task("c"), task("d")), guards{})
	d.next()
	d.succeed("a", nil)
	d.fail("b", permanentErr)
	d.s.Stop(StopPause, hearth.RunPaused, "paused")
	d.end("c", nil, errors.New("context canceled"), errors.New("paused"))
	d.finish()
	d.s.tasks[3].Status = hearth.TaskRunning // a host that died mid-task
	if err := d.s.Resume(d.now, hearth.ResumeOptions{Budget: 9, State: map[string]json.RawMessage{"mood": json.RawMessage(`"calm"`)}}, "resumed"); err != nil {
		t.Fatal(err)
	}
	if got := d.statuses(); got != "a=succeeded b=pending c=pending d=pending" {
		t.Errorf("after resume: %s", got)
	}
	if rt := d.s.tasks[1]; rt.Failures != 0 || rt.Reason != "the run was resumed" {
		t.Errorf("b: %+v", rt)
	}
	if d.s.head.Budget != 9 || string(d.s.doc.sections["mood"]) != `"calm"` || d.s.head.GateLoops != nil {
		t.Errorf("head: budget %v, state %s, gate loops %v", d.s.head.Budget, d.s.head.State, d.s.head.GateLoops)
	}
}

// TestForkRecords: a fork starts from a checkpoint's records, the task
// records rebuilt by replaying the checkpoints up to it.
func TestForkRecords(t *testing.T) {
	d := completed(t, pipeline(1, task("a"), task("b", "a"), task("c", "b")))
	var cps []*record.Checkpoint
	var outs []*record.Output
	for _, w := range d.writes {
		if w.Checkpoint != nil {
			cps = append(cps, w.Checkpoint)
		}
		outs = append(outs, w.Outputs...)
	}
	// Checkpoint 3: after a's success (1 created, 2 ... see labels).
	var at uint64
	for _, c := range cps {
		if c.Label == "task a succeeded" {
			at = c.Seq
		}
	}
	now := t0.Add(time.Hour)
	head, tasks, copies, label, err := ForkRecords("essay-1", at, cps, outs, 7, now)
	if err != nil {
		t.Fatal(err)
	}
	if head.ID != "" || head.Status != hearth.RunCreated || head.ForkedFrom != "essay-1" || head.ForkedAt != at || head.Budget != 7 || !head.Created.Equal(now) || head.Checkpoint != 0 {
		t.Errorf("head %+v", head)
	}
	if label != "task a succeeded" || len(copies) != 1 || copies[0].Task != "a" {
		t.Errorf("label %q, copies %d", label, len(copies))
	}
	if tasks["a"].Status != hearth.TaskSucceeded || tasks["b"].Status != hearth.TaskPending {
		t.Errorf("tasks: a %s, b %s", tasks["a"].Status, tasks["b"].Status)
	}
	if _, _, _, _, err := ForkRecords("essay-1", 99, cps, outs, 0, now); err == nil || !strings.Contains(err.Error(), "run essay-1 has no checkpoint 99; its checkpoints are 1 to") {
		t.Errorf("a checkpoint that does not exist: %v", err)
	}
}

// TestPauseRecord: after a failed write, the status record is the head
// on disk, paused, its counters from the task records on disk, its
// checkpoint the newest on disk; a run the disk has stopped stays so.
func TestPauseRecord(t *testing.T) {
	d := start(t, pipeline(1, task("a"), task("b")), guards{})
	disk := &record.Run{ID: "essay-1", Status: hearth.RunRunning, Checkpoint: 5}
	recs := map[string]*record.Task{"a": {Name: "a", Status: hearth.TaskSucceeded}}
	head, write := d.s.PauseRecord(t0, disk, recs, 4, "disk full")
	if !write || head.Status != hearth.RunPaused || head.Reason != "disk full" || head.Checkpoint != 4 ||
		head.TasksTotal != 2 || head.TasksSucceeded != 1 {
		t.Errorf("got %+v, %v", head, write)
	}
	if _, write := d.s.PauseRecord(t0, &record.Run{Status: hearth.RunCancelled}, nil, 1, "x"); write {
		t.Error("a cancelled run on disk was to be paused")
	}
}

// TestSetSection: an agent's write of a state section goes in one write
// with the head's state document re-encoded and the event that reports
// it; a refused one writes nothing.
func TestSetSection(t *testing.T) {
	p := pipeline(1, task("a"))
	p.State.Owners = []*hearth.Owner{{Agent: "writer", Writes: []string{"draft"}}}
	d := start(t, p, guards{})
	eff, err := d.s.SetSection(d.now, "writer", "a", "draft", []byte(`{"words": 900}`))
	if err != nil || eff.Write == nil || string(eff.Write.Run.State) != `{"draft":{"words":900}}` ||
		len(eff.Write.Events) != 1 || eff.Write.Events[0].Message != "writer wrote section draft (14 bytes)" {
		t.Fatalf("writing a section: %v, %+v", err, eff.Write)
	}
	d.take(eff)
	if eff, err := d.s.SetSection(d.now, "critic", "a", "draft", []byte(`"x"`)); !errors.Is(err, sdk.ErrNotOwner) || eff.Write != nil {
		t.Errorf("a refused write: %v, write %v", err, eff.Write != nil)
	}
	eff, err = d.s.SetSection(d.now, "writer", "a", "draft", []byte("null"))
	if err != nil || eff.Write == nil || string(eff.Write.Run.State) != `{}` {
		t.Errorf("deleting a section: %v, %+v", err, eff.Write)
	}
}

// TestMarkChunk: a chunk's mark is written with the head that holds it,
// once; a mark that changes nothing writes nothing.
func TestMarkChunk(t *testing.T) {
	p := pipeline(1, task("a"))
	head := &record.Run{ID: "essay-1", Pipeline: p.Name, Status: hearth.RunRunning, Files: []record.File{{Name: "book.txt", SHA256: "ab", Size: 3}}}
	s, err := NewSchedule(head, &record.Graph{Pipeline: p}, nil, nil, guards{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{3, 1} {
		eff, err := s.MarkChunk(t0, "book.txt", c)
		if err != nil || eff.Write == nil || !slices.Contains(eff.Write.Run.Chunks["book.txt"], c) {
			t.Fatalf("mark %d: %v, %+v", c, err, eff.Write)
		}
	}
	if eff, _ := s.MarkChunk(t0, "book.txt", 1); eff.Write != nil {
		t.Error("a chunk marked again was written again")
	}
	if eff, err := s.MarkChunk(t0, "other.txt", 1); err == nil || eff.Write != nil {
		t.Errorf("a file the run does not have: %v, write %v", err, eff.Write != nil)
	}
	if got := head.Chunks["book.txt"]; !slices.Equal(got, []int{1, 3}) {
		t.Errorf("the head's marks: %v", got)
	}
}
