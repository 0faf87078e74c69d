package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/contextchain"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
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
	to     RunStatus
	reason string
}

// runExec executes one run in this host: it decides which tasks start,
// runs their attempts, and writes every change to the store. Everything
// under mu is the run's truth in memory; each change is queued to the
// store while mu is held, so that the store sees changes in the order
// they were made (the committer keeps queue order), and waited for
// outside it.
type runExec struct {
	h      *Host
	id     string
	graph  *storepb.RunGraph
	pipe   *config.Pipeline
	index  map[string]int
	deps   [][]int
	kids   [][]int
	depMap contextchain.DepMap
	render *contextchain.Renderer
	stages bool
	handle *RunHandle

	mu      sync.Mutex
	head    *storepb.Run
	tasks   []*storepb.RunTask
	current []*storepb.TaskOutput
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
	versions map[string]int32
}

// newRunExec builds the executor of a run from its records.
func (h *Host) newRunExec(head *storepb.Run, g *storepb.RunGraph, recs map[string]*storepb.RunTask, outs []*storepb.TaskOutput) (*runExec, error) {
	pipe := pipelineOfGraph(g)
	render, err := pipe.Context.Renderer()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", head.GetId(), err)
	}
	r := &runExec{
		h: h, id: head.GetId(), graph: g, pipe: pipe, render: render,
		index: make(map[string]int, len(g.GetTasks())), depMap: make(contextchain.DepMap, len(g.GetTasks())),
		head: head, dirty: make(map[int]bool), wake: make(chan struct{}, 1),
		progressCost: make(map[string]float64),
		handle:       &RunHandle{ID: head.GetId(), done: make(chan struct{})},
	}
	for i, t := range g.GetTasks() {
		r.index[t.GetName()] = i
		r.depMap[t.GetName()] = t.GetDependsOn()
		if t.GetStage() != "" {
			r.stages = true
		}
	}
	r.deps = make([][]int, len(g.GetTasks()))
	r.kids = make([][]int, len(g.GetTasks()))
	for i, t := range g.GetTasks() {
		for _, d := range t.GetDependsOn() {
			j := r.index[d]
			r.deps[i] = append(r.deps[i], j)
			r.kids[j] = append(r.kids[j], i)
		}
	}
	r.tasks = make([]*storepb.RunTask, len(g.GetTasks()))
	for i, t := range g.GetTasks() {
		rec := recs[t.GetName()]
		if rec == nil {
			rec = &storepb.RunTask{Name: t.GetName(), Status: storepb.TaskStatus_TASK_PENDING, Round: 1}
			r.dirty[i] = true
		}
		r.tasks[i] = rec
	}
	r.current = make([]*storepb.TaskOutput, len(r.tasks))
	for _, o := range outs {
		i, ok := r.index[o.GetTask()]
		if !ok {
			continue
		}
		r.noteVersion(i, o.GetVersion())
		if o.GetVersion() == r.tasks[i].GetVersion() {
			r.current[i] = o
		}
	}
	r.state = make(map[string]json.RawMessage)
	if b := head.GetStateJson(); len(b) > 0 {
		if err := json.Unmarshal(b, &r.state); err != nil {
			return nil, fmt.Errorf("run %s: state document: %w", r.id, err)
		}
	}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	r.countLocked()
	return r, nil
}

