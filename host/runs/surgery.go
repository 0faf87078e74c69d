package runs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/text"
)

// surgery is what is done to a run's records between the Schedule's
// passes: creating, launching, resuming, repairing, revisiting, forking
// and abandoning a run, what its agents' calls (state sections,
// checkpoints, chunk marks) write, and what a failed write leaves. Each
// method is a rule over the plain records (ledger), answering the write
// to make, with no lock and no I/O: the shell reads the records, calls
// these, and writes what they answer. The Schedule embeds it; the rules
// of execution are the Schedule's own (schedule.go).
type surgery struct{ *ledger }

// Created records a new run: its first checkpoint ("created"), written
// with its graph and the files it refers to.
func (s surgery) Created(now time.Time, g *record.Graph, fileRefs []string) Effects {
	s.at(now)
	s.emit(hearth.Event{Kind: hearth.EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", s.id, s.pipe.Name, len(s.pipe.Tasks))})
	eff, _ := s.checkpoint("created", "", record.RunWrite{Graph: g, FileRefs: fileRefs})
	return eff
}

// Launch records that the run runs from now on (started, resumed, forked
// or revisited, says why).
func (s surgery) Launch(now time.Time, why string) (Effects, error) {
	s.at(now)
	if err := s.setRun(hearth.RunRunning, why); err != nil {
		return s.nothing(), err
	}
	s.touch()
	return s.save(record.RunWrite{}), nil
}

// Resumable checks that the run may run again, for why ("resumed" by a
// person, or a revisit). A run whose record says running while no host
// runs it (its host stopped without recording how the run ended) is as
// good as paused.
func (s surgery) Resumable(why string) error {
	from := s.head.Status
	if from == hearth.RunRunning {
		// The store's last word on it is from a host that stopped
		// recording it, after a crash or a write the store refused (a
		// full disk). The transition to running is recorded next.
		from, s.head.Status = hearth.RunPaused, hearth.RunPaused
	}
	if from == hearth.RunCompleted && why == "resumed" {
		return fmt.Errorf("run %s completed; revisit a task to run it again (hearth runs revisit), or fork it", s.id)
	}
	if !canRun(from, hearth.RunRunning) {
		return &hearth.TransitionError{Run: s.id, From: string(from), To: string(hearth.RunRunning)}
	}
	return nil
}

// Problems checks the task records before the run resumes: outputs that
// should exist and statuses that agree with each other. (Its files and
// checkpoints on disk are the shell's to check.)
func (s surgery) Problems() []hearth.Problem {
	var out []hearth.Problem
	for i, rt := range s.tasks {
		name := rt.Name
		if rt.Status != hearth.TaskSucceeded {
			continue
		}
		switch {
		case rt.Version == 0:
			out = append(out, hearth.Problem{Task: name, Message: "marked succeeded but has no output", Repair: "run it again"})
		case s.current[i] == nil:
			out = append(out, hearth.Problem{Task: name, Message: fmt.Sprintf("its output v%d no longer exists", rt.Version), Repair: "run it again"})
		case rt.NeedsReview:
			// A minor revisit upstream left it standing, flagged.
		default:
			for _, d := range s.deps[i] {
				if s.tasks[d].Status != hearth.TaskSucceeded {
					out = append(out, hearth.Problem{Task: name, Message: fmt.Sprintf("marked succeeded while %s, which it depends on, is %s",
						s.tasks[d].Name, s.tasks[d].Status), Repair: "run it again after " + s.tasks[d].Name})
					break
				}
			}
		}
	}
	return out
}

// Repair does what each problem's Repair says: a task's runs again.
func (s surgery) Repair(now time.Time, problems []hearth.Problem) Effects {
	s.at(now)
	var fixed []string
	for _, p := range problems {
		if i, ok := s.index[p.Task]; ok && p.Task != "" {
			s.reset(i, "repaired on resume: "+p.Message)
			fixed = append(fixed, p.Task)
		}
	}
	s.emit(hearth.Event{Kind: hearth.EventRunRepaired, Message: fmt.Sprintf("run %s repaired on resume: %d problem(s); to run again: %s", s.id, len(problems), strings.Join(fixed, ", "))})
	eff, _ := s.checkpoint("repaired on resume", "", record.RunWrite{})
	return eff
}

// Resume resets what must run again before the run resumes: tasks that
// were running (interrupted), failed or were skipped become pending, each
// with its attempts again; opts' budget and state sections apply; a gate
// that gave up gets its loops again (resuming is a person's decision to
// try once more). Nothing is written: Launch does.
func (s surgery) Resume(now time.Time, opts hearth.ResumeOptions, why string) error {
	s.at(now)
	for i, rt := range s.tasks {
		switch rt.Status {
		case hearth.TaskRunning:
			rt.Reason = "interrupted: its host stopped while it ran"
			s.setTask(i, hearth.TaskPending, rt.Reason)
		case hearth.TaskFailed, hearth.TaskSkipped:
			rt.Failures, rt.Reason = 0, "the run was resumed"
			s.setTask(i, hearth.TaskPending, rt.Reason)
		}
	}
	if opts.Budget > 0 {
		s.head.Budget = opts.Budget
	}
	if err := s.setSections(opts.State, "set on "+why); err != nil {
		return err
	}
	s.head.GateLoops = nil
	s.head.Abandoned = false
	return nil
}

// Interrupted records, for a run no host runs, that the tasks its record
// says are running are not: they become pending, and run again when it
// resumes.
func (s surgery) Interrupted(now time.Time) {
	s.at(now)
	for i, rt := range s.tasks {
		if rt.Status == hearth.TaskRunning {
			rt.Reason = "interrupted: its host stopped while it ran"
			s.setTask(i, hearth.TaskPending, rt.Reason)
		}
	}
}

// Revise runs task again, and treats what came after it by impact: minor
// flags the tasks downstream "needs review"; moderate archives the
// outputs of the affected tasks (opts.Affects, by default the task's
// direct dependents) and runs them again, flagging the rest; major
// archives everything downstream and runs it all again. The revision
// goes into the run's history, with a checkpoint.
func (s surgery) Revise(now time.Time, task string, impact hearth.Impact, opts hearth.RevisitOptions) (Effects, error) {
	s.at(now)
	if st := s.head.Status; st == hearth.RunRunning || st == hearth.RunCancelled {
		if st == hearth.RunRunning {
			return s.nothing(), fmt.Errorf("run %s is running; pause it first (Ctrl-C in the hearth process that runs it), then revisit", s.id)
		}
		return s.nothing(), &hearth.TransitionError{Run: s.id, From: string(st), To: string(hearth.RunRunning)}
	}
	i, ok := s.index[task]
	if !ok {
		return s.nothing(), fmt.Errorf("run %s has no task %q; its tasks: %s", s.id, task, strings.Join(s.names(nil), ", "))
	}
	down := s.descendants(i)
	affected := s.kids[i]
	if len(opts.Affects) > 0 {
		if impact != hearth.ImpactModerate {
			return s.nothing(), fmt.Errorf("affects names the tasks a moderate revisit runs again; a %s revisit takes none", impact)
		}
		affected = nil
		for _, name := range opts.Affects {
			j, ok := s.index[name]
			if !ok || !slices.Contains(down, j) {
				return s.nothing(), fmt.Errorf("revisit of %s: %q is not downstream of it; downstream: %s", task, name, strings.Join(s.names(down), ", "))
			}
			affected = append(affected, j)
		}
	}
	rev := &hearth.Revision{Task: task, Impact: impact, Reason: opts.Reason, Time: s.now}
	archive := func(j int, why string) {
		if v := s.tasks[j].Version; v > 0 {
			rev.Archived = append(rev.Archived, fmt.Sprintf("%s v%d", s.tasks[j].Name, v))
		}
		s.reset(j, why)
		rev.Reset = append(rev.Reset, s.tasks[j].Name)
	}
	why := fmt.Sprintf("revisit of %s (%s impact)", task, impact)
	archive(i, why+prefixed(": ", opts.Reason))
	s.tasks[i].Feedback = "This task is revisited" + prefixed(": ", opts.Reason)
	for _, j := range down {
		switch {
		case impact == hearth.ImpactMajor, impact == hearth.ImpactModerate && slices.Contains(affected, j):
			archive(j, why)
		case s.tasks[j].Status == hearth.TaskSucceeded:
			s.tasks[j].NeedsReview = true
			s.dirty[j] = true
			rev.Review = append(rev.Review, s.tasks[j].Name)
		}
	}
	s.head.Revisions = append(s.head.Revisions, *rev)
	s.emit(hearth.Event{Kind: hearth.EventRunRevisit, Task: task, Message: fmt.Sprintf("%s; archived: %s; needs review: %s", why,
		text.OrNone(rev.Archived), text.OrNone(rev.Review))})
	eff, _ := s.checkpoint(why, task, record.RunWrite{})
	return eff, nil
}

// ForkRecords are the records of run from as they stood at checkpoint
// at, made into those of a new run: the head as it was then, created
// now, with the budget given (when positive), with no ID yet (the caller
// names it); its tasks, those that were running, retrying, failed or
// skipped pending again; the outputs that existed then (outs holds every
// version); and the label of the checkpoint. cps are from's checkpoints,
// oldest first.
func ForkRecords(from string, at uint64, cps []*record.Checkpoint, outs []*record.Output, budget float64, now time.Time) (
	head *record.Run, tasks map[string]*record.Task, copies []*record.Output, label string, err error) {
	var cp *record.Checkpoint
	state := make(map[string]*record.Task)
	for _, c := range cps {
		if c.Seq > at {
			break
		}
		for _, t := range c.Tasks {
			state[t.Name] = t
		}
		cp = c
	}
	if cp == nil || cp.Seq != at {
		last := uint64(0)
		if len(cps) > 0 {
			last = cps[len(cps)-1].Seq
		}
		return nil, nil, nil, "", fmt.Errorf("run %s has no checkpoint %d; its checkpoints are 1 to %d (hearth runs show %s --checkpoints)", from, at, last, from)
	}
	head = cp.Run.Clone()
	head.ID, head.Status, head.Reason = "", hearth.RunCreated, ""
	head.Created, head.Updated, head.LastActivity = now, now, now
	head.Started, head.Finished, head.Checkpoint = time.Time{}, time.Time{}, 0
	head.ForkedFrom, head.ForkedAt, head.Abandoned = from, at, false
	if budget > 0 {
		head.Budget = budget
	}
	for _, o := range outs {
		if !o.Time.After(cp.Time) {
			copies = append(copies, o)
		}
	}
	tasks = make(map[string]*record.Task, len(state))
	for name, t := range state {
		t = t.Clone()
		switch t.Status {
		case hearth.TaskRunning, hearth.TaskRetrying, hearth.TaskFailed, hearth.TaskSkipped:
			t.Status, t.Failures, t.Reason = hearth.TaskPending, 0, fmt.Sprintf("forked from %s at checkpoint %d", from, at)
		}
		tasks[name] = t
	}
	return head, tasks, copies, cp.Label, nil
}

// Forked records a run made by ForkRecords: every task record, its
// graph, the outputs it copied and the files it refers to, with state
// sections replaced, in its first checkpoint.
func (s surgery) Forked(now time.Time, from string, at uint64, label string, sections map[string]json.RawMessage, g *record.Graph, copies []*record.Output) (Effects, error) {
	s.at(now)
	for i := range s.tasks {
		s.dirty[i] = true
	}
	s.count()
	refs := s.refs()
	s.emit(hearth.Event{Kind: hearth.EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", s.id, s.pipe.Name, len(s.pipe.Tasks))})
	s.emit(hearth.Event{Kind: hearth.EventRunForked, Message: fmt.Sprintf("forked from run %s at checkpoint %d (%s)", from, at, label)})
	if err := s.setSections(sections, "set on fork"); err != nil {
		return s.nothing(), err
	}
	eff, _ := s.checkpoint(fmt.Sprintf("forked from %s at checkpoint %d", from, at), "", record.RunWrite{Graph: g, Outputs: copies, FileRefs: refs})
	return eff, nil
}

// Abandoned flags a paused run idle past its abandon_after, with
// message; the flag and the event go in one write, so whoever sees the
// event reads the flag.
func (s surgery) Abandoned(now time.Time, message string) Effects {
	s.at(now)
	s.head.Abandoned = true
	s.emit(hearth.Event{Kind: hearth.EventRunAbandoned, Message: message})
	return s.save(record.RunWrite{})
}

// setSections sets sections of the state document from outside the run's
// agents (a person resuming or forking it).
func (s surgery) setSections(sections map[string]json.RawMessage, why string) error {
	if len(sections) == 0 {
		return nil
	}
	names, err := s.doc.set(sections)
	if err != nil {
		return err
	}
	for _, k := range names {
		s.emit(hearth.Event{Kind: hearth.EventRunState, Message: fmt.Sprintf("section %s %s (%d bytes)", k, why, len(sections[k]))})
	}
	return s.stateChanged()
}

// SetSection replaces a section of the state document for agent, in
// task, with b (JSON; empty or null deletes it), if agent may write it.
func (s surgery) SetSection(now time.Time, agent, task, section string, b []byte) (Effects, error) {
	s.at(now)
	if err := s.doc.write(agent, section, b); err != nil {
		return s.nothing(), err
	}
	if err := s.stateChanged(); err != nil {
		return s.nothing(), err
	}
	s.touch()
	s.emit(hearth.Event{Kind: hearth.EventRunState, Agent: agent, Task: task, Message: fmt.Sprintf("%s wrote section %s (%d bytes)", agent, section, len(b))})
	return s.save(record.RunWrite{}), nil
}

// Requested writes a checkpoint a task asked for, and answers its number.
func (s surgery) Requested(now time.Time, task, label string) (Effects, uint64) {
	s.at(now)
	s.touch()
	return s.checkpoint(label, task, record.RunWrite{})
}

// MarkChunk records that chunk of file is done; a chunk marked already
// changes nothing (idempotent by file and chunk).
func (s surgery) MarkChunk(now time.Time, file string, chunk int) (Effects, error) {
	s.at(now)
	marked, err := s.mark(file, chunk)
	if err != nil || !marked {
		return s.nothing(), err
	}
	s.chunksChanged()
	s.touch()
	return s.save(record.RunWrite{}), nil
}

// PauseRecord is the head to write, as a status record, for a run whose
// write failed: the head as it is on disk (head), its counters recounted
// from the task records on disk (recs), its checkpoint the newest on disk
// (newest), paused with reason. It never carries a task record or a
// checkpoint, so the disk stays a state the run resumes from. false: the
// disk has the run stopped already (a failed run whose cancel could not
// be recorded), which stays its state.
func (s surgery) PauseRecord(now time.Time, head *record.Run, recs map[string]*record.Task, newest uint64, reason string) (*record.Run, bool) {
	if head.Status != hearth.RunPaused && !canRun(head.Status, hearth.RunPaused) {
		return head, false
	}
	// The head on disk is from the last write that landed; one that
	// failed before it may have held the checkpoint it counts.
	head.Checkpoint = min(head.Checkpoint, newest)
	countTasks(head, len(s.pipe.Tasks), func(i int) hearth.TaskStatus {
		if rec := recs[s.pipe.Tasks[i].Name]; rec != nil {
			return rec.Status
		}
		return hearth.TaskPending // not on disk yet
	})
	head.Status, head.Reason, head.Updated = hearth.RunPaused, reason, now
	return head, true
}

// WriteFailed answers a write of the run that failed: what was emitted
// since reports work that is not on disk, and is dropped with it; the run
// is paused in memory, for reason. It answers the events of the pause,
// to be said once the pause is on disk.
func (s surgery) WriteFailed(now time.Time, reason string) []hearth.Event {
	s.at(now)
	s.events = nil
	if s.head.Status == hearth.RunRunning {
		_ = s.setRun(hearth.RunPaused, reason) // legal: running -> paused
	}
	evs := s.events
	s.events = nil
	return evs
}
