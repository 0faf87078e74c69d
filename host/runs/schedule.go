package runs

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/contextchain"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
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

// Guards are the run-level guards a schedule consults: task_admission
// before a task starts, transition before the run enters a stage. Their
// answers depend on nothing but what they are given; the schedule records
// the guard that fired with the run's next write.
type Guards interface {
	// Admit returns the task_admission guard that refuses task t of
	// run, nil when none does.
	Admit(t hearth.Task, run guard.Run) *guard.Verdict
	// Transition returns the transition guard that blocks run leaving
	// stage from for stage to, nil when none does.
	Transition(run guard.Run, from, to string) *guard.Verdict
}

// StopKind is why a run stops executing.
type StopKind int

// Why a run stops.
const (
	StopPause    StopKind = iota + 1 // asked for (PauseRun, retention)
	StopCancel                       // CancelRun
	StopShutdown                     // the host is closing
	StopEscalate                     // a task failed for good, a gate or guard said so, the run completed
)

type stopRequest struct {
	kind   StopKind
	to     hearth.RunStatus
	reason string
}

// attempt is one attempt of a task the schedule started.
type attempt struct {
	i     int
	task  hearth.Task
	round int
}

// Effects are what the shell does after a call of the schedule, in this
// order: queue Write, hand its events (Write.Events) to be published once
// it is durable, and, once it is durable, start Launch.
type Effects struct {
	// Write holds the run's records the call changed and the events that
	// report them; nil when it changed nothing that is kept.
	Write *record.RunWrite
	// Launch are the attempts Write records as running.
	Launch []attempt
	// WakeAt is when a retrying task is due, zero for none: the shell
	// calls Next then, or when something happens first.
	WakeAt time.Time
	// Warnings are for the shell's log: a refused task transition (a bug
	// of the schedule), a context template that failed.
	Warnings []string
}