// pipelineOfGraph is a run's graph as a pipeline: its owners, retry,
// context and retention settings, for the code that reads them there.
func pipelineOfGraph(g *storepb.RunGraph) *config.Pipeline {
	p := &config.Pipeline{
		Name: g.GetPipeline(), Description: g.GetDescription(), Parallel: int(g.GetParallel()),
		OnFailure: config.OnFailure(g.GetOnFailure()),
		Retry: config.Retry{Attempts: int(g.GetRetryAttempts()), Backoff: time.Duration(g.GetRetryBackoffNanos()),
			MaxBackoff: time.Duration(g.GetRetryMaxBackoffNanos())},
		Context: config.Context{Budget: int(g.GetContextBudget()), Template: g.GetContextTemplate()},
		Retention: config.Retention{PauseAfter: time.Duration(g.GetPauseAfterNanos()),
			AbandonAfter: time.Duration(g.GetAbandonAfterNanos()), DeleteAfter: time.Duration(g.GetDeleteAfterNanos())},
	}
	for _, o := range g.GetOwners() {
		own := &config.Owner{Agent: o.GetAgent(), Writes: o.GetWrites()}
		if !o.GetReadsAll() {
			own.Reads = append([]string{}, o.GetReads()...)
		}
		p.State.Owners = append(p.State.Owners, own)
	}
	for _, t := range g.GetTasks() {
		p.Tasks = append(p.Tasks, &config.PipelineTask{
			Name: t.GetName(), Agent: t.GetAgent(), Prompt: t.GetPrompt(), DependsOn: t.GetDependsOn(),
			Hints: config.Hints{Files: t.GetFiles(), Directories: t.GetDirs(), Technologies: t.GetTechs()},
			Stage: t.GetStage(), Metadata: t.GetMetadata(), Attempts: int(t.GetAttempts()), OnFailure: config.OnFailure(t.GetOnFailure()),
		})
	}
	return p
}

// graphOfPipeline records a pipeline as a run's graph.
// absPath is path made absolute, so that a run's recorded config file is
// found from any directory; path itself when that fails.
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func graphOfPipeline(p *config.Pipeline, configPath string) *storepb.RunGraph {
	g := &storepb.RunGraph{
		Pipeline: p.Name, Description: p.Description, Parallel: int32(p.Parallel),
		RetryAttempts: int32(p.Retry.Attempts), RetryBackoffNanos: int64(p.Retry.Backoff), RetryMaxBackoffNanos: int64(p.Retry.MaxBackoff),
		OnFailure: string(p.OnFailure), ContextBudget: int32(p.Context.Budget), ContextTemplate: p.Context.Template,
		PauseAfterNanos: int64(p.Retention.PauseAfter), AbandonAfterNanos: int64(p.Retention.AbandonAfter),
		DeleteAfterNanos: int64(p.Retention.DeleteAfter), Config: absPath(configPath),
	}
	for _, o := range p.State.Owners {
		g.Owners = append(g.Owners, &storepb.Owner{Agent: o.Agent, ReadsAll: o.Reads == nil, Reads: o.Reads, Writes: o.Writes})
	}
	for _, t := range p.Tasks {
		g.Tasks = append(g.Tasks, &storepb.GraphTask{
			Name: t.Name, Agent: t.Agent, Prompt: t.Prompt, DependsOn: t.DependsOn,
			Files: t.Hints.Files, Dirs: t.Hints.Directories, Techs: t.Hints.Technologies,
			Stage: t.Stage, Metadata: t.Metadata, Attempts: int32(t.Attempts), OnFailure: string(t.OnFailure),
		})
	}
	return g
}

// countLocked recounts the head's task counters.
func (r *runExec) countLocked() {
	var ok, failed, skipped int32
	for _, t := range r.tasks {
		switch t.GetStatus() {
		case storepb.TaskStatus_TASK_SUCCEEDED:
			ok++
		case storepb.TaskStatus_TASK_FAILED:
			failed++
		case storepb.TaskStatus_TASK_SKIPPED:
			skipped++
		}
	}
	r.head.TasksTotal, r.head.TasksSucceeded, r.head.TasksFailed, r.head.TasksSkipped = int32(len(r.tasks)), ok, failed, skipped
}

func (r *runExec) now() time.Time { return r.h.now() }

func (r *runExec) emit(e Event) {
	e.Run = r.id
	r.h.emit(e)
}

// setTaskLocked moves task i to status to and records the change as an
// event. An illegal transition is a bug in the executor: it is refused
// and logged.
func (r *runExec) setTaskLocked(i int, to TaskStatus, msg string) bool {
	return r.setTaskCostLocked(i, to, msg, 0)
}

