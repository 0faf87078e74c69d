package runs

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// ledger is a run's records as plain values, and how each change to
// them is recorded: a task's or the run's status moves only along the
// lifecycle, with the event that reports it; a step's changes and its
// events go out as one write (save), or with a checkpoint of them
// (checkpoint); the tasks changed since the last checkpoint are kept
// (dirty) so that the next one carries them. It holds the head, the task
// records, each task's current output, the state document (stateDoc) and
// the files (runFiles). It decides nothing: the Schedule's rules and the
// surgery (surgery.go) say what changes; no lock, no I/O.
type ledger struct {
	*plan
	runFiles

	head    *record.Run
	tasks   []*record.Task
	current []*record.Output
	doc     *stateDoc
	dirty   map[int]bool
	// versions is the highest output version each task has had.
	versions map[string]int
	// events are the run's events since its last write: they go in its
	// next write (save), never before it.
	events []hearth.Event
	// now is the time of the call being answered; warnings, what it
	// found wrong.
	now      time.Time
	warnings []string
}

// newLedger holds the records of a run of plan p: its head, its task
// records by name (missing ones are pending, and written with the next
// checkpoint) and its outputs, every version. It keeps them and changes
// them.
func newLedger(p *plan, head *record.Run, recs map[string]*record.Task, outs []*record.Output) (*ledger, error) {
	doc, err := newStateDoc(p.id, p.pipe.State, head.State)
	if err != nil {
		return nil, err
	}
	l := &ledger{plan: p, head: head, doc: doc, dirty: make(map[int]bool),
		runFiles: runFiles{run: p.id, list: head.Files, chunks: head.Chunks}}
	l.tasks = make([]*record.Task, len(p.pipe.Tasks))
	for i, t := range p.pipe.Tasks {
		rec := recs[t.Name]
		if rec == nil {
			rec = &record.Task{Name: t.Name, Status: hearth.TaskPending, Round: 1}
			l.dirty[i] = true
		}
		l.tasks[i] = rec
	}
	l.current = make([]*record.Output, len(l.tasks))
	for _, o := range outs {
		i, ok := p.index[o.Task]
		if !ok {
			continue
		}
		l.noteVersion(i, o.Version)
		if o.Version == l.tasks[i].Version {
			l.current[i] = o
		}
	}
	l.count()
	return l, nil
}

// at starts answering a call made at now.
func (l *ledger) at(now time.Time) { l.now = now }

// count recounts the head's task counters.
func (l *ledger) count() {
	countTasks(l.head, len(l.tasks), func(i int) hearth.TaskStatus { return l.tasks[i].Status })
}

// countTasks sets head's task counters from the statuses of its n tasks.
func countTasks(head *record.Run, n int, status func(i int) hearth.TaskStatus) {
	var ok, failed, skipped int
	for i := range n {
		switch status(i) {
		case hearth.TaskSucceeded:
			ok++
		case hearth.TaskFailed:
			failed++
		case hearth.TaskSkipped:
			skipped++
		}
	}
	head.TasksTotal, head.TasksSucceeded, head.TasksFailed, head.TasksSkipped = n, ok, failed, skipped
}

// emit notes an event of the run: it goes in the run's next write (save),
// never before it.
func (l *ledger) emit(e hearth.Event) {
	e.Run = l.id
	if e.Time.IsZero() {
		e.Time = l.now
	}
	l.events = append(l.events, e)
}

func (l *ledger) warn(format string, a ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, a...))
}

// setTask moves task i to status to and records the change as an event.
// An illegal transition is a bug of the schedule: it is refused, and
// reported as a warning.
func (l *ledger) setTask(i int, to hearth.TaskStatus, msg string) bool {
	return l.setTaskCost(i, to, msg, 0)
}

// setTaskCost is setTask for an attempt that cost cost.
func (l *ledger) setTaskCost(i int, to hearth.TaskStatus, msg string, cost float64) bool {
	rt := l.tasks[i]
	from := rt.Status
	if from == to {
		return true
	}
	if !canTask(from, to) {
		l.warn("refused a task transition: %v", &hearth.TransitionError{Run: l.id, Task: rt.Name, From: string(from), To: string(to)})
		return false
	}
	rt.Status = to
	l.dirty[i] = true
	l.count()
	l.emit(hearth.Event{Kind: hearth.EventRunTask, Task: rt.Name, Agent: l.pipe.Tasks[i].Agent, From: string(from), To: string(to),
		Message: fmt.Sprintf("%s: %s -> %s%s", rt.Name, from, to, prefixed(": ", msg)), Err: errIf(to == hearth.TaskFailed || to == hearth.TaskRetrying, rt.Error),
		Cost: cost})
	return true
}