// Schedule is the decisions of one run: which tasks may start, when the
// run enters a stage, whether a task is admitted, what an attempt's end
// means (success, retry, failure for good, a quality gate's loop, an
// interruption), when the run escalates, completes or finds that no task
// can start, and when to wake. It holds the run's records as plain values
// (package record) and changes them; it has no lock and does no I/O: the
// run's shell (Run) calls it under its lock, writes what it answers and
// runs the attempts it starts:
//
//	for {
//		if s.Stopping() {
//			if s.Running() == 0 { eff = s.Finish(now); write(eff); return }
//			wait for an attempt to end; continue
//		}
//		eff := s.Next(now)          // the tasks to start, recorded as running
//		p := write(eff.Write)        // its events are published once p is durable
//		p.Wait(); launch(eff.Launch) // each attempt ends with s.Ended(...), written the same way
//		wait for an attempt to end, a stop, or eff.WakeAt
//	}
//
// The rules (Next, Ended, Finish):
//
//   - A task may start when every task it depends on has succeeded, in
//     graph order, while fewer than the pipeline's parallel tasks run; a
//     retrying task once its retry time has come. A task found failed or
//     skipped (records resume did not reset) stops the run.
//   - Stages do not interleave: the run enters the stage of the next task
//     only when nothing of the current stage runs and nothing else starts
//     in the same pass, one stage at a time; transition guards may block
//     the entry, which pauses the run with the guard's message. A stage
//     its rules keep closed (hearth.Stage.Opens: not_before) is waited
//     for: its task waits, saying so once, the run wakes when the stage
//     may open and is not idle meanwhile, and the guards are asked then
//     (stagewait.go).
//   - Before a task starts, the budget (a run at or over it starts
//     nothing) and the task_admission guards; a refusal escalates. Tasks
//     already started in the pass still run.
//   - A task that starts is recorded as running, with its attempt and
//     host task ID, in a write the shell waits for before the attempt
//     starts; its prompt gets its ancestors' context (contextchain).
//   - An attempt interrupted (the run's context was cancelled: pause,
//     cancel; or the host closed) makes its task pending again: it runs
//     again, with the next attempt number, when the run resumes. Failures
//     are counted, interruptions are not.
//   - An attempt that failed is retried after the pipeline's backoff
//     while it has attempts left and the failure is not permanent
//     (permanent); otherwise its task fails for good and the run fails,
//     or pauses (on_failure = "pause").
//   - An attempt that succeeded gives its task a new output version. A
//     quality gate on it runs the task again with feedback (retry) or
//     sends the work back to an earlier task, everything downstream of
//     which runs again (send_back); a gate acting more than its
//     max_loops in the run keeps the output for review and escalates.
//   - An attempt that ends after its round was reset (a gate sent the
//     work back past it) has its cost counted and its result discarded.
//   - When every task has succeeded, the run completes, entering stage
//     "completed" first when it uses stages (transition guards may block
//     that too). When nothing runs, nothing is due and nothing stops the
//     run, no task can start: the run escalates, saying so.
//   - Nothing is shown or published as done before the write that makes
//     it so: every event the schedule emits (a task's transition and its
//     task.succeeded, a gate's verdict, a stage entered, a guard that
//     fired, a checkpoint, the run's status) travels in the write of the
//     records it reports (Effects.Write.Events), and the shell publishes
//     them once that write is durable. An event is never answered without
//     a write.
//
// What the Schedule holds besides its rules, each a type of its own
// with no lock and no I/O, tested beside it: the run's pipeline as a
// graph (plan, plan.go); its records and how each change to them is
// written (ledger, ledger.go), with its state document (stateDoc,
// statedoc.go) and its files and chunk marks (runFiles, files.go); and
// what is done to the records between passes, by a person or a run's
// agent (surgery, surgery.go: create, launch, resume, repair, revisit,
// fork, abandon, a failed write). The Schedule embeds the surgery, and
// through it the records, so that its rules read the records as its own
// (s.head, s.tasks) and the shell reaches every part through the one
// value; its own methods are the rules above.
type Schedule struct {
	surgery
	render *contextchain.Renderer
	guards Guards

	running int
	stop    *stopRequest
	// progressCost is the cost the running attempts last reported, by
	// host task ID: what a failed attempt adds to the run's cost.
	progressCost map[string]float64
	// succeeded holds the pool's task.succeeded event of each attempt
	// (by host task ID) until its outcome is recorded (Succeeded).
	succeeded map[string]hearth.Event
	// stageWait is when the stage the run waits for may open, as the
	// last Next found it; zero when it waits for none (stagewait.go).
	stageWait time.Time
}

// NewSchedule makes the schedule of a run from its records: its head,
// its graph, its task records by name (missing ones are pending) and its
// outputs, every version. It keeps them and changes them.
func NewSchedule(head *record.Run, g *record.Graph, recs map[string]*record.Task, outs []*record.Output, guards Guards) (*Schedule, error) {
	render, err := renderer(g.Pipeline.Context)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", head.ID, err)
	}
	l, err := newLedger(newPlan(head.ID, g.Pipeline, g.Config), head, recs, outs)
	if err != nil {
		return nil, err
	}
	return &Schedule{surgery: surgery{l}, render: render, guards: guards, progressCost: make(map[string]float64)}, nil
}

// Running is how many attempts run.
func (s *Schedule) Running() int { return s.running }

// Stopping reports whether the run is to stop: no task starts any more.
func (s *Schedule) Stopping() bool { return s.stop != nil }

// Quiet reports whether the run is idle: nothing runs and nothing stops
// it (retention pauses a quiet run idle past its pause_after).
func (s *Schedule) Quiet() bool { return s.running == 0 && s.stop == nil }

// Stop asks the run to stop: no task starts any more; running attempts
// end as they end (the shell interrupts them for a pause or a cancel).
// The first request wins, except that a cancel overrides.
func (s *Schedule) Stop(kind StopKind, to hearth.RunStatus, reason string) {
	if s.stop == nil || (kind == StopCancel && s.stop.kind != StopCancel) {
		s.stop = &stopRequest{kind: kind, to: to, reason: reason}
	}
}

// escalate stops the run because of a failure of task i (-1: of none):
// it fails, or pauses for a person, by the task's on_failure. Running
// attempts may finish.
func (s *Schedule) escalate(i int, report string) {
	to := hearth.RunFailed
	if s.onFailure(i) == hearth.OnFailurePause {
		to = hearth.RunPaused
	}
	if s.stop == nil {
		s.stop = &stopRequest{kind: StopEscalate, to: to, reason: report}
	}
}

