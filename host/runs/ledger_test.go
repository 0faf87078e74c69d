package runs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// TestLedger: how each change to a run's records is recorded. A status
// moves only along the lifecycle, with its event; a write carries the
// head, the tasks changed since the last checkpoint and the events since
// the last write; a checkpoint carries the changed tasks and starts
// counting them again; a reset archives the task's output, whose version
// the next output still counts past.
func TestLedger(t *testing.T) {
	newLedgerOf := func(t *testing.T) *ledger {
		t.Helper()
		p := pipeline(1, task("a"), task("b", "a"))
		head := &record.Run{ID: "essay-1", Pipeline: p.Name, Status: hearth.RunCreated, Created: t0}
		recs := map[string]*record.Task{"a": {Name: "a", Status: hearth.TaskSucceeded, Round: 1, Version: 2}}
		outs := []*record.Output{{Task: "a", Version: 1}, {Task: "a", Version: 2}, {Task: "a", Version: 4}} // 4: archived
		l, err := newLedger(newPlan(head.ID, p, ""), head, recs, outs)
		if err != nil {
			t.Fatal(err)
		}
		l.at(t0)
		return l
	}
	// wrote describes a write: its tasks, its checkpoint's label and
	// tasks, its events' messages.
	wrote := func(eff Effects) string {
		if eff.Write == nil {
			return "nothing"
		}
		w := eff.Write
		var b strings.Builder
		fmt.Fprintf(&b, "run %s", w.Run.Status)
		for _, rt := range w.Tasks {
			fmt.Fprintf(&b, " %s=%s", rt.Name, rt.Status)
		}
		if c := w.Checkpoint; c != nil {
			fmt.Fprintf(&b, "; checkpoint %d %q of", c.Seq, c.Label)
			for _, rt := range c.Tasks {
				fmt.Fprintf(&b, " %s", rt.Name)
			}
		}
		for _, e := range w.Events {
			fmt.Fprintf(&b, "; %s", e.Message)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		do   func(l *ledger) string
		want string
	}{
		{"made: the counters, the current output, the records not on disk dirty",
			func(l *ledger) string {
				return fmt.Sprintf("%d/%d succeeded; a current v%d; next v%d; dirty %v", l.head.TasksSucceeded, l.head.TasksTotal, l.current[0].Version, l.lastVersion(0)+1, l.dirty)
			},
			"1/2 succeeded; a current v2; next v5; dirty map[1:true]"},
		{"a legal task transition: its event goes in the next write, with the dirty tasks",
			func(l *ledger) string {
				ok := l.setTask(1, hearth.TaskRunning, "attempt 1 of 3")
				return fmt.Sprint(ok, "; ", wrote(l.save(record.RunWrite{})), "; then ", wrote(l.save(record.RunWrite{})))
			},
			"true; run created b=running; b: pending -> running: attempt 1 of 3; then run created b=running"},
		{"an illegal task transition is refused, as a warning",
			func(l *ledger) string {
				ok := l.setTask(1, hearth.TaskSucceeded, "")
				eff := l.nothing()
				return fmt.Sprint(ok, " ", l.tasks[1].Status, " ", eff.Warnings)
			},
			"false pending [refused a task transition: run essay-1: task b cannot go from pending to succeeded]"},
		{"a checkpoint carries the changed tasks, then none",
			func(l *ledger) string {
				eff, seq := l.checkpoint("first", "", record.RunWrite{})
				eff2, _ := l.checkpoint("second", "", record.RunWrite{})
				return fmt.Sprint(seq, ": ", wrote(eff), " | ", wrote(eff2))
			},
			`1: run created b=pending; checkpoint 1 "first" of b; checkpoint 1: first | run created; checkpoint 2 "second" of; checkpoint 2: second`},
		{"the run's transitions: started once, finished when it ends",
			func(l *ledger) string {
				err1 := l.setRun(hearth.RunRunning, "started")
				l.at(t0.Add(time.Hour))
				err2 := l.setRun(hearth.RunCompleted, "")
				err3 := l.setRun(hearth.RunPaused, "late")
				return fmt.Sprint(err1, err2, " ", l.head.Started.Sub(t0), " ", l.head.Finished.Sub(t0), " ", l.head.Status, "; ", errors.As(err3, new(*hearth.TransitionError)), "; ", wrote(l.save(record.RunWrite{})))
			},
			"<nil> <nil> 0s 1h0m0s completed; true; run completed b=pending; run essay-1: created -> running: started; run essay-1: running -> completed"},
		{"a reset archives the output: a new round, pending, the next version past every one",
			func(l *ledger) string {
				l.reset(0, "sent back")
				rt := l.tasks[0]
				return fmt.Sprintf("%s round %d v%d current %v next v%d; %d/%d succeeded", rt.Status, rt.Round, rt.Version, l.current[0] != nil, l.lastVersion(0)+1, l.head.TasksSucceeded, l.head.TasksTotal)
			},
			"pending round 2 v0 current false next v5; 0/2 succeeded"},
		{"cost: counted on the task and the run, nothing for none",
			func(l *ledger) string {
				l.addCost(0, 0.25)
				l.addCost(0, 0)
				l.addCost(0, -1)
				return fmt.Sprint(l.tasks[0].Cost, " ", l.head.Cost, " ", l.dirty[0])
			},
			"0.25 0.25 true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.do(newLedgerOf(t)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
