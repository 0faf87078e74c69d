package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/contextchain"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

// maxErrors bounds the errors a task record keeps per round.
const maxErrors = 10

// feedbackOutputMax bounds how much of a gated task's output goes back to
// the earlier task as feedback.
const feedbackOutputMax = 4 << 10

// stageCompleted is the stage a run that uses stages enters when its last
// task succeeds: transition guards may block it.
const stageCompleted = "completed"

// stopKind is why a run stops executing.
type stopKind int

const (
	stopPause    stopKind = iota + 1 // asked for (PauseRun, retention)
	stopCancel                       // CancelRun
	stopShutdown                     // the host is closing
	stopEscalate                     // a task failed for good, a gate or guard said so
)

type stopRequest struct {
	kind   stopKind
	to     hearth.RunStatus
	reason string
}

// runExec executes one run in this engine: it decides which tasks start,
// runs their attempts, and writes every change to the store. Everything
// under mu is the run's truth in memory; each change is queued to the
// store while mu is held, so that the store sees changes in the order
// they were made (the committer keeps queue order), and waited for
// outside it.
type runExec struct {
	m      *Runs
	id     string
	pipe   *hearth.Pipeline
	config string
	index  map[string]int
	deps   [][]int
	kids   [][]int
	depMap contextchain.DepMap
	render *contextchain.Renderer
	stages bool
	handle *Handle

	mu      sync.Mutex
	head    *record.Run
	tasks   []*record.Task
	current []*record.Output
	state   map[string]json.RawMessage
	dirty   map[int]bool
	running int
	stop    *stopRequest
	// ctx is the context of the run's attempts; cancelled, with the cause,
	// to interrupt them (pause, cancel).
	ctx      context.Context
	cancel   context.CancelCauseFunc
	wake     chan struct{}
	attempts sync.WaitGroup
	// progressCost is the cost the running attempts last reported, by
	// host task ID: what a failed attempt adds to the run's cost.
	progressCost map[string]float64
	// versions is the highest output version each task has had.
	versions map[string]int
	// storeErr is the first write of the run that failed: from then on
	// the run writes nothing but its status record (finish), paused for
	// storeReason.
	storeErr error
	// events are the run's events since its last write: they go in its
	// next write (saveLocked), never before it.
	events []hearth.Event
	// succeeded holds the pool's task.succeeded event of each attempt
	// (by host task ID) until its outcome is recorded (Succeeded).
	succeeded map[string]hearth.Event
}

// newRunExec builds the executor of a run from its records.
func (m *Runs) newRunExec(head *record.Run, g *record.Graph, recs map[string]*record.Task, outs []*record.Output) (*runExec, error) {
	pipe := g.Pipeline
	render, err := renderer(pipe.Context)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", head.ID, err)
	}
	r := &runExec{
		m: m, id: head.ID, pipe: pipe, config: g.Config, render: render,
		index: make(map[string]int, len(pipe.Tasks)), depMap: make(contextchain.DepMap, len(pipe.Tasks)),
		head: head, dirty: make(map[int]bool), wake: make(chan struct{}, 1),
		progressCost: make(map[string]float64),
		handle:       &Handle{ID: head.ID, done: make(chan struct{})},
	}
	for i, t := range pipe.Tasks {
		r.index[t.Name] = i
		r.depMap[t.Name] = t.DependsOn
		if t.Stage != "" {
			r.stages = true
		}
	}
	r.deps = make([][]int, len(pipe.Tasks))
	r.kids = make([][]int, len(pipe.Tasks))
	for i, t := range pipe.Tasks {
		for _, d := range t.DependsOn {
			j := r.index[d]
			r.deps[i] = append(r.deps[i], j)
			r.kids[j] = append(r.kids[j], i)
		}
	}
	r.tasks = make([]*record.Task, len(pipe.Tasks))
	for i, t := range pipe.Tasks {
		rec := recs[t.Name]
		if rec == nil {
			rec = &record.Task{Name: t.Name, Status: hearth.TaskPending, Round: 1}
			r.dirty[i] = true
		}
		r.tasks[i] = rec
	}
	r.current = make([]*record.Output, len(r.tasks))
	for _, o := range outs {
		i, ok := r.index[o.Task]
		if !ok {
			continue
		}
		r.noteVersion(i, o.Version)
		if o.Version == r.tasks[i].Version {
			r.current[i] = o
		}
	}
	r.state = make(map[string]json.RawMessage)
	if b := head.State; len(b) > 0 {
		if err := json.Unmarshal(b, &r.state); err != nil {
			return nil, fmt.Errorf("run %s: state document: %w", r.id, err)
		}
	}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	r.countLocked()
	return r, nil
}