// Next starts what can start now: tasks whose dependencies have
// succeeded, in graph order, up to the run's parallelism, entering their
// stage first when it changes. It answers the attempts to launch, recorded
// as running in its write, and when a retrying task will be due. It may
// stop the run instead: the run completed, a guard or the budget refused
// a task, or no task can start.
func (s *Schedule) Next(now time.Time) Effects {
	s.at(now)
	if s.stop != nil {
		return s.nothing()
	}
	s.stageWait = time.Time{}
	parallel := max(s.pipe.Parallel, 1)
	done := true
	var ready []int
	var wakeAt time.Time
	for i, rt := range s.tasks {
		switch rt.Status {
		case hearth.TaskSucceeded:
			continue
		case hearth.TaskFailed, hearth.TaskSkipped:
			// A task failed for good stops the run; one found here came
			// from records the resume did not reset.
			s.escalate(i, fmt.Sprintf("task %s is %s; resume the run to try it again", rt.Name, rt.Status))
			return s.nothing()
		case hearth.TaskRunning:
			done = false
		case hearth.TaskRetrying:
			done = false
			if at := rt.RetryAt; at.After(now) {
				wakeAt = earliest(wakeAt, at)
				continue
			}
			ready = append(ready, i)
		case hearth.TaskPending:
			done = false
			if s.depsDone(i) {
				ready = append(ready, i)
			}
		}
	}
	if done {
		return s.complete()
	}
	var launch []attempt
	stage := ""
	// An escalation or a blocked stage ends the pass, but the tasks it
	// already started are launched: they are recorded as running, and the
	// shell waits for them to end.
	for _, i := range ready {
		if s.running >= parallel {
			break
		}
		ts := s.pipe.Tasks[i].Stage
		if ts != "" && ts != s.head.Stage {
			// Stages do not interleave: the run enters a new stage only
			// when nothing of the old one runs, one transition at a time.
			if s.running > 0 || len(launch) > 0 || (stage != "" && stage != ts) {
				continue
			}
			// A stage whose rules keep it closed is waited for: the pass
			// wakes when it may open, and its guards are asked then.
			if at, wait := s.stageClosed(i, ts); wait {
				if s.stop != nil {
					break // it will never open: the run escalated
				}
				wakeAt = earliest(wakeAt, at)
				continue
			}
			if !s.enterStage(ts) {
				break
			}
		}
		stage = ts
		if !s.admit(i) {
			break
		}
		launch = append(launch, s.start(i))
	}
	if len(launch) > 0 {
		s.touch()
		eff := s.save(record.RunWrite{})
		eff.Launch, eff.WakeAt = launch, wakeAt
		return eff
	}
	// What this pass emitted without starting anything (a stage entered,
	// a refusal) stopped the run: it goes in the write of its end
	// (Finish).
	if s.running == 0 && wakeAt.IsZero() && s.stop == nil {
		// Nothing runs, nothing is due: the remaining tasks wait on
		// dependencies that cannot succeed.
		s.escalate(-1, "no task can start: the remaining tasks wait on dependencies that did not succeed")
	}
	eff := s.nothing()
	if len(s.events) > 0 && s.stop == nil {
		// Why tasks wait for a stage, said once per wait: written now,
		// since no end of the run carries it.
		eff = s.save(record.RunWrite{})
	}
	eff.WakeAt = wakeAt
	return eff
}

func (s *Schedule) depsDone(i int) bool {
	for _, d := range s.deps[i] {
		if s.tasks[d].Status != hearth.TaskSucceeded {
			return false
		}
	}
	return true
}

