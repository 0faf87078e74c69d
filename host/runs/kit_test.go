package runs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
)

// The kit of the schedule's tests: pipelines written in a line, guards
// as functions, and a driver that feeds a Schedule what happened and
// keeps what it answered, checking after every answer the rules that
// hold whatever the run does (checkEffects). No store, no plugin, no
// goroutine: the time is the driver's.

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// task is a pipeline task of agent "writer" depending on deps.
func task(name string, deps ...string) *hearth.PipelineTask {
	return &hearth.PipelineTask{Name: name, Agent: "writer", Prompt: "do " + name, DependsOn: deps}
}

// staged is task in stage.
func staged(stage, name string, deps ...string) *hearth.PipelineTask {
	t := task(name, deps...)
	t.Stage = stage
	return t
}

// pipeline is a pipeline of tasks, running parallel of them at once,
// with its defaults applied (three attempts, backoff 1s doubling to 30s,
// a failure fails the run).
func pipeline(parallel int, tasks ...*hearth.PipelineTask) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: "essay", Parallel: parallel, Tasks: tasks}
	p.Defaults()
	return p
}

// guards are run-level guards written as functions; nil lets all pass.
type guards struct {
	admit      func(t hearth.Task, run guard.Run) *guard.Verdict
	transition func(run guard.Run, from, to string) *guard.Verdict
}

func (g guards) Admit(t hearth.Task, run guard.Run) *guard.Verdict {
	if g.admit == nil {
		return nil
	}
	return g.admit(t, run)
}

func (g guards) Transition(run guard.Run, from, to string) *guard.Verdict {
	if g.transition == nil {
		return nil
	}
	return g.transition(run, from, to)
}

// driver feeds a schedule what happens to its run and keeps what it
// answers: the writes, in order, as the store would have them (copied
// when made: the schedule's records change after), and the attempts it
// started that have not ended.
type driver struct {
	t   *testing.T
	s   *Schedule
	now time.Time
	// running are the attempts started and not ended, by host task ID:
	// two rounds of a task may run at once (a gate sent the work back
	// past the one still running).
	running map[string]attempt
	// writes are the answered writes, copied.
	writes []record.RunWrite
	// successes counts, by task, the writes that record a success.
	successes map[string]int
}

// start makes a run of p, records it ("created"), and launches it.
func start(t *testing.T, p *hearth.Pipeline, g Guards) *driver {
	t.Helper()
	head := &record.Run{ID: "essay-1", Pipeline: p.Name, Status: hearth.RunCreated, Created: t0, Updated: t0, LastActivity: t0, Budget: p.Budget}
	graph := &record.Graph{Pipeline: p}
	s, err := NewSchedule(head, graph, nil, nil, g)
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, s: s, now: t0, running: map[string]attempt{}, successes: map[string]int{}}
	d.take(s.Created(t0, graph, nil))
	eff, err := s.Launch(t0, "started")
	if err != nil {
		t.Fatal(err)
	}
	d.take(eff)
	return d
}

// play starts a run of p and plays steps on it, in order, each logged.
func play(t *testing.T, p *hearth.Pipeline, g Guards, steps []step) {
	t.Helper()
	d := start(t, p, g)
	for i, s := range steps {
		d.t.Logf("step %d: %s", i+1, s.what)
		s.do(d)
	}
}

// advance moves the clock.
func (d *driver) advance(by time.Duration) { d.now = d.now.Add(by) }

// take checks an answer and keeps its write and its attempts.
func (d *driver) take(eff Effects) Effects {
	d.t.Helper()
	for _, w := range eff.Warnings {
		d.t.Errorf("warning: %s", w)
	}
	checkEffects(d.t, eff, d.successes)
	if eff.Write != nil {
		d.writes = append(d.writes, copyWrite(*eff.Write))
	}
	for _, a := range eff.Launch {
		if _, dup := d.running[a.task.ID]; dup {
			d.t.Fatalf("attempt %s started twice", a.task.ID)
		}
		for _, b := range d.running {
			if b.i == a.i && b.round == a.round {
				d.t.Fatalf("attempt %s started while %s of the same round runs", a.task.ID, b.task.ID)
			}
		}
		d.running[a.task.ID] = a
	}
	return eff
}