// setRun moves the run to status to, with reason.
func (l *ledger) setRun(to hearth.RunStatus, reason string) error {
	from := l.head.Status
	if from == to {
		l.head.Reason = reason
		return nil
	}
	if !canRun(from, to) {
		return &hearth.TransitionError{Run: l.id, From: string(from), To: string(to)}
	}
	l.head.Status, l.head.Reason = to, reason
	l.head.Updated = l.now
	switch {
	case to == hearth.RunRunning:
		l.head.Finished = time.Time{}
		if l.head.Started.IsZero() {
			l.head.Started = l.now
		}
	case to.Finished():
		l.head.Finished = l.now
	}
	l.emit(hearth.Event{Kind: hearth.EventRunStatus, From: string(from), To: string(to), Message: fmt.Sprintf("run %s: %s -> %s%s", l.id, from, to, prefixed(": ", reason))})
	return nil
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func errIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

// save ends a step that changed the run: its head, the tasks changed
// since the last checkpoint, anything else in w, and the events emitted
// since the last write, as one write. Without a checkpoint in w, task
// records stay dirty: the next checkpoint carries every task changed
// since the last one.
func (l *ledger) save(w record.RunWrite) Effects {
	l.head.Updated = l.now
	w.Run = l.head
	for _, i := range slices.Sorted(maps.Keys(l.dirty)) {
		w.Tasks = append(w.Tasks, l.tasks[i])
	}
	w.Events, l.events = l.events, nil
	return Effects{Write: &w, Warnings: l.takeWarnings()}
}

// checkpoint is save with a checkpoint of the head and the changed tasks,
// with label, in the same write.
func (l *ledger) checkpoint(label, task string, w record.RunWrite) (Effects, uint64) {
	seq := l.head.Checkpoint + 1
	l.head.Checkpoint = seq
	l.head.Updated = l.now
	c := &record.Checkpoint{Seq: seq, Parent: seq - 1, Label: label, Task: task, Time: l.now, Run: l.head}
	for _, i := range slices.Sorted(maps.Keys(l.dirty)) {
		c.Tasks = append(c.Tasks, l.tasks[i])
	}
	w.Checkpoint = c
	l.emit(hearth.Event{Kind: hearth.EventRunCheckpoint, Task: task, Message: fmt.Sprintf("checkpoint %d: %s", seq, label)})
	eff := l.save(w)
	clear(l.dirty)
	return eff, seq
}

// nothing is the answer of a call that changed nothing kept.
func (l *ledger) nothing() Effects { return Effects{Warnings: l.takeWarnings()} }

func (l *ledger) takeWarnings() []string {
	w := l.warnings
	l.warnings = nil
	return w
}

// touch records activity, for retention.
func (l *ledger) touch() { l.head.LastActivity = l.now }

// Info describes the run as it stands.
func (l *ledger) Info() hearth.RunInfo { return l.head.Info(false) }

// lastVersion is the highest output version task i has had: versions
// keep counting up after an output is archived.
func (l *ledger) lastVersion(i int) int {
	v := l.tasks[i].Version
	if o := l.current[i]; o != nil {
		v = max(v, o.Version)
	}
	if n, ok := l.versions[l.tasks[i].Name]; ok {
		v = max(v, n)
	}
	return v
}

// addCost adds what task i spent. A cost that is not a finite number
// above 0 (an agent's report: NaN, ±Inf, negative) adds nothing: NaN
// would make the run's cost NaN for good, never at its budget, and +Inf
// would put it past every budget a resume could give, in a record JSON
// cannot carry.
func (l *ledger) addCost(i int, c float64) {
	if !(c > 0) || math.IsInf(c, 1) {
		return
	}
	l.tasks[i].Cost += c
	l.head.Cost += c
	l.dirty[i] = true
}

// reset sets task i back to pending for a new round of work; its current
// output is archived.
func (l *ledger) reset(i int, reason string) {
	rt := l.tasks[i]
	if v := rt.Version; v > 0 {
		l.noteVersion(i, v)
	}
	rt.Version, rt.Round, rt.Attempts, rt.Failures = 0, rt.Round+1, 0, 0
	rt.Error, rt.Errors, rt.NeedsReview, rt.Reason, rt.RetryAt = "", nil, false, reason, time.Time{}
	l.current[i] = nil
	l.dirty[i] = true
	l.setTask(i, hearth.TaskPending, reason)
}

// noteVersion remembers that task i had output version v, so that the
// next version is v+1 even after the output was archived.
func (l *ledger) noteVersion(i int, v int) {
	if l.versions == nil {
		l.versions = make(map[string]int)
	}
	name := l.tasks[i].Name
	l.versions[name] = max(l.versions[name], v)
}

// Traced records the trace the run's execution in this host belongs to
// (its hearth.run span's), "" when it is not traced; the next write
// carries it, and each task started from now on takes it.
func (l *ledger) Traced(traceID string) { l.head.TraceID = traceID }

// TaskStatus is task i's status as its record says.
func (l *ledger) TaskStatus(i int) hearth.TaskStatus { return l.tasks[i].Status }

// Status is the run's status as its records say.
func (l *ledger) Status() hearth.RunStatus { return l.head.Status }

// Newest is the number of the run's newest checkpoint.
func (l *ledger) Newest() uint64 { return l.head.Checkpoint }

// LastActivity is when the run last did something, for retention.
func (l *ledger) LastActivity() time.Time { return l.head.LastActivity }

// stateChanged puts the state document, changed, in the head.
func (l *ledger) stateChanged() error {
	b, err := l.doc.encode()
	if err != nil {
		return err
	}
	l.head.State = b
	return nil
}

// chunksChanged puts the chunk marks, changed, in the head.
func (l *ledger) chunksChanged() { l.head.Chunks = l.chunks }