// countLocked recounts the head's task counters.
func (r *runExec) countLocked() {
	countTasks(r.head, len(r.tasks), func(i int) hearth.TaskStatus { return r.tasks[i].Status })
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

func (r *runExec) now() time.Time { return r.m.now() }

// emit notes an event of the run, to be written with the run's next
// write and published once that write is durable (saveLocked). r.mu
// must be held; every change an event reports is followed by a write.
func (r *runExec) emit(e hearth.Event) {
	e.Run = r.id
	if e.Time.IsZero() {
		e.Time = r.now()
	}
	r.events = append(r.events, e)
}

// setTaskLocked moves task i to status to and records the change as an
// event. An illegal transition is a bug in the executor: it is refused
// and logged.
func (r *runExec) setTaskLocked(i int, to hearth.TaskStatus, msg string) bool {
	return r.setTaskCostLocked(i, to, msg, 0)
}

// setTaskCostLocked is setTaskLocked for an attempt that cost cost.
func (r *runExec) setTaskCostLocked(i int, to hearth.TaskStatus, msg string, cost float64) bool {
	rt := r.tasks[i]
	from := rt.Status
	if from == to {
		return true
	}
	if !canTask(from, to) {
		err := &hearth.TransitionError{Run: r.id, Task: rt.Name, From: string(from), To: string(to)}
		r.m.d.Logger.Error("refused a task transition", "error", err)
		return false
	}
	rt.Status = to
	r.dirty[i] = true
	r.countLocked()
	r.emit(hearth.Event{Kind: hearth.EventRunTask, Task: rt.Name, Agent: r.pipe.Tasks[i].Agent, From: string(from), To: string(to),
		Message: fmt.Sprintf("%s: %s -> %s%s", rt.Name, from, to, prefixed(": ", msg)), Err: errIf(to == hearth.TaskFailed || to == hearth.TaskRetrying, rt.Error),
		Cost: cost})
	return true
}

// setRunLocked moves the run to status to, with reason.
func (r *runExec) setRunLocked(to hearth.RunStatus, reason string) error {
	from := r.head.Status
	if from == to {
		r.head.Reason = reason
		return nil
	}
	if !canRun(from, to) {
		return &hearth.TransitionError{Run: r.id, From: string(from), To: string(to)}
	}
	now := r.now()
	r.head.Status, r.head.Reason = to, reason
	r.head.Updated = now
	switch {
	case to == hearth.RunRunning:
		r.head.Finished = time.Time{}
		if r.head.Started.IsZero() {
			r.head.Started = now
		}
	case to.Finished():
		r.head.Finished = now
	}
	r.emit(hearth.Event{Kind: hearth.EventRunStatus, From: string(from), To: string(to), Message: fmt.Sprintf("run %s: %s -> %s%s", r.id, from, to, prefixed(": ", reason))})
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

// saveLocked queues the head, the changed tasks and anything else in w.
// Without a checkpoint in w, task records stay dirty: the next checkpoint
// carries every task changed since the last one.
//
// Nothing is shown or published as done before the write that makes it
// so: the events emitted since the last write (a task's task.succeeded
// and its transition, a gate's verdict, a stage entered, a checkpoint,
// the run's status) go in this write, one transaction with the records
// they report, and reach subscribers only once it is durable
// (Deps.Publish). A write that fails takes its events with it: the log
// never says a task succeeded that the run's record does not, and resume
// runs again only what is not recorded as done. A scheduler that
// replaces this one keeps that rule: events travel with the records.
func (r *runExec) saveLocked(w record.RunWrite) *store.Pending {
	evs := r.events
	r.events = nil
	var p *store.Pending
	if r.storeErr != nil {
		// What is in memory may be ahead of the disk by the failed
		// write: a later write would record tasks and checkpoints on top
		// of one that is missing.
		p = store.Refused(fmt.Errorf("run %s writes nothing more after a failed write: %w", r.id, r.storeErr))
	} else {
		r.head.Updated = r.now()
		w.Run = r.head
		for _, i := range slices.Sorted(maps.Keys(r.dirty)) {
			w.Tasks = append(w.Tasks, r.tasks[i])
		}
		w.Events = evs
		p = r.m.d.Store.SaveRun(r.id, w)
	}
	if len(evs) > 0 {
		r.m.d.Publish(evs, p)
	}
	return p
}

// checkpointLocked queues the head, the changed tasks and a checkpoint of
// them, with label, in one write.
func (r *runExec) checkpointLocked(label, task string, w record.RunWrite) (*store.Pending, uint64) {
	seq := r.head.Checkpoint + 1
	now := r.now()
	r.head.Checkpoint = seq
	r.head.Updated = now
	c := &record.Checkpoint{Seq: seq, Parent: seq - 1, Label: label, Task: task, Time: now, Run: r.head}
	for _, i := range slices.Sorted(maps.Keys(r.dirty)) {
		c.Tasks = append(c.Tasks, r.tasks[i])
	}
	w.Checkpoint = c
	r.emit(hearth.Event{Kind: hearth.EventRunCheckpoint, Task: task, Message: fmt.Sprintf("checkpoint %d: %s", seq, label)})
	p := r.saveLocked(w)
	clear(r.dirty)
	return p, seq
}

// touchLocked records activity, for retention.
func (r *runExec) touchLocked() { r.head.LastActivity = r.now() }

// stateJSONLocked re-encodes the state document into the head.
func (r *runExec) stateJSONLocked() error {
	b, err := json.Marshal(r.state)
	if err != nil {
		return err
	}
	r.head.State = b
	return nil
}

// Guard is the run as guards see it.
func (r *runExec) Guard() guard.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.guardRunLocked()
}

func (r *runExec) guardRunLocked() guard.Run {
	return guard.Run{ID: r.id, Pipeline: r.pipe.Name, Stage: r.head.Stage,
		Cost: r.head.Cost, Budget: r.head.Budget, State: r.stateMapLocked()}
}

// stateMapLocked decodes the state document for guards.
func (r *runExec) stateMapLocked() map[string]any {
	out := make(map[string]any, len(r.state))
	for k, v := range r.state {
		var x any
		if json.Unmarshal(v, &x) == nil {
			out[k] = x
		}
	}
	return out
}

// signal wakes the run's loop.
func (r *runExec) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// requestStop asks the run to stop: no task starts any more, and, when
// interrupt is set, the running attempts are cancelled (they go back to
// pending). The first request wins, except that a cancel overrides.
func (r *runExec) requestStop(kind stopKind, to hearth.RunStatus, reason string, interrupt bool) {
	r.mu.Lock()
	if r.stop == nil || (kind == stopCancel && r.stop.kind != stopCancel) {
		r.stop = &stopRequest{kind: kind, to: to, reason: reason}
	}
	r.mu.Unlock()
	if interrupt {
		r.cancel(errors.New(reason))
	}
	r.signal()
}

// escalateLocked stops the run because of a failure: it fails, or pauses
// for a person, by the failing task's on_failure. Running attempts may
// finish.
func (r *runExec) escalateLocked(i int, report string) {
	to := hearth.RunFailed
	if r.onFailure(i) == hearth.OnFailurePause {
		to = hearth.RunPaused
	}
	if r.stop == nil {
		r.stop = &stopRequest{kind: stopEscalate, to: to, reason: report}
	}
}

func (r *runExec) onFailure(i int) hearth.OnFailure {
	if i >= 0 {
		if f := r.pipe.Tasks[i].OnFailure; f != "" {
			return f
		}
	}
	return r.pipe.OnFailure
}

func (r *runExec) maxAttempts(i int) int {
	if n := r.pipe.Tasks[i].Attempts; n > 0 {
		return n
	}
	return max(r.pipe.Retry.Attempts, 1)
}

// loop runs the run until it stops, then records how it stopped.
func (r *runExec) loop() {
	defer r.m.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.stop != nil {
			if r.running == 0 {
				r.mu.Unlock()
				r.attempts.Wait()
				r.finish()
				return
			}
			r.mu.Unlock()
			<-r.wake
			continue
		}
		launch, wakeAt, pend := r.scheduleLocked()
		stopping := r.stop != nil
		r.mu.Unlock()
		if pend != nil {
			if err := pend.Wait(context.Background()); err != nil {
				// The run stops, and its context is cancelled: the
				// attempts recorded as running still launch, and come
				// back at once as interrupted, so that the loop sees
				// them end.
				r.storeFailed(err)
			}
		}
		for _, a := range launch {
			r.attempts.Add(1)
			go r.attempt(a)
		}
		if len(launch) > 0 || stopping {
			continue // more may be ready, or the run is done
		}
		if !wakeAt.IsZero() {
			timer.Reset(max(wakeAt.Sub(r.now()), time.Millisecond))
			select {
			case <-r.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		<-r.wake
	}
}

// storeFailed stops a run whose write failed: what is in memory is no
// longer what is on disk, so nothing more may be done on it.
func (r *runExec) storeFailed(err error) {
	// Nothing is wrong with the run's work: it pauses, with the reason,
	// and resumes from its last durable checkpoint once the store takes
	// writes again (a full disk freed, a directory writable again).
	r.mu.Lock()
	if r.storeErr != nil {
		r.mu.Unlock()
		return // the writes queued behind the first failure fail too
	}
	r.storeErr = err
	reason := r.storeReason()
	r.mu.Unlock()
	r.m.d.Logger.Error("run write failed; pausing the run", "run", r.id, "error", err)
	r.requestStop(stopEscalate, hearth.RunPaused, reason, true)
}

// storeReason is the reason the run pauses for after its failed write.
// r.mu must be held.
func (r *runExec) storeReason() string {
	if errors.Is(r.storeErr, hearth.ErrNoSpace) {
		// Its message says what to free and to resume.
		return r.storeErr.Error() + " (hearth runs resume " + r.id + ")"
	}
	return "the store refused a write: " + r.storeErr.Error() + "; resume the run once the cause is fixed (hearth runs resume " + r.id + ")"
}

// attemptSpec is one attempt of a task about to start.
type attemptSpec struct {
	i     int
	task  hearth.Task
	round int
}

// scheduleLocked starts what can start: tasks whose dependencies have
// succeeded, in graph order, up to the run's parallelism, entering their
// stage first when it changes. It returns the attempts to launch (already
// recorded as running, in the queued write it returns) and when a
// retrying task will be due.
func (r *runExec) scheduleLocked() (launch []attemptSpec, wakeAt time.Time, pend *store.Pending) {
	now := r.now()
	parallel := max(int(r.pipe.Parallel), 1)
	done := true
	var ready []int
	for i, rt := range r.tasks {
		switch rt.Status {
		case hearth.TaskSucceeded:
			continue
		case hearth.TaskFailed, hearth.TaskSkipped:
			// A task failed for good stops the run; one found here came
			// from records the resume did not reset.
			r.escalateLocked(i, fmt.Sprintf("task %s is %s; resume the run to try it again", rt.Name, rt.Status))
			return nil, time.Time{}, nil
		case hearth.TaskRunning:
			done = false
		case hearth.TaskRetrying:
			done = false
			if at := rt.RetryAt; at.After(now) {
				if wakeAt.IsZero() || at.Before(wakeAt) {
					wakeAt = at
				}
				continue
			}
			ready = append(ready, i)
		case hearth.TaskPending:
			done = false
			if r.depsDone(i) {
				ready = append(ready, i)
			}
		}
	}
	if done {
		r.completeLocked()
		return nil, time.Time{}, nil
	}
	stage := ""
	// An escalation or a blocked stage ends the pass, but the tasks it
	// already started are launched: they are recorded as running, and the
	// loop waits for them to end.
	for _, i := range ready {
		if r.running >= parallel { // startLocked counts each start
			break
		}
		ts := r.pipe.Tasks[i].Stage
		if ts != "" && ts != r.head.Stage {
			// Stages do not interleave: the run enters a new stage only
			// when nothing of the old one runs, one transition at a time.
			if r.running > 0 || len(launch) > 0 || (stage != "" && stage != ts) {
				continue
			}
			if !r.enterStageLocked(ts) {
				break
			}
		}
		stage = ts
		if !r.admitLocked(i) {
			break
		}
		launch = append(launch, r.startLocked(i, now))
	}
	if len(launch) > 0 {
		r.touchLocked()
		pend = r.saveLocked(record.RunWrite{})
		return launch, wakeAt, pend
	}
	if r.running == 0 && wakeAt.IsZero() && r.stop == nil {
		// Nothing runs, nothing is due: the remaining tasks wait on
		// dependencies that cannot succeed.
		r.escalateLocked(-1, "no task can start: the remaining tasks wait on dependencies that did not succeed")
	}
	return nil, wakeAt, nil
}

func (r *runExec) depsDone(i int) bool {
	for _, d := range r.deps[i] {
		if r.tasks[d].Status != hearth.TaskSucceeded {
			return false
		}
	}
	return true
}

// enterStageLocked moves the run into stage to, unless a transition
// guard blocks it; then the run pauses with the guard's message.
func (r *runExec) enterStageLocked(to string) bool {
	from := cmp.Or(r.head.Stage, string(hearth.RunCreated))
	if v := r.m.d.Transition(r.pipe.Name, r.id, from, to, r.stateMapLocked()); v != nil {
		r.stop = &stopRequest{kind: stopEscalate, to: hearth.RunPaused,
			reason: fmt.Sprintf("stage %s -> %s blocked by guard %s: %s; fix the run's state, then resume it", from, to, v.Guard, v.Message)}
		return false
	}
	r.head.Stage = to
	r.emit(hearth.Event{Kind: hearth.EventRunStage, From: from, To: to, Message: fmt.Sprintf("run %s: stage %s -> %s", r.id, from, to)})
	return true
}

// admitLocked checks the run's budget and the task_admission guards
// before task i starts. A refusal escalates with a report saying what
// to do.
func (r *runExec) admitLocked(i int) bool {
	name := r.tasks[i].Name
	if b := r.head.Budget; b > 0 && r.head.Cost >= b {
		r.escalateLocked(i, fmt.Sprintf("task %s was not started: the run has spent %.2f of its budget of %.2f; resume it with a larger budget (hearth runs resume %s --budget N) or cancel it",
			name, r.head.Cost, b, r.id))
		r.emit(hearth.Event{Kind: hearth.EventGuardFired, Hook: string(guard.TaskAdmission), Guard: "budget", Action: string(guard.Deny), Task: name,
			Message: fmt.Sprintf("budget: %.2f of %.2f spent", r.head.Cost, b)})
		return false
	}
	t := r.taskLocked(i)
	if err := r.m.d.Admit(t, r.guardRunLocked()); err != nil {
		r.escalateLocked(i, fmt.Sprintf("task %s was not started: %v", name, err))
		return false
	}
	return true
}

// taskLocked is task i as the host runs it, for its next attempt.
func (r *runExec) taskLocked(i int) hearth.Task {
	g := r.pipe.Tasks[i]
	rt := r.tasks[i]
	key := fmt.Sprintf("%s/%s/%d", r.id, g.Name, max(rt.Round, 1))
	attempt := int(rt.Attempts) + 1
	meta := maps.Clone(g.Metadata)
	if rt.Feedback != "" {
		if meta == nil {
			meta = make(map[string]string)
		}
		meta["feedback"] = rt.Feedback
	}
	return hearth.Task{
		Agent: g.Agent, ID: fmt.Sprintf("%s/%d", key, attempt), Name: g.Name, Prompt: g.Prompt,
		Hints:    g.Hints,
		Metadata: meta, Run: r.id, IdempotencyKey: key, Attempt: attempt,
		RequireChecks: r.pipe.RequireChecks,
	}
}

// startLocked records task i as running and prepares its attempt: beside
// its prompt, as written, go the ancestors' context and any feedback; a
// prompt that holds hearth.ContextPlaceholder gets the rendered block there
// instead.
func (r *runExec) startLocked(i int, now time.Time) attemptSpec {
	t := r.taskLocked(i)
	rt := r.tasks[i]
	t.Upstream, t.Context = r.contextLocked(i)
	if strings.Contains(t.Prompt, hearth.ContextPlaceholder) {
		t.Prompt = strings.ReplaceAll(t.Prompt, hearth.ContextPlaceholder, t.Context)
		t.Context = ""
	}
	t.Feedback = rt.Feedback
	rt.Attempts++
	rt.TaskID = t.ID
	rt.Started, rt.Finished, rt.RetryAt = now, time.Time{}, time.Time{}
	rt.Reason = ""
	// The attempt counted is the one against the retry limit: failures
	// use attempts up, interruptions (pause, kill, Ctrl-C) do not, and
	// a resume starts the count again. t.Attempt, which numbers every
	// delivery of the round, stays in the task ID.
	r.setTaskLocked(i, hearth.TaskRunning, fmt.Sprintf("attempt %d of %d", rt.Failures+1, r.maxAttempts(i)))
	r.running++
	return attemptSpec{i: i, task: t, round: rt.Round}
}

// contextLocked collects what the ancestors of task i learned: their
// current outputs' artifacts as contextchain selects them (nearest first,
// then newest), whole, and the block contextchain renders from them for
// agents that want text.
func (r *runExec) contextLocked(i int) ([]sdk.Upstream, string) {
	name := r.tasks[i].Name
	var arts []contextchain.Artifact
	byTask := make(map[string]*record.Output, len(r.current))
	for j, o := range r.current {
		if o == nil || j == i {
			continue
		}
		byTask[o.Task] = o
		arts = append(arts, contextchain.Artifact{
			Task: o.Task, SourceSession: o.Session, CreatedAt: o.Time,
			Version: o.Version, KeyDecisions: o.Artifact.KeyDecisions, ModifiedFiles: o.Artifact.ModifiedFiles,
			NewPatterns: o.Artifact.NewPatterns, PotentialGotchas: o.Artifact.PotentialGotchas,
		})
	}
	res, err := r.render.Build(name, r.depMap, arts)
	if err != nil {
		// The template was tried when the run was made; a failure now is
		// logged, and the task runs without the rendered block rather
		// than not at all.
		r.m.d.Logger.Warn("context template failed", "run", r.id, "task", name, "error", err)
	}
	var up []sdk.Upstream
	for _, st := range res.Steps {
		o := byTask[st.Task]
		if o == nil {
			continue
		}
		up = append(up, sdk.Upstream{Task: o.Task, Version: o.Version, Session: o.Session, CreatedAt: o.Time, Artifact: o.Artifact})
	}
	if res.Block != "" {
		r.emit(hearth.Event{Kind: hearth.EventRunContext, Task: name, Message: fmt.Sprintf("%s: %d bytes of context from %d earlier steps (%d steps, %d items left out)",
			name, len(res.Block), len(res.Steps)-res.OmittedSteps, res.OmittedSteps, res.OmittedItems)})
	}
	return up, res.Block
}

// attempt runs one attempt of a task and records its outcome.
func (r *runExec) attempt(a attemptSpec) {
	defer r.attempts.Done()
	var out *hearth.Outcome
	done, err := r.m.d.Enter()
	if err == nil {
		out, err = r.m.d.Execute(r.ctx, a.task, r)
		done()
	}
	pend := r.outcome(a, out, err)
	if pend != nil {
		if werr := pend.Wait(context.Background()); werr != nil {
			r.storeFailed(werr)
		}
	}
	r.signal()
}

// permanent reports whether retrying a failure cannot help: the agent
// said so, a guard refused, or the plugin cannot start as configured (its
// program is missing, does not match its pin, or speaks no hearth
// handshake, or cannot be confined as asked), which a retry only repeats.
func permanent(err error) bool {
	return errors.Is(err, sdk.ErrPermanent) || errors.Is(err, sdk.ErrNotOwner) ||
		errors.Is(err, hearth.ErrDenied) || errors.Is(err, hearth.ErrUnknownAgent) ||
		errors.Is(err, hearth.ErrProgramMissing) || errors.Is(err, hearth.ErrChecksumMismatch) || errors.Is(err, hearth.ErrConfinement) ||
		errors.Is(err, hearth.ErrHandshake) || errors.Is(err, hearth.ErrProtocolVersion)
}

// outcome records how an attempt ended and queues the write.
func (r *runExec) outcome(a attemptSpec, out *hearth.Outcome, err error) *store.Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	i := a.i
	rt := r.tasks[i]
	name := rt.Name
	now := r.now()
	r.touchLocked()
	spent := r.progressCost[a.task.ID]
	delete(r.progressCost, a.task.ID)
	succeeded, agentSucceeded := r.succeeded[a.task.ID]
	delete(r.succeeded, a.task.ID)
	if rt.Round != a.round || rt.TaskID != a.task.ID {
		// A quality gate sent the work back past this task while the
		// attempt ran: the round it belongs to is over. Its cost was
		// spent all the same; its result is not used.
		if out != nil {
			spent = out.Result.Cost
		}
		r.addCostLocked(i, spent)
		r.emit(hearth.Event{Kind: hearth.EventRunTask, Task: name, Agent: r.pipe.Tasks[i].Agent, Cost: spent,
			Message: fmt.Sprintf("%s: attempt %d of round %d ended after its round was reset; its result is discarded", name, a.task.Attempt, a.round)})
		return r.saveLocked(record.RunWrite{})
	}
	rt.Finished = now
	if err == nil && out != nil && len(out.Result.Output) > hearth.MaxOutput {
		// Stored, it would be one value bigger than a store write may be,
		// and unreadable through the daemon: the task fails, saying so,
		// and nothing of the output is written.
		err = sdk.Permanent(fmt.Errorf("task %s returned an output of %d bytes (%.1f MiB), more than the %d MiB a task's output may be; write large results to a file and return its path", name, len(out.Result.Output), float64(len(out.Result.Output))/(1<<20), hearth.MaxOutput>>20))
		out = nil
	}
	if err != nil {
		if cause := context.Cause(r.ctx); cause != nil || errors.Is(err, hearth.ErrClosed) {
			// Interrupted, not failed: it runs again on resume, with the
			// next attempt number.
			why := "the host shut down"
			if cause != nil {
				why = cause.Error()
			}
			rt.Reason = "interrupted: " + why
			r.addCostLocked(i, spent) // reported before the interruption: spent
			r.setTaskLocked(i, hearth.TaskPending, rt.Reason)
			return r.saveLocked(record.RunWrite{})
		}
		r.addCostLocked(i, spent)
		rt.Failures++
		rt.Error = err.Error()
		rt.Errors = append(rt.Errors, rt.Error)
		if len(rt.Errors) > maxErrors {
			rt.Errors = rt.Errors[len(rt.Errors)-maxErrors:]
		}
		if !permanent(err) && int(rt.Failures) < r.maxAttempts(i) {
			delay := r.pipe.Retry.Delay(int(rt.Failures))
			rt.RetryAt = now.Add(delay)
			r.setTaskLocked(i, hearth.TaskRetrying, fmt.Sprintf("attempt %d of %d failed; next in %s", rt.Failures, r.maxAttempts(i), delay))
			return r.saveLocked(record.RunWrite{})
		}
		why := fmt.Sprintf("failed after %d attempts", rt.Failures)
		if permanent(err) {
			why = "failed and will not be retried (the failure is permanent)"
		}
		r.setTaskLocked(i, hearth.TaskFailed, why)
		r.escalateLocked(i, fmt.Sprintf("task %s %s; last error: %s", name, why, err))
		p, _ := r.checkpointLocked("task "+name+" failed", name, record.RunWrite{})
		return p
	}

	res := out.Result
	if agentSucceeded {
		// Written with the output and the task's record, below.
		r.emit(succeeded)
	}
	r.addCostLocked(i, res.Cost)
	rt.Session = out.Session
	rt.Version = r.lastVersion(i) + 1
	o := &record.Output{
		Task: name, Version: rt.Version, Output: res.Output, Metrics: res.Metrics, Cost: res.Cost,
		Session: out.Session, Attempt: a.task.Attempt, Round: a.round, Time: now,
		Duration: out.Duration, Artifact: out.Artifact,
		Action: string(out.Decision.Action), Score: out.Decision.Score,
	}
	r.current[i] = o
	w := record.RunWrite{Outputs: []*record.Output{o}}
	if g := out.Gate; g != nil {
		return r.gateLocked(i, g, o, w)
	}
	rt.NeedsReview, rt.Feedback, rt.Error = false, "", ""
	r.setTaskCostLocked(i, hearth.TaskSucceeded, fmt.Sprintf("v%d in %s on %s (%s)", rt.Version, out.Duration.Round(time.Millisecond), out.Session, out.Decision.Action), res.Cost)
	p, _ := r.checkpointLocked("task "+name+" succeeded", name, w)
	return p
}

// lastVersion is the highest output version task i has had: versions
// keep counting up after an output is archived.
func (r *runExec) lastVersion(i int) int {
	v := r.tasks[i].Version
	if o := r.current[i]; o != nil {
		v = max(v, o.Version)
	}
	if n, ok := r.versions[r.tasks[i].Name]; ok {
		v = max(v, n)
	}
	return v
}

func (r *runExec) addCostLocked(i int, c float64) {
	if c <= 0 {
		return
	}
	r.tasks[i].Cost += c
	r.head.Cost += c
	r.dirty[i] = true
}

// gateLocked acts on a quality gate that fired on task i's result: the
// task runs again with the gate's feedback (retry), or the work goes back
// to an earlier task, and everything after it is done again (send_back).
// A gate that acted max_loops times in the run escalates instead.
func (r *runExec) gateLocked(i int, g *hearth.Gate, o *record.Output, w record.RunWrite) *store.Pending {
	rt := r.tasks[i]
	name := rt.Name
	if r.head.GateLoops == nil {
		r.head.GateLoops = make(map[string]int)
	}
	loops := r.head.GateLoops[g.Guard] + 1
	limit := max(g.MaxLoops, 1)
	// Past its limit the gate does not loop again: the message says so,
	// never "loop 3 of 2".
	loop := fmt.Sprintf("loop %d of %d", loops, limit)
	if loops > limit {
		loop = fmt.Sprintf("still failing at its limit of %d loops; kept for review", limit)
	}
	r.emit(hearth.Event{Kind: hearth.EventRunGate, Task: name, Guard: g.Guard, Action: string(g.Action),
		Message: fmt.Sprintf("%s v%d: gate %s (%s, %s): %s", name, o.Version, g.Guard, g.Action, loop, g.Feedback)})
	if loops > limit {
		rt.Error = fmt.Sprintf("quality gate %s still fails after %d loops: %s", g.Guard, limit, g.Feedback)
		r.setTaskLocked(i, hearth.TaskSucceeded, "kept for review: "+rt.Error)
		r.escalateLocked(i, fmt.Sprintf("task %s: %s; its output is kept for review: resume the run to accept it as it is, or revisit the task to do it again (hearth runs revisit %s %s --impact major), after raising the guard's max_loops if need be",
			name, rt.Error, r.id, cmp.Or(g.To, name)))
		p, _ := r.checkpointLocked("gate "+g.Guard+" gave up on "+name, name, w)
		return p
	}
	r.head.GateLoops[g.Guard] = loops
	feedback := fmt.Sprintf("The %s step's quality gate %q sent this work back (loop %d of %d): %s", name, g.Guard, loops, limit, g.Feedback)
	if out := strings.TrimSpace(o.Output); out != "" {
		if len(out) > feedbackOutputMax {
			out = out[:feedbackOutputMax] + "\n[...]"
		}
		feedback += "\n\nIts report:\n" + out
	}
	target := i
	if g.Action == hearth.GateSendBack {
		j, ok := r.index[g.To]
		if !ok || !r.ancestor(j, i) {
			rt.Error = fmt.Sprintf("quality gate %s sends work back to %q, which task %s does not depend on", g.Guard, g.To, name)
			r.setTaskLocked(i, hearth.TaskSucceeded, "kept for review: "+rt.Error)
			r.escalateLocked(i, fmt.Sprintf("task %s: %s; fix the guard's back_to", name, rt.Error))
			p, _ := r.checkpointLocked("gate "+g.Guard+" misconfigured", name, w)
			return p
		}
		target = j
	}
	// The gated task's output is kept as a version, then archived with
	// everything downstream of the target.
	r.setTaskCostLocked(i, hearth.TaskSucceeded, fmt.Sprintf("v%d, gated by %s", o.Version, g.Guard), o.Cost)
	reset := append([]int{target}, r.descendants(target)...)
	for _, j := range reset {
		r.resetLocked(j, fmt.Sprintf("sent back by quality gate %s", g.Guard))
	}
	r.tasks[target].Feedback = feedback
	p, _ := r.checkpointLocked(fmt.Sprintf("gate %s sent %s back to %s", g.Guard, name, r.tasks[target].Name), name, w)
	return p
}

// resetLocked sets task i back to pending for a new round of work; its
// current output is archived.
func (r *runExec) resetLocked(i int, reason string) {
	rt := r.tasks[i]
	if v := rt.Version; v > 0 {
		r.noteVersion(i, v)
	}
	rt.Version, rt.Round, rt.Attempts, rt.Failures = 0, rt.Round+1, 0, 0
	rt.Error, rt.Errors, rt.NeedsReview, rt.Reason, rt.RetryAt = "", nil, false, reason, time.Time{}
	r.current[i] = nil
	r.dirty[i] = true
	r.setTaskLocked(i, hearth.TaskPending, reason)
}

// noteVersion remembers that task i had output version v, so that the
// next version is v+1 even after the output was archived.
func (r *runExec) noteVersion(i int, v int) {
	if r.versions == nil {
		r.versions = make(map[string]int)
	}
	name := r.tasks[i].Name
	r.versions[name] = max(r.versions[name], v)
}

// ancestor reports whether task a is task b or one of its ancestors.
func (r *runExec) ancestor(a, b int) bool {
	if a == b {
		return true
	}
	for _, d := range r.deps[b] {
		if r.ancestor(a, d) {
			return true
		}
	}
	return false
}

// descendants lists the tasks downstream of i, in graph order.
func (r *runExec) descendants(i int) []int {
	seen := make(map[int]bool)
	var walk func(int)
	walk = func(j int) {
		for _, k := range r.kids[j] {
			if !seen[k] {
				seen[k] = true
				walk(k)
			}
		}
	}
	walk(i)
	out := slices.Collect(maps.Keys(seen))
	sort.Ints(out)
	return out
}

// completeLocked ends a run whose tasks have all succeeded. A run that
// uses stages enters stage "completed" first, which transition guards
// may block: then it pauses instead.
func (r *runExec) completeLocked() {
	if r.stages && r.head.Stage != stageCompleted {
		if !r.enterStageLocked(stageCompleted) {
			return
		}
	}
	r.stop = &stopRequest{kind: stopEscalate, to: hearth.RunCompleted}
}

// finish records how the run stopped and releases its handle.
func (r *runExec) finish() {
	r.mu.Lock()
	if r.storeErr != nil {
		r.finishAfterStoreFailure()
		return
	}
	st := r.stop
	to, reason := st.to, st.reason
	switch st.kind {
	case stopPause, stopShutdown:
		to = hearth.RunPaused
	case stopCancel:
		to = hearth.RunCancelled
		for i, rt := range r.tasks {
			if s := rt.Status; s == hearth.TaskPending || s == hearth.TaskRetrying {
				rt.Reason = "the run was cancelled"
				r.setTaskLocked(i, hearth.TaskSkipped, rt.Reason)
			}
		}
	}
	var pend *store.Pending
	if err := r.setRunLocked(to, reason); err != nil {
		r.m.d.Logger.Error("cannot record how a run stopped", "run", r.id, "error", err)
	} else {
		pend, _ = r.checkpointLocked(fmt.Sprintf("run %s%s", to, prefixed(": ", text.FirstLine(reason))), "", record.RunWrite{})
	}
	info := r.infoLocked()
	r.mu.Unlock()
	if pend != nil {
		if err := pend.Wait(context.Background()); err != nil {
			// Its end is not on disk: the run pauses instead, recorded
			// from the reserve like after any failed write. (Its work
			// is on disk; resuming finds nothing left to run, and
			// completes, or is cancelled again.)
			r.m.d.Logger.Error("cannot record how a run stopped; pausing it", "run", r.id, "status", to, "error", err)
			r.mu.Lock()
			r.storeErr = err
			r.finishAfterStoreFailure()
			return
		}
	}
	r.release(info, nil)
}

// release ends the run's execution here and reports how it ended to its
// handle: err when its end could not be recorded, else a *hearth.RunError
// for a run that did not complete.
func (r *runExec) release(info hearth.RunInfo, err error) {
	r.cancel(nil)
	r.m.forget(r)
	r.handle.info = info
	switch {
	case err != nil:
		r.handle.err = err
	case info.Status != hearth.RunCompleted:
		r.handle.err = &hearth.RunError{Run: r.id, Status: info.Status, Reason: info.Reason}
	}
	// Done after the run's last events reach its subscribers: a watcher
	// that stops at Done has seen them all.
	r.m.d.AfterPublished(func() { close(r.handle.done) })
}

// finishAfterStoreFailure ends a run one of whose writes failed, with r.mu
// held (it unlocks it). The run pauses, whatever else had stopped it: its
// records on disk stop where the failed write left them, and what is in
// memory (tasks done since, the checkpoint counter) is not on disk and is
// dropped. Only the run's head is written, as a status record the store
// accepts from its free-space reserve (store.SaveRunStatus): the head as
// it is on disk, its counters recounted from the task records on disk and
// its checkpoint the newest on disk, paused with the failure as reason.
// It never carries a task record or a checkpoint, so the disk stays a
// state the run resumes from; and the user reads why the run stopped from
// the run's record, not only from the command that ran it.
//
// When that write fails too (the disk is below the reserve, or the store
// takes no writes at all), the record keeps saying running: a read of the
// directory reports the run interrupted, and the next host to open it
// pauses it (Recover).
func (r *runExec) finishAfterStoreFailure() {
	reason := r.storeReason()
	// What was emitted since the failed write reports work that is not on
	// disk: it is dropped with that work.
	r.events = nil
	if r.head.Status == hearth.RunRunning {
		_ = r.setRunLocked(hearth.RunPaused, reason) // legal: running -> paused
	}
	paused := r.events
	r.events = nil
	info := r.infoLocked()
	info.Status, info.Reason = hearth.RunPaused, reason
	r.mu.Unlock()
	head, err := r.recordPause(reason)
	if head != nil {
		// What the disk holds, not what was done in memory since. (A
		// store that cannot even be read leaves the memory's account,
		// the only one there is.)
		info = head.Info(false)
	}
	if err == nil && info.Status == hearth.RunPaused {
		// The pause is on disk: now it may be said.
		for _, e := range paused {
			r.m.d.Emit(e)
		}
	}
	switch {
	case err != nil:
		r.m.d.Logger.Error("cannot record a run's pause; its record says running until a host opens the data directory again", "run", r.id, "error", err)
		err = fmt.Errorf("run %s paused (%s), but the pause could not be recorded: %w; its record reads running, interrupted, until a command that writes opens the data directory (hearth runs resume %s)", r.id, text.FirstLine(reason), err, r.id)
	case info.Status != hearth.RunPaused:
		// The disk had it stopped already, and keeps it so: what was
		// asked of it (a cancel) did not happen, and this is why.
		err = fmt.Errorf("run %s: %s; its record still says %s", r.id, text.FirstLine(reason), info.Status)
	}
	r.release(info, err)
}

// recordPause writes the run's durable head back as paused with reason,
// as a status record. It returns that head (nil when it cannot be read),
// and the error of writing it.
func (r *runExec) recordPause(reason string) (*record.Run, error) {
	st := r.m.d.Store
	head, err := st.RunRecord(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's record: %w", err)
	}
	if head.Status != hearth.RunPaused && !canRun(head.Status, hearth.RunPaused) {
		// The disk has it stopped already (a failed run whose cancel
		// could not be recorded): that stays its state.
		return head, nil
	}
	recs, err := st.RunTasks(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's tasks: %w", err)
	}
	seq, err := st.NewestCheckpoint(r.id)
	if err != nil {
		return nil, fmt.Errorf("read the run's checkpoints: %w", err)
	}
	// The head on disk is from the last write that landed; one that
	// failed before it may have held the checkpoint it counts.
	head.Checkpoint = min(head.Checkpoint, seq)
	countTasks(head, len(r.pipe.Tasks), func(i int) hearth.TaskStatus {
		if rec := recs[r.pipe.Tasks[i].Name]; rec != nil {
			return rec.Status
		}
		return hearth.TaskPending // not on disk yet
	})
	head.Status, head.Reason, head.Updated = hearth.RunPaused, reason, r.now()
	return head, st.SaveRunStatus(r.id, head).Wait(context.Background())
}

// infoLocked describes the run.
func (r *runExec) infoLocked() hearth.RunInfo {
	return r.head.Info(false)
}