// setTaskCostLocked is setTaskLocked for an attempt that cost cost.
func (r *runExec) setTaskCostLocked(i int, to TaskStatus, msg string, cost float64) bool {
	rt := r.tasks[i]
	from := taskStatusOf(rt.GetStatus())
	if from == to {
		return true
	}
	if !canTask(from, to) {
		err := &TransitionError{Run: r.id, Task: rt.GetName(), From: string(from), To: string(to)}
		r.h.logger.Error("refused a task transition", "error", err)
		return false
	}
	rt.Status = taskStatusRecord(to)
	r.dirty[i] = true
	r.countLocked()
	r.emit(Event{Kind: EventRunTask, Task: rt.GetName(), Agent: r.graph.GetTasks()[i].GetAgent(), From: string(from), To: string(to),
		Message: fmt.Sprintf("%s: %s -> %s%s", rt.GetName(), from, to, prefixed(": ", msg)), Err: errIf(to == TaskFailed || to == TaskRetrying, rt.GetError()),
		Cost: cost})
	return true
}

// setRunLocked moves the run to status to, with reason.
func (r *runExec) setRunLocked(to RunStatus, reason string) error {
	from := runStatusOf(r.head.GetStatus())
	if from == to {
		r.head.Reason = reason
		return nil
	}
	if !canRun(from, to) {
		return &TransitionError{Run: r.id, From: string(from), To: string(to)}
	}
	now := r.now()
	r.head.Status, r.head.Reason = runStatusRecord(to), reason
	r.head.UpdatedUnixNano = now.UnixNano()
	switch {
	case to == RunRunning:
		r.head.FinishedUnixNano = 0
		if r.head.GetStartedUnixNano() == 0 {
			r.head.StartedUnixNano = now.UnixNano()
		}
	case to.Finished():
		r.head.FinishedUnixNano = now.UnixNano()
	}
	r.emit(Event{Kind: EventRunStatus, From: string(from), To: string(to), Message: fmt.Sprintf("run %s: %s -> %s%s", r.id, from, to, prefixed(": ", reason))})
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
func (r *runExec) saveLocked(w store.RunWrite) *store.Pending {
	r.head.UpdatedUnixNano = r.now().UnixNano()
	w.Run = r.head
	for _, i := range slices.Sorted(maps.Keys(r.dirty)) {
		w.Tasks = append(w.Tasks, r.tasks[i])
	}
	return r.h.store.SaveRun(r.id, w)
}

// checkpointLocked queues the head, the changed tasks and a checkpoint of
// them, with label, in one write.
func (r *runExec) checkpointLocked(label, task string, w store.RunWrite) (*store.Pending, uint64) {
	seq := r.head.GetCheckpoint() + 1
	now := r.now()
	r.head.Checkpoint = seq
	r.head.UpdatedUnixNano = now.UnixNano()
	c := &storepb.Checkpoint{Seq: seq, Parent: seq - 1, Label: label, Task: task, UnixNano: now.UnixNano(), Run: r.head}
	for _, i := range slices.Sorted(maps.Keys(r.dirty)) {
		c.Tasks = append(c.Tasks, r.tasks[i])
	}
	w.Checkpoint = c
	p := r.saveLocked(w)
	clear(r.dirty)
	r.emit(Event{Kind: EventRunCheckpoint, Task: task, Message: fmt.Sprintf("checkpoint %d: %s", seq, label)})
	return p, seq
}

// touchLocked records activity, for retention.
func (r *runExec) touchLocked() { r.head.LastActivityUnixNano = r.now().UnixNano() }

// stateJSONLocked re-encodes the state document into the head.
func (r *runExec) stateJSONLocked() error {
	b, err := json.Marshal(r.state)
	if err != nil {
		return err
	}
	r.head.StateJson = b
	return nil
}

// guardRun is the run as guards see it.
func (r *runExec) guardRun() guard.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.guardRunLocked()
}