// enterStage moves the run into stage to, unless a transition guard
// blocks it; then the run pauses with the guard's message.
func (s *Schedule) enterStage(to string) bool {
	from := cmp.Or(s.head.Stage, string(hearth.RunCreated))
	if v := s.guards.Transition(s.guardRun(), from, to); v != nil {
		s.emit(hearth.Event{Kind: hearth.EventGuardFired, Hook: string(guard.Transition), Guard: v.Guard, Action: string(v.Action),
			From: from, To: to, Message: fmt.Sprintf("%s -> %s blocked by guard %s: %s", from, to, v.Guard, v.Message)})
		s.stop = &stopRequest{kind: StopEscalate, to: hearth.RunPaused,
			reason: fmt.Sprintf("stage %s -> %s blocked by guard %s: %s; fix the run's state, then resume it", from, to, v.Guard, v.Message)}
		return false
	}
	s.head.Stage = to
	s.emit(hearth.Event{Kind: hearth.EventRunStage, From: from, To: to, Message: fmt.Sprintf("run %s: stage %s -> %s", s.id, from, to)})
	return true
}

// admit checks the run's budget and the task_admission guards before task
// i starts. A refusal escalates with a report saying what to do.
func (s *Schedule) admit(i int) bool {
	name := s.tasks[i].Name
	if b := s.head.Budget; b > 0 && s.head.Cost >= b {
		s.escalate(i, fmt.Sprintf("task %s was not started: the run has spent %.2f of its budget of %.2f; resume it with a larger budget (hearth runs resume %s --budget N) or cancel it",
			name, s.head.Cost, b, s.id))
		s.emit(hearth.Event{Kind: hearth.EventGuardFired, Hook: string(guard.TaskAdmission), Guard: "budget", Action: string(guard.Deny), Task: name,
			Message: fmt.Sprintf("budget: %.2f of %.2f spent", s.head.Cost, b)})
		return false
	}
	t := s.task(i)
	if v := s.guards.Admit(t, s.guardRun()); v != nil {
		e := guard.Event(guard.TaskAdmission, v, t.Agent, "", t.ID)
		s.emit(e)
		s.escalate(i, fmt.Sprintf("task %s was not started: %v", name, &hearth.DeniedError{Task: t.ID, Guard: v.Guard, Message: v.Message}))
		return false
	}
	return true
}

// task is task i as the host runs it, for its next attempt.
func (s *Schedule) task(i int) hearth.Task {
	g := s.pipe.Tasks[i]
	rt := s.tasks[i]
	key := fmt.Sprintf("%s/%s/%d", s.id, g.Name, max(rt.Round, 1))
	attempt := rt.Attempts + 1
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
		Metadata: meta, Run: s.id, IdempotencyKey: key, Attempt: attempt,
		RequireChecks: s.pipe.RequireChecks,
	}
}

// start records task i as running and prepares its attempt: beside its
// prompt, as written, go the ancestors' context and any feedback; a
// prompt that holds hearth.ContextPlaceholder gets the rendered block
// there instead.
func (s *Schedule) start(i int) attempt {
	t := s.task(i)
	rt := s.tasks[i]
	t.Upstream, t.Context = s.context(i)
	if strings.Contains(t.Prompt, hearth.ContextPlaceholder) {
		t.Prompt = strings.ReplaceAll(t.Prompt, hearth.ContextPlaceholder, t.Context)
		t.Context = ""
	}
	t.Feedback = rt.Feedback
	rt.Attempts++
	rt.TaskID = t.ID
	rt.Started, rt.Finished, rt.RetryAt = s.now, time.Time{}, time.Time{}
	rt.Reason = ""
	// The attempt runs in the run's trace (the shell's hearth.run span
	// is its task span's parent).
	rt.TraceID = s.head.TraceID
	// The attempt counted is the one against the retry limit: failures
	// use attempts up, interruptions (pause, kill, Ctrl-C) do not, and
	// a resume starts the count again. t.Attempt, which numbers every
	// delivery of the round, stays in the task ID.
	s.setTask(i, hearth.TaskRunning, fmt.Sprintf("attempt %d of %d", rt.Failures+1, s.maxAttempts(i)))
	s.running++
	return attempt{i: i, task: t, round: rt.Round}
}