// next asks what starts now, and returns the names started.
func (d *driver) next() []string {
	d.t.Helper()
	eff := d.take(d.s.Next(d.now))
	var out []string
	for _, a := range eff.Launch {
		out = append(out, d.s.tasks[a.i].Name)
	}
	return out
}

// wake is when the last Next said to wake.
func (d *driver) wake() time.Time {
	d.t.Helper()
	eff := d.take(d.s.Next(d.now))
	if len(eff.Launch) > 0 {
		d.t.Fatalf("wake: %d attempts started", len(eff.Launch))
	}
	return eff.WakeAt
}

// end ends the running attempt of name with out or err, the way the shell
// does: the pool hands a success's event to the run first.
func (d *driver) end(name string, out *hearth.Outcome, err, interrupted error) {
	d.t.Helper()
	a := d.attemptOf(name)
	delete(d.running, a.task.ID)
	if err == nil && out != nil {
		d.s.Succeeded(hearth.Event{Kind: hearth.EventTaskSucceeded, Agent: "writer", Session: out.Session, Task: a.task.ID, Run: a.task.Run,
			Message: a.task.ID + " succeeded", Cost: out.Result.Cost})
	}
	d.take(d.s.Ended(d.now, a, out, err, interrupted))
}

// succeed ends name's attempt with a result, and gate when not nil.
func (d *driver) succeed(name string, gate *hearth.Gate) {
	d.t.Helper()
	d.end(name, &hearth.Outcome{Session: "writer-1", Result: sdk.Result{Output: "the " + name, Cost: 0.5},
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{name + " decided"}}, Gate: gate,
		Decision: hearth.Decision{Action: hearth.ActionReused}, Duration: time.Second}, nil, nil)
}

// fail ends name's attempt with err.
func (d *driver) fail(name string, err error) {
	d.t.Helper()
	d.end(name, nil, err, nil)
}

// attemptOf is the running attempt of task name, or of host task ID
// name; of a task's attempts, the latest round's.
func (d *driver) attemptOf(name string) attempt {
	d.t.Helper()
	if a, ok := d.running[name]; ok {
		return a
	}
	var found *attempt
	for _, a := range d.running {
		if a.task.Name == name && (found == nil || a.round > found.round) {
			found = &a
		}
	}
	if found == nil {
		d.t.Fatalf("task %s is not running; running: %v", name, slices.Sorted(maps.Keys(d.running)))
	}
	return *found
}

// finish records how the run stopped, once nothing runs.
func (d *driver) finish() hearth.RunInfo {
	d.t.Helper()
	if !d.s.Stopping() {
		d.t.Fatalf("finish: the run is not stopping (%s)", d.statuses())
	}
	if n := d.s.Running(); n > 0 {
		d.t.Fatalf("finish: %d attempts run", n)
	}
	eff, err := d.s.Finish(d.now)
	if err != nil {
		d.t.Fatal(err)
	}
	d.take(eff)
	return d.s.Info()
}

// statuses are the tasks' statuses, "a=succeeded b=running".
func (d *driver) statuses() string {
	var out []string
	for _, rt := range d.s.tasks {
		out = append(out, rt.Name+"="+string(rt.Status))
	}
	return strings.Join(out, " ")
}

// status is task name's status.
func (d *driver) status(name string) hearth.TaskStatus { return d.s.tasks[d.s.index[name]].Status }

// events are the kinds of the events written so far, "run.task a
// running->succeeded" for a task's transitions.
func (d *driver) events() []string {
	var out []string
	for _, w := range d.writes {
		for _, e := range w.Events {
			switch e.Kind {
			case hearth.EventRunTask:
				out = append(out, fmt.Sprintf("%s %s %s->%s", e.Kind, e.Task, e.From, e.To))
			case hearth.EventRunStage, hearth.EventRunStatus:
				out = append(out, fmt.Sprintf("%s %s->%s", e.Kind, e.From, e.To))
			default:
				out = append(out, string(e.Kind))
			}
		}
	}
	return out
}

// copyWrite copies the records of w: the schedule keeps changing its own.
func copyWrite(w record.RunWrite) record.RunWrite {
	if w.Run != nil {
		w.Run = w.Run.Clone()
	}
	tasks := make([]*record.Task, len(w.Tasks))
	for i, t := range w.Tasks {
		tasks[i] = t.Clone()
	}
	w.Tasks = tasks
	if c := w.Checkpoint; c != nil {
		cp := *c
		cp.Run = c.Run.Clone()
		cp.Tasks = make([]*record.Task, len(c.Tasks))
		for i, t := range c.Tasks {
			cp.Tasks[i] = t.Clone()
		}
		w.Checkpoint = &cp
	}
	w.Events = slices.Clone(w.Events)
	return w
}