func (r *runExec) guardRunLocked() guard.Run {
	return guard.Run{ID: r.id, Pipeline: r.graph.GetPipeline(), Stage: r.head.GetStage(),
		Cost: r.head.GetCost(), Budget: r.head.GetBudget(), State: r.stateMapLocked()}
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
func (r *runExec) requestStop(kind stopKind, to RunStatus, reason string, interrupt bool) {
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
	to := RunFailed
	if r.onFailure(i) == config.OnFailurePause {
		to = RunPaused
	}
	if r.stop == nil {
		r.stop = &stopRequest{kind: stopEscalate, to: to, reason: report}
	}
}

func (r *runExec) onFailure(i int) config.OnFailure {
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
	defer r.h.runsWG.Done()
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
	r.h.logger.Error("run write failed; stopping the run", "run", r.id, "error", err)
	r.requestStop(stopEscalate, RunFailed, "the store refused a write: "+err.Error(), true)
}

// attemptSpec is one attempt of a task about to start.
type attemptSpec struct {
	i     int
	task  Task
	round int32
}

// scheduleLocked starts what can start: tasks whose dependencies have
// succeeded, in graph order, up to the run's parallelism, entering their
// stage first when it changes. It returns the attempts to launch (already
// recorded as running, in the queued write it returns) and when a
// retrying task will be due.
func (r *runExec) scheduleLocked() (launch []attemptSpec, wakeAt time.Time, pend *store.Pending) {
	now := r.now()
	parallel := max(int(r.graph.GetParallel()), 1)
	done := true
	var ready []int
	for i, rt := range r.tasks {
		switch taskStatusOf(rt.GetStatus()) {
		case TaskSucceeded:
			continue
		case TaskFailed, TaskSkipped:
			// A task failed for good stops the run; one found here came
			// from records the resume did not reset.
			r.escalateLocked(i, fmt.Sprintf("task %s is %s; resume the run to try it again", rt.GetName(), taskStatusOf(rt.GetStatus())))
			return nil, time.Time{}, nil
		case TaskRunning:
			done = false
		case TaskRetrying:
			done = false
			if at := time.Unix(0, rt.GetRetryAtUnixNano()); at.After(now) {
				if wakeAt.IsZero() || at.Before(wakeAt) {
					wakeAt = at
				}
				continue
			}
			ready = append(ready, i)
		case TaskPending:
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
		ts := r.graph.GetTasks()[i].GetStage()
		if ts != "" && ts != r.head.GetStage() {
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
		pend = r.saveLocked(store.RunWrite{})
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
		if r.tasks[d].GetStatus() != storepb.TaskStatus_TASK_SUCCEEDED {
			return false
		}
	}
	return true
}

// enterStageLocked moves the run into stage to, unless a transition
// guard blocks it; then the run pauses with the guard's message.
func (r *runExec) enterStageLocked(to string) bool {
	from := cmpOr(r.head.GetStage(), string(RunCreated))
	if v := r.h.CheckTransition(r.graph.GetPipeline(), r.id, from, to, r.stateMapLocked()); v != nil {
		r.stop = &stopRequest{kind: stopEscalate, to: RunPaused,
			reason: fmt.Sprintf("stage %s -> %s blocked by guard %s: %s; fix the run's state, then resume it", from, to, v.Guard, v.Message)}
		return false
	}
	r.head.Stage = to
	r.emit(Event{Kind: EventRunStage, From: from, To: to, Message: fmt.Sprintf("run %s: stage %s -> %s", r.id, from, to)})
	return true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// admitLocked checks the run's budget and the task_admission guards
// before task i starts. A refusal escalates with a report saying what
// to do.
func (r *runExec) admitLocked(i int) bool {
	name := r.tasks[i].GetName()
	if b := r.head.GetBudget(); b > 0 && r.head.GetCost() >= b {
		r.escalateLocked(i, fmt.Sprintf("task %s was not started: the run has spent %.2f of its budget of %.2f; resume it with a larger budget (hearth runs resume %s --budget N) or cancel it",
			name, r.head.GetCost(), b, r.id))
		r.emit(Event{Kind: EventGuardFired, Hook: string(guard.TaskAdmission), Guard: "budget", Action: string(guard.Deny), Task: name,
			Message: fmt.Sprintf("budget: %.2f of %.2f spent", r.head.GetCost(), b)})
		return false
	}
	t := r.taskLocked(i)
	if err := r.h.admit(t, r.guardRunLocked()); err != nil {
		r.escalateLocked(i, fmt.Sprintf("task %s was not started: %v", name, err))
		return false
	}
	return true
}

// taskLocked is task i as the host runs it, for its next attempt.
func (r *runExec) taskLocked(i int) Task {
	g := r.graph.GetTasks()[i]
	rt := r.tasks[i]
	key := fmt.Sprintf("%s/%s/%d", r.id, g.GetName(), max(rt.GetRound(), 1))
	attempt := int(rt.GetAttempts()) + 1
	meta := maps.Clone(g.GetMetadata())
	if rt.GetFeedback() != "" {
		if meta == nil {
			meta = make(map[string]string)
		}
		meta["feedback"] = rt.GetFeedback()
	}
	return Task{
		Agent: g.GetAgent(), ID: fmt.Sprintf("%s/%d", key, attempt), Name: g.GetName(), Prompt: g.GetPrompt(),
		Hints:    sdk.Hints{Files: g.GetFiles(), Directories: g.GetDirs(), Technologies: g.GetTechs()},
		Metadata: meta, Run: r.id, IdempotencyKey: key, Attempt: attempt,
	}
}

// startLocked records task i as running and prepares its attempt: beside
// its prompt, as written, go the ancestors' context and any feedback.
func (r *runExec) startLocked(i int, now time.Time) attemptSpec {
	t := r.taskLocked(i)
	rt := r.tasks[i]
	t.Upstream, t.Context = r.contextLocked(i)
	t.Feedback = rt.GetFeedback()
	rt.Attempts++
	rt.TaskId = t.ID
	rt.StartedUnixNano, rt.FinishedUnixNano, rt.RetryAtUnixNano = now.UnixNano(), 0, 0
	rt.Reason = ""
	// The attempt counted is the one against the retry limit: failures
	// use attempts up, interruptions (pause, kill, Ctrl-C) do not, and
	// a resume starts the count again. t.Attempt, which numbers every
	// delivery of the round, stays in the task ID.
	r.setTaskLocked(i, TaskRunning, fmt.Sprintf("attempt %d of %d", rt.GetFailures()+1, r.maxAttempts(i)))
	r.running++
	return attemptSpec{i: i, task: t, round: rt.GetRound()}
}

// contextLocked collects what the ancestors of task i learned: their
// current outputs' artifacts as contextchain selects them (nearest first,
// then newest), whole, and the block contextchain renders from them for
// agents that want text.
func (r *runExec) contextLocked(i int) ([]sdk.Upstream, string) {
	name := r.tasks[i].GetName()
	var arts []contextchain.Artifact
	byTask := make(map[string]*storepb.TaskOutput, len(r.current))
	for j, o := range r.current {
		if o == nil || j == i {
			continue
		}
		byTask[o.GetTask()] = o
		arts = append(arts, contextchain.Artifact{
			Task: o.GetTask(), SourceSession: o.GetSourceSession(), CreatedAt: time.Unix(0, o.GetArtifactUnixNano()),
			Version: int(o.GetVersion()), KeyDecisions: o.GetKeyDecisions(), ModifiedFiles: o.GetModifiedFiles(),
			NewPatterns: o.GetNewPatterns(), PotentialGotchas: o.GetPotentialGotchas(),
		})
	}
	res, err := r.render.Build(name, r.depMap, arts)
	if err != nil {
		// The template was tried when the run was made; a failure now is
		// logged, and the task runs without the rendered block rather
		// than not at all.
		r.h.logger.Warn("context template failed", "run", r.id, "task", name, "error", err)
	}
	var up []sdk.Upstream
	for _, st := range res.Steps {
		o := byTask[st.Task]
		if o == nil {
			continue
		}
		up = append(up, sdk.Upstream{
			Task: o.GetTask(), Version: int(o.GetVersion()), Session: o.GetSourceSession(), CreatedAt: unixTime(o.GetArtifactUnixNano()),
			Artifact: sdk.ContextArtifact{
				KeyDecisions: o.GetKeyDecisions(), ModifiedFiles: o.GetModifiedFiles(),
				NewPatterns: o.GetNewPatterns(), PotentialGotchas: o.GetPotentialGotchas(),
			},
		})
	}
	if res.Block != "" {
		r.emit(Event{Kind: EventRunContext, Task: name, Message: fmt.Sprintf("%s: %d bytes of context from %d earlier steps (%d steps, %d items left out)",
			name, len(res.Block), len(res.Steps)-res.OmittedSteps, res.OmittedSteps, res.OmittedItems)})
	}
	return up, res.Block
}

// attempt runs one attempt of a task and records its outcome.
func (r *runExec) attempt(a attemptSpec) {
	defer r.attempts.Done()
	p, err := r.h.pool(a.task.Agent)
	var out *Outcome
	if err == nil {
		if err = r.h.enter(); err == nil {
			out, err = r.h.execute(r.ctx, p, a.task, r.guardRun())
			r.h.inflight.Done()
		}
	}
	pend := r.outcome(a, out, err)
	if pend != nil {
		if werr := pend.Wait(context.Background()); werr != nil {
			r.storeFailed(werr)
		}
	}
	r.signal()
}

// permanent reports whether retrying a failure cannot help.
func permanent(err error) bool {
	return errors.Is(err, sdk.ErrPermanent) || errors.Is(err, sdk.ErrNotOwner) ||
		errors.Is(err, ErrDenied) || errors.Is(err, ErrUnknownAgent)
}

// outcome records how an attempt ended and queues the write.
func (r *runExec) outcome(a attemptSpec, out *Outcome, err error) *store.Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	i := a.i
	rt := r.tasks[i]
	name := rt.GetName()
	now := r.now()
	r.touchLocked()
	spent := r.progressCost[a.task.ID]
	delete(r.progressCost, a.task.ID)
	if rt.GetRound() != a.round || rt.GetTaskId() != a.task.ID {
		// A quality gate sent the work back past this task while the
		// attempt ran: the round it belongs to is over. Its cost was
		// spent all the same; its result is not used.
		if out != nil {
			spent = out.Result.Cost
		}
		r.addCostLocked(i, spent)
		r.emit(Event{Kind: EventRunTask, Task: name, Agent: r.graph.GetTasks()[i].GetAgent(), Cost: spent,
			Message: fmt.Sprintf("%s: attempt %d of round %d ended after its round was reset; its result is discarded", name, a.task.Attempt, a.round)})
		return r.saveLocked(store.RunWrite{})
	}
	rt.FinishedUnixNano = now.UnixNano()
	if err != nil {
		if cause := context.Cause(r.ctx); cause != nil || errors.Is(err, ErrClosed) {
			// Interrupted, not failed: it runs again on resume, with the
			// next attempt number.
			why := "the host shut down"
			if cause != nil {
				why = cause.Error()
			}
			rt.Reason = "interrupted: " + why
			r.addCostLocked(i, spent) // reported before the interruption: spent
			r.setTaskLocked(i, TaskPending, rt.Reason)
			return r.saveLocked(store.RunWrite{})
		}
		r.addCostLocked(i, spent)
		rt.Failures++
		rt.Error = err.Error()
		rt.Errors = append(rt.Errors, rt.Error)
		if len(rt.Errors) > maxErrors {
			rt.Errors = rt.Errors[len(rt.Errors)-maxErrors:]
		}
		if !permanent(err) && int(rt.GetFailures()) < r.maxAttempts(i) {
			delay := r.pipe.Retry.Delay(int(rt.GetFailures()))
			rt.RetryAtUnixNano = now.Add(delay).UnixNano()
			r.setTaskLocked(i, TaskRetrying, fmt.Sprintf("attempt %d of %d failed; next in %s", rt.GetFailures(), r.maxAttempts(i), delay))
			return r.saveLocked(store.RunWrite{})
		}
		why := fmt.Sprintf("failed after %d attempts", rt.GetFailures())
		if permanent(err) {
			why = "failed and will not be retried (the failure is permanent)"
		}
		r.setTaskLocked(i, TaskFailed, why)
		r.escalateLocked(i, fmt.Sprintf("task %s %s; last error: %s", name, why, err))
		p, _ := r.checkpointLocked("task "+name+" failed", name, store.RunWrite{})
		return p
	}

	res := out.Result
	r.addCostLocked(i, res.Cost)
	rt.Session = out.Session
	rt.Version = r.lastVersion(i) + 1
	o := &storepb.TaskOutput{
		Task: name, Version: rt.GetVersion(), Output: res.Output, Metrics: res.Metrics, Cost: res.Cost,
		Session: out.Session, Attempt: int32(a.task.Attempt), Round: a.round, UnixNano: now.UnixNano(),
		DurationNanos: int64(out.Duration), KeyDecisions: out.Artifact.KeyDecisions, ModifiedFiles: out.Artifact.ModifiedFiles,
		NewPatterns: out.Artifact.NewPatterns, PotentialGotchas: out.Artifact.PotentialGotchas,
		SourceSession: out.Session, ArtifactUnixNano: now.UnixNano(),
		Action: string(out.Decision.Action), Score: out.Decision.Score,
	}
	r.current[i] = o
	w := store.RunWrite{Outputs: []*storepb.TaskOutput{o}}
	if g := out.Gate; g != nil {
		return r.gateLocked(i, g, o, w)
	}
	rt.NeedsReview, rt.Feedback, rt.Error = false, "", ""
	r.setTaskCostLocked(i, TaskSucceeded, fmt.Sprintf("v%d in %s on %s (%s)", rt.GetVersion(), out.Duration.Round(time.Millisecond), out.Session, out.Decision.Action), res.Cost)
	p, _ := r.checkpointLocked("task "+name+" succeeded", name, w)
	return p
}

// lastVersion is the highest output version task i has had: versions
// keep counting up after an output is archived.
func (r *runExec) lastVersion(i int) int32 {
	v := r.tasks[i].GetVersion()
	if o := r.current[i]; o != nil {
		v = max(v, o.GetVersion())
	}
	if n, ok := r.versions[r.tasks[i].GetName()]; ok {
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
func (r *runExec) gateLocked(i int, g *Gate, o *storepb.TaskOutput, w store.RunWrite) *store.Pending {
	rt := r.tasks[i]
	name := rt.GetName()
	if r.head.GateLoops == nil {
		r.head.GateLoops = make(map[string]int32)
	}
	loops := r.head.GateLoops[g.Guard] + 1
	limit := int32(max(g.MaxLoops, 1))
	r.emit(Event{Kind: EventRunGate, Task: name, Guard: g.Guard, Action: string(g.Action),
		Message: fmt.Sprintf("%s v%d: gate %s (%s, loop %d of %d): %s", name, o.GetVersion(), g.Guard, g.Action, loops, limit, g.Feedback)})
	if loops > limit {
		rt.Error = fmt.Sprintf("quality gate %s still fails after %d loops: %s", g.Guard, limit, g.Feedback)
		r.setTaskLocked(i, TaskSucceeded, "kept for review: "+rt.Error)
		r.escalateLocked(i, fmt.Sprintf("task %s: %s; its output is kept for review: resume the run to accept it as it is, or revisit the task to do it again (hearth runs revisit %s %s --impact major), after raising the guard's max_loops if need be",
			name, rt.Error, r.id, cmpOr(g.To, name)))
		p, _ := r.checkpointLocked("gate "+g.Guard+" gave up on "+name, name, w)
		return p
	}
	r.head.GateLoops[g.Guard] = loops
	feedback := fmt.Sprintf("The %s step's quality gate %q sent this work back (loop %d of %d): %s", name, g.Guard, loops, limit, g.Feedback)
	if out := strings.TrimSpace(o.GetOutput()); out != "" {
		if len(out) > feedbackOutputMax {
			out = out[:feedbackOutputMax] + "\n[...]"
		}
		feedback += "\n\nIts report:\n" + out
	}
	target := i
	if g.Action == guard.SendBack {
		j, ok := r.index[g.To]
		if !ok || !r.ancestor(j, i) {
			rt.Error = fmt.Sprintf("quality gate %s sends work back to %q, which task %s does not depend on", g.Guard, g.To, name)
			r.setTaskLocked(i, TaskSucceeded, "kept for review: "+rt.Error)
			r.escalateLocked(i, fmt.Sprintf("task %s: %s; fix the guard's back_to", name, rt.Error))
			p, _ := r.checkpointLocked("gate "+g.Guard+" misconfigured", name, w)
			return p
		}
		target = j
	}
	// The gated task's output is kept as a version, then archived with
	// everything downstream of the target.
	r.setTaskCostLocked(i, TaskSucceeded, fmt.Sprintf("v%d, gated by %s", o.GetVersion(), g.Guard), o.GetCost())
	reset := append([]int{target}, r.descendants(target)...)
	for _, j := range reset {
		r.resetLocked(j, fmt.Sprintf("sent back by quality gate %s", g.Guard))
	}
	r.tasks[target].Feedback = feedback
	p, _ := r.checkpointLocked(fmt.Sprintf("gate %s sent %s back to %s", g.Guard, name, r.tasks[target].GetName()), name, w)
	return p
}

// resetLocked sets task i back to pending for a new round of work; its
// current output is archived.
func (r *runExec) resetLocked(i int, reason string) {
	rt := r.tasks[i]
	if v := rt.GetVersion(); v > 0 {
		r.noteVersion(i, v)
	}
	rt.Version, rt.Round, rt.Attempts, rt.Failures = 0, rt.GetRound()+1, 0, 0
	rt.Error, rt.Errors, rt.NeedsReview, rt.Reason, rt.RetryAtUnixNano = "", nil, false, reason, 0
	r.current[i] = nil
	r.dirty[i] = true
	r.setTaskLocked(i, TaskPending, reason)
}

// noteVersion remembers that task i had output version v, so that the
// next version is v+1 even after the output was archived.
func (r *runExec) noteVersion(i int, v int32) {
	if r.versions == nil {
		r.versions = make(map[string]int32)
	}
	name := r.tasks[i].GetName()
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
	if r.stages && r.head.GetStage() != stageCompleted {
		if !r.enterStageLocked(stageCompleted) {
			return
		}
	}
	r.stop = &stopRequest{kind: stopEscalate, to: RunCompleted}
}

// finish records how the run stopped and releases its handle.
func (r *runExec) finish() {
	r.mu.Lock()
	st := r.stop
	to, reason := st.to, st.reason
	switch st.kind {
	case stopPause, stopShutdown:
		to = RunPaused
	case stopCancel:
		to = RunCancelled
		for i, rt := range r.tasks {
			if s := taskStatusOf(rt.GetStatus()); s == TaskPending || s == TaskRetrying {
				rt.Reason = "the run was cancelled"
				r.setTaskLocked(i, TaskSkipped, rt.Reason)
			}
		}
	}
	var pend *store.Pending
	if err := r.setRunLocked(to, reason); err != nil {
		r.h.logger.Error("cannot record how a run stopped", "run", r.id, "error", err)
	} else {
		pend, _ = r.checkpointLocked(fmt.Sprintf("run %s%s", to, prefixed(": ", firstLine(reason))), "", store.RunWrite{})
	}
	info := r.infoLocked()
	r.mu.Unlock()
	var err error
	if pend != nil {
		err = pend.Wait(context.Background())
	}
	r.cancel(nil)
	r.h.forgetRun(r)
	r.handle.info = info
	switch {
	case err != nil:
		r.handle.err = fmt.Errorf("run %s: record its end: %w", r.id, err)
	case info.Status != RunCompleted:
		r.handle.err = &RunError{Run: r.id, Status: info.Status, Reason: info.Reason}
	}
	// Done after the run's last events reach its subscribers: a watcher
	// that stops at Done has seen them all.
	r.h.events.afterPublished(func() { close(r.handle.done) })
}

// infoLocked describes the run.
func (r *runExec) infoLocked() RunInfo {
	return runInfoOf(r.head, false)
}