// context collects what the ancestors of task i learned: their current
// outputs' artifacts as contextchain selects them (nearest first, then
// newest), whole, and the block contextchain renders from them for agents
// that want text.
func (s *Schedule) context(i int) ([]sdk.Upstream, string) {
	name := s.tasks[i].Name
	var arts []contextchain.Artifact
	byTask := make(map[string]*record.Output, len(s.current))
	for j, o := range s.current {
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
	res, err := s.render.Build(name, s.depMap, arts)
	if err != nil {
		// The template was tried when the run was made; a failure now is
		// reported, and the task runs without the rendered block rather
		// than not at all.
		s.warn("context template failed for task %s: %v", name, err)
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
		s.emit(hearth.Event{Kind: hearth.EventRunContext, Task: name, Message: fmt.Sprintf("%s: %d bytes of context from %d earlier steps (%d steps, %d items left out)",
			name, len(res.Block), len(res.Steps)-res.OmittedSteps, res.OmittedSteps, res.OmittedItems)})
	}
	return up, res.Block
}

// permanent reports whether retrying a failure cannot help: the agent
// said so, a guard refused, or the plugin cannot start as configured (its
// program is missing, does not match its pin, or speaks no hearth
// handshake, or cannot be confined as asked), which a retry only repeats.
func permanent(err error) bool {
	return errors.Is(err, sdk.ErrPermanent) || errors.Is(err, sdk.ErrNotOwner) ||
		errors.Is(err, hearth.ErrDenied) || errors.Is(err, hearth.ErrUnknownAgent) ||
		errors.Is(err, hearth.ErrProgramMissing) || errors.Is(err, hearth.ErrChecksumMismatch) || errors.Is(err, hearth.ErrConfinement) ||
		errors.Is(err, hearth.ErrHandshake) || errors.Is(err, hearth.ErrProtocolVersion) || errors.Is(err, hearth.ErrDenialIgnored)
}

// Progress notes a running attempt's reported cost: what it adds to the
// run's cost if it fails.
func (s *Schedule) Progress(now time.Time, taskID string, cost float64) {
	s.at(now)
	s.progressCost[taskID] = cost
	s.touch()
}

// Succeeded keeps an attempt's task.succeeded event (the pool's, which it
// does not emit itself for a run's task) for its outcome, which writes it
// with the record of the success (Ended). An attempt whose success is
// not recorded (its round was reset, its output too large) drops it: it
// is never said to have succeeded.
func (s *Schedule) Succeeded(e hearth.Event) {
	if s.succeeded == nil {
		s.succeeded = make(map[string]hearth.Event)
	}
	s.succeeded[e.Task] = e
}

// Ended records how attempt a ended: its outcome out, or err; interrupted
// is why the run's attempts were cancelled, nil when they were not (a
// failure while the run was being paused or cancelled, or the host
// closing, is an interruption, not a failure).
func (s *Schedule) Ended(now time.Time, a attempt, out *hearth.Outcome, err, interrupted error) Effects {
	s.at(now)
	s.running--
	i := a.i
	rt := s.tasks[i]
	name := rt.Name
	s.touch()
	spent := s.progressCost[a.task.ID]
	delete(s.progressCost, a.task.ID)
	ok, agentSucceeded := s.succeeded[a.task.ID]
	delete(s.succeeded, a.task.ID)
	if rt.Round != a.round || rt.TaskID != a.task.ID {
		// A quality gate sent the work back past this task while the
		// attempt ran: the round it belongs to is over. Its cost was
		// spent all the same; its result is not used.
		if out != nil {
			spent = out.Result.Cost
		}
		s.addCost(i, spent)
		s.emit(hearth.Event{Kind: hearth.EventRunTask, Task: name, Agent: s.pipe.Tasks[i].Agent, Cost: spent,
			Message: fmt.Sprintf("%s: attempt %d of round %d ended after its round was reset; its result is discarded", name, a.task.Attempt, a.round)})
		return s.save(record.RunWrite{})
	}
	rt.Finished = s.now
	if err == nil && out != nil && len(out.Result.Output) > hearth.MaxOutput {
		// Stored, it would be one value bigger than a store write may be,
		// and unreadable through the daemon: the task fails, saying so,
		// and nothing of the output is written.
		err = sdk.Permanent(fmt.Errorf("task %s returned an output of %d bytes (%.1f MiB), more than the %d MiB a task's output may be; write large results to a file and return its path", name, len(out.Result.Output), float64(len(out.Result.Output))/(1<<20), hearth.MaxOutput>>20))
		out = nil
	}
	if err != nil {
		if interrupted != nil || errors.Is(err, hearth.ErrClosed) {
			// Interrupted, not failed: it runs again on resume, with the
			// next attempt number.
			why := "the host shut down"
			if interrupted != nil {
				why = interrupted.Error()
			}
			rt.Reason = "interrupted: " + why
			s.addCost(i, spent) // reported before the interruption: spent
			s.setTask(i, hearth.TaskPending, rt.Reason)
			return s.save(record.RunWrite{})
		}
		s.addCost(i, spent)
		rt.Failures++
		rt.Error = err.Error()
		rt.Errors = append(rt.Errors, rt.Error)
		if len(rt.Errors) > maxErrors {
			rt.Errors = rt.Errors[len(rt.Errors)-maxErrors:]
		}
		if !permanent(err) && rt.Failures < s.maxAttempts(i) {
			delay := s.pipe.Retry.Delay(rt.Failures)
			rt.RetryAt = s.now.Add(delay)
			s.setTask(i, hearth.TaskRetrying, fmt.Sprintf("attempt %d of %d failed; next in %s", rt.Failures, s.maxAttempts(i), delay))
			return s.save(record.RunWrite{})
		}
		why := fmt.Sprintf("failed after %d attempts", rt.Failures)
		if permanent(err) {
			why = "failed and will not be retried (the failure is permanent)"
		}
		s.setTask(i, hearth.TaskFailed, why)
		s.escalate(i, fmt.Sprintf("task %s %s; last error: %s", name, why, err))
		eff, _ := s.checkpoint("task "+name+" failed", name, record.RunWrite{})
		return eff
	}

	res := out.Result
	if agentSucceeded {
		// Written with the output and the task's record, below.
		s.emit(ok)
	}
	s.addCost(i, res.Cost)
	rt.Session = out.Session
	rt.Version = s.lastVersion(i) + 1
	o := &record.Output{
		Task: name, Version: rt.Version, Output: res.Output, Metrics: res.Metrics, Cost: res.Cost,
		Session: out.Session, Attempt: a.task.Attempt, Round: a.round, Time: s.now,
		Duration: out.Duration, Artifact: out.Artifact,
		Action: string(out.Decision.Action), Score: out.Decision.Score,
	}
	s.current[i] = o
	w := record.RunWrite{Outputs: []*record.Output{o}}
	if g := out.Gate; g != nil {
		return s.gate(i, g, o, w)
	}
	rt.NeedsReview, rt.Feedback, rt.Error = false, "", ""
	s.setTaskCost(i, hearth.TaskSucceeded, fmt.Sprintf("v%d in %s on %s (%s)", rt.Version, out.Duration.Round(time.Millisecond), out.Session, out.Decision.Action), res.Cost)
	eff, _ := s.checkpoint("task "+name+" succeeded", name, w)
	return eff
}

// gate acts on a quality gate that fired on task i's result: the task
// runs again with the gate's feedback (retry), or the work goes back to
// an earlier task, and everything after it is done again (send_back). A
// gate that acted max_loops times in the run escalates instead.
func (s *Schedule) gate(i int, g *hearth.Gate, o *record.Output, w record.RunWrite) Effects {
	rt := s.tasks[i]
	name := rt.Name
	if s.head.GateLoops == nil {
		s.head.GateLoops = make(map[string]int)
	}
	loops := s.head.GateLoops[g.Guard] + 1
	limit := max(g.MaxLoops, 1)
	// Past its limit the gate does not loop again: the message says so,
	// never "loop 3 of 2".
	loop := fmt.Sprintf("loop %d of %d", loops, limit)
	if loops > limit {
		loop = fmt.Sprintf("still failing at its limit of %d loops; kept for review", limit)
	}
	s.emit(hearth.Event{Kind: hearth.EventRunGate, Task: name, Guard: g.Guard, Action: string(g.Action),
		Message: fmt.Sprintf("%s v%d: gate %s (%s, %s): %s", name, o.Version, g.Guard, g.Action, loop, g.Feedback)})
	if loops > limit {
		rt.Error = fmt.Sprintf("quality gate %s still fails after %d loops: %s", g.Guard, limit, g.Feedback)
		s.setTask(i, hearth.TaskSucceeded, "kept for review: "+rt.Error)
		s.escalate(i, fmt.Sprintf("task %s: %s; its output is kept for review: resume the run to accept it as it is, or revisit the task to do it again (hearth runs revisit %s %s --impact major), after raising the guard's max_loops if need be",
			name, rt.Error, s.id, cmp.Or(g.To, name)))
		eff, _ := s.checkpoint("gate "+g.Guard+" gave up on "+name, name, w)
		return eff
	}
	s.head.GateLoops[g.Guard] = loops
	feedback := fmt.Sprintf("The %s step's quality gate %q sent this work back (loop %d of %d): %s", name, g.Guard, loops, limit, g.Feedback)
	if out := strings.TrimSpace(o.Output); out != "" {
		if len(out) > feedbackOutputMax {
			out = out[:feedbackOutputMax] + "\n[...]"
		}
		feedback += "\n\nIts report:\n" + out
	}
	target := i
	if g.Action == hearth.GateSendBack {
		j, ok := s.index[g.To]
		if !ok || !s.ancestor(j, i) {
			rt.Error = fmt.Sprintf("quality gate %s sends work back to %q, which task %s does not depend on", g.Guard, g.To, name)
			s.setTask(i, hearth.TaskSucceeded, "kept for review: "+rt.Error)
			s.escalate(i, fmt.Sprintf("task %s: %s; fix the guard's back_to", name, rt.Error))
			eff, _ := s.checkpoint("gate "+g.Guard+" misconfigured", name, w)
			return eff
		}
		target = j
	}
	// The gated task's output is kept as a version, then archived with
	// everything downstream of the target.
	s.setTaskCost(i, hearth.TaskSucceeded, fmt.Sprintf("v%d, gated by %s", o.Version, g.Guard), o.Cost)
	reset := append([]int{target}, s.descendants(target)...)
	for _, j := range reset {
		s.reset(j, fmt.Sprintf("sent back by quality gate %s", g.Guard))
	}
	s.tasks[target].Feedback = feedback
	eff, _ := s.checkpoint(fmt.Sprintf("gate %s sent %s back to %s", g.Guard, name, s.tasks[target].Name), name, w)
	return eff
}

// complete ends a run whose tasks have all succeeded. A run that uses
// stages enters stage "completed" first, which transition guards may
// block: then it pauses instead.
func (s *Schedule) complete() Effects {
	if s.stages && s.head.Stage != stageCompleted {
		if !s.enterStage(stageCompleted) {
			return s.nothing()
		}
	}
	s.stop = &stopRequest{kind: StopEscalate, to: hearth.RunCompleted}
	return s.nothing()
}

// Finish records how the run stopped: paused for a pause or the host's
// shutdown, cancelled (its unfinished tasks skipped) for a cancel, else
// what stopped it; with a last checkpoint. Its error is a transition the
// lifecycle refuses (a bug; nothing is then written).
func (s *Schedule) Finish(now time.Time) (Effects, error) {
	s.at(now)
	st := s.stop
	to, reason := st.to, st.reason
	switch st.kind {
	case StopPause, StopShutdown:
		to = hearth.RunPaused
	case StopCancel:
		to = hearth.RunCancelled
		for i, rt := range s.tasks {
			if st := rt.Status; st == hearth.TaskPending || st == hearth.TaskRetrying {
				rt.Reason = "the run was cancelled"
				s.setTask(i, hearth.TaskSkipped, rt.Reason)
			}
		}
	}
	if err := s.setRun(to, reason); err != nil {
		return s.nothing(), err
	}
	eff, _ := s.checkpoint(fmt.Sprintf("run %s%s", to, prefixed(": ", text.FirstLine(reason))), "", record.RunWrite{})
	return eff, nil
}

// guardRun is the run as guards see it.
func (s *Schedule) guardRun() guard.Run {
	return guard.Run{ID: s.id, Pipeline: s.pipe.Name, Stage: s.head.Stage,
		Cost: s.head.Cost, Budget: s.head.Budget, State: s.doc.values()}
}