// checkEffects holds an answer of the schedule to the rules that hold
// whatever the run does: "nothing is shown or published as done before
// the write that makes it so", as the schedule can break it.
//
//   - Events travel in writes: an answer never carries an event without
//     the write of the records it reports (Effects has nowhere else to
//     put one), and the write carries the run's head.
//   - An event that says something is done is in the write that records
//     it: a task's move to succeeded with the task's record, succeeded; a
//     task.succeeded with the task's record, succeeded, and its output; a
//     checkpoint with that checkpoint; a run's status and stage with the
//     head that holds them.
//   - A task.succeeded is only ever said in the write that records the
//     success: the task's output, its record, and its move to succeeded
//     (successes counts the moves, by task, for the sweep to compare
//     with the outputs written).
//   - Attempts started are recorded as running in the same write.
func checkEffects(t *testing.T, eff Effects, successes map[string]int) {
	t.Helper()
	w := eff.Write
	if w == nil {
		if len(eff.Launch) > 0 {
			t.Errorf("%d attempts started without a write recording them", len(eff.Launch))
		}
		return
	}
	if w.Run == nil {
		t.Fatalf("a write without the run's head: %+v", w)
	}
	rec := func(name string) *record.Task {
		for _, r := range w.Tasks {
			if r.Name == name {
				return r
			}
		}
		if c := w.Checkpoint; c != nil {
			for _, r := range c.Tasks {
				if r.Name == name {
					return r
				}
			}
		}
		return nil
	}
	output := func(name string) bool {
		return slices.ContainsFunc(w.Outputs, func(o *record.Output) bool { return o.Task == name })
	}
	for _, e := range w.Events {
		if e.Run != w.Run.ID {
			t.Errorf("event %s of run %q in a write of run %s", e.Kind, e.Run, w.Run.ID)
		}
		switch e.Kind {
		case hearth.EventRunTask:
			if e.To == "" {
				continue // a discarded result: no transition
			}
			r := rec(e.Task)
			if r == nil {
				t.Errorf("%s -> %s said without task %s's record in its write", e.Task, e.To, e.Task)
				continue
			}
			if e.To == string(hearth.TaskSucceeded) {
				successes[e.Task]++
			}
		case hearth.EventTaskSucceeded:
			name := taskOf(e.Task)
			moved := slices.ContainsFunc(w.Events, func(o hearth.Event) bool {
				return o.Kind == hearth.EventRunTask && o.Task == name && o.To == string(hearth.TaskSucceeded)
			})
			if rec(name) == nil || !output(name) || !moved {
				t.Errorf("task.succeeded of %s said in a write that does not record the success (record %v, output %v, moved to succeeded %v)", e.Task, rec(name) != nil, output(name), moved)
			}
		case hearth.EventRunCheckpoint:
			if w.Checkpoint == nil || !strings.HasPrefix(e.Message, fmt.Sprintf("checkpoint %d:", w.Checkpoint.Seq)) {
				t.Errorf("%q said in a write with checkpoint %+v", e.Message, w.Checkpoint)
			}
		case hearth.EventRunStatus:
			if string(w.Run.Status) != e.To {
				t.Errorf("run status -> %s said in a write whose head says %s", e.To, w.Run.Status)
			}
		case hearth.EventRunStage:
			if w.Run.Stage != e.To {
				t.Errorf("stage -> %s said in a write whose head is in stage %q", e.To, w.Run.Stage)
			}
		}
	}
	for _, a := range eff.Launch {
		if r := rec(a.task.Name); r == nil || r.Status != hearth.TaskRunning || r.TaskID != a.task.ID {
			t.Errorf("attempt %s started, recorded as %+v", a.task.ID, r)
		}
	}
}

// taskOf is the pipeline task of a host task ID (run/name/round/attempt).
func taskOf(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) < 4 {
		return id
	}
	return parts[len(parts)-3]
}

// transient is an error a retry may get past.
var transient = errors.New("the model timed out")
