package runs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/text"
)

// StartRun creates a run of pipeline p and starts it. It returns once the
// run is recorded (checkpoint 1, "created") and started; the run goes on
// in the host until it completes, fails, is paused or cancelled, or the
// host closes (which pauses it). Follow it with the handle, or with
// Subscribe (its events carry its ID in Run).
func (m *Runs) Start(ctx context.Context, p *hearth.Pipeline, opts hearth.RunOptions) (*Handle, error) {
	done, err := m.d.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	cp, err := m.pipelineOf(p)
	if err != nil {
		return nil, err
	}
	now := m.now()
	id, err := m.newRunIDFor(opts.ID, cp.Name, now)
	if err != nil {
		return nil, err
	}
	files, refs, err := m.attachFiles(append(slices.Clone(cp.Files), opts.Files...), now)
	if err != nil {
		return nil, fmt.Errorf("run of %s: %w", cp.Name, err)
	}
	state := make(map[string]json.RawMessage, len(cp.State.Initial)+len(opts.State))
	for k, v := range cp.State.Initial {
		state[k] = v
	}
	if err := checkSections(opts.State); err != nil {
		return nil, fmt.Errorf("run of %s: %w", cp.Name, err)
	}
	for k, v := range opts.State {
		state[k] = v
	}
	stateJSON, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("run of %s: state: %w", cp.Name, err)
	}
	budget := cp.Budget
	if opts.Budget > 0 {
		budget = opts.Budget
	}
	head := &record.Run{
		ID: id, Pipeline: cp.Name, Status: hearth.RunCreated,
		Created: now, Updated: now, LastActivity: now,
		Budget: budget, State: stateJSON, Files: files,
	}
	g := &record.Graph{Pipeline: cp, Config: paths.Abs(opts.Config)}
	r, err := m.newRunExec(head, g, nil, nil)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.emit(hearth.Event{Kind: hearth.EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", id, cp.Name, len(cp.Tasks))})
	pend, _ := r.checkpointLocked("created", "", record.RunWrite{Graph: g, FileRefs: refs})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		return nil, fmt.Errorf("record run %s: %w", id, err)
	}
	return m.launch(r, "started")
}

// newRunIDFor checks a caller's run ID, or makes one.
func (m *Runs) newRunIDFor(id, pipeline string, now time.Time) (string, error) {
	if id == "" {
		return hearth.NewRunID(pipeline, now), nil
	}
	if !hearth.ValidRunID(id) {
		return "", fmt.Errorf("run ID %q: use letters, digits, '-', '_' and '.' (hearth.NewRunID makes one)", id)
	}
	if _, err := m.d.Store.RunRecord(id); err == nil {
		return "", fmt.Errorf("run ID %q is taken", id)
	}
	return id, nil
}

// attachFiles copies files into the file store, once per content, and
// returns the run's file records and the SHA-256s it now refers to.
func (m *Runs) attachFiles(paths []string, now time.Time) ([]record.File, []string, error) {
	var files []record.File
	var refs []string
	for _, path := range paths {
		name := filepath.Base(path)
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("attach %s: %w", path, err)
		}
		sha, size, err := m.d.Store.PutFile(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("attach %s: %w", path, err)
		}
		if i := slices.IndexFunc(files, func(f record.File) bool { return f.Name == name }); i >= 0 {
			if files[i].SHA256 == sha && files[i].Size == size {
				continue // the same file twice: idempotent by sha256 and size
			}
			return nil, nil, fmt.Errorf("attach %s: the run already has a different file named %s; files are immutable once attached, rename one of them", path, name)
		}
		files = append(files, record.File{Name: name, SHA256: sha, Size: size, Added: now})
		if !slices.Contains(refs, sha) {
			refs = append(refs, sha)
		}
	}
	return files, refs, nil
}

// launch registers r as running in this host, records it as running and
// starts its loop.
func (m *Runs) launch(r *runExec, why string) (*Handle, error) {
	if err := m.claim(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if err := r.setRunLocked(hearth.RunRunning, why); err != nil {
		r.mu.Unlock()
		m.forget(r)
		return nil, err
	}
	r.touchLocked()
	pend := r.saveLocked(record.RunWrite{})
	r.mu.Unlock()
	if err := pend.Wait(context.Background()); err != nil {
		m.forget(r)
		return nil, fmt.Errorf("record run %s as running: %w", r.id, err)
	}
	m.wg.Add(1)
	go r.loop()
	return r.handle, nil
}

// claimRun registers r in this host, so that no other operation acts on
// the same run at the same time.
func (m *Runs) claim(r *runExec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return hearth.ErrClosed
	}
	if _, busy := m.runs[r.id]; busy {
		return fmt.Errorf("run %s: %w in this host", r.id, hearth.ErrRunActive)
	}
	m.runs[r.id] = r
	return nil
}

// forgetRun unregisters r.
func (m *Runs) forget(r *runExec) {
	m.mu.Lock()
	if m.runs[r.id] == r {
		delete(m.runs, r.id)
	}
	m.mu.Unlock()
}

// activeRun returns the run id this host executes, or nil.
func (m *Runs) active(id string) *runExec {
	if id == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[id]
}

// stopRuns pauses every run this host executes, for its shutdown: no
// task starts any more; tasks in flight may finish within the shutdown's
// grace period.
func (m *Runs) Stop() {
	m.mu.Lock()
	m.closed = true
	runs := make([]*runExec, 0, len(m.runs))
	for _, r := range m.runs {
		runs = append(runs, r)
	}
	m.mu.Unlock()
	for _, r := range runs {
		r.requestStop(stopShutdown, hearth.RunPaused, "the host shut down; resume the run to go on", false)
	}
}

// loadRun reads a run's records and builds its executor, claimed in this
// host. Release it with forgetRun, or launch it.
func (m *Runs) load(id string) (*runExec, error) {
	head, err := m.d.Store.RunRecord(id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
		}
		return nil, err
	}
	g, err := m.d.Store.RunGraph(id)
	if err != nil {
		return nil, err
	}
	recs, err := m.d.Store.RunTasks(id)
	if err != nil {
		return nil, err
	}
	outs, err := m.d.Store.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	r, err := m.newRunExec(head, g, recs, outs)
	if err != nil {
		return nil, err
	}
	if err := m.claim(r); err != nil {
		return nil, err
	}
	return r, nil
}

// ResumeRun continues a paused, failed or interrupted run from where its
// records stand: the newest checkpoint, plus the state writes and chunk
// marks made since. Tasks that succeeded are not run again; tasks that
// were running, failed or were skipped become pending, and each gets its
// attempts again. The run's records are validated first (see
// InvalidRunError).
func (m *Runs) Resume(ctx context.Context, id string, opts hearth.ResumeOptions) (*Handle, error) {
	done, err := m.d.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	id, err = m.d.Store.ResolveRunID(id)
	if err != nil {
		return nil, err
	}
	r, err := m.load(id)
	if err != nil {
		return nil, err
	}
	handle, err := m.resume(r, opts, "resumed")
	if err != nil {
		m.forget(r)
	}
	return handle, err
}

// resume validates r, resets what must run again and launches it.
func (m *Runs) resume(r *runExec, opts hearth.ResumeOptions, why string) (*Handle, error) {
	if err := m.checkAgents(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	from := r.head.Status
	if from == hearth.RunRunning {
		// Not running here (claim succeeded): the store's last word on it
		// is from a host that stopped recording it, after a crash or a
		// write the store refused (a full disk). It is as good as paused;
		// the transition to running is recorded next.
		from, r.head.Status = hearth.RunPaused, hearth.RunPaused
	}
	if from == hearth.RunCompleted && why == "resumed" {
		r.mu.Unlock()
		return nil, fmt.Errorf("run %s completed; revisit a task to run it again (hearth runs revisit), or fork it", r.id)
	}
	if !canRun(from, hearth.RunRunning) {
		r.mu.Unlock()
		return nil, &hearth.TransitionError{Run: r.id, From: string(from), To: string(hearth.RunRunning)}
	}
	problems := r.validateLocked()
	if len(problems) > 0 {
		if !opts.Repair || slices.ContainsFunc(problems, func(p hearth.Problem) bool { return p.Repair == "" }) {
			r.mu.Unlock()
			return nil, &hearth.InvalidRunError{Run: r.id, Problems: problems}
		}
		pend := r.repairLocked(problems)
		r.mu.Unlock()
		if err := pend.Wait(context.Background()); err != nil {
			return nil, fmt.Errorf("repair run %s: %w", r.id, err)
		}
		r.mu.Lock()
	}
	for i, rt := range r.tasks {
		switch rt.Status {
		case hearth.TaskRunning:
			rt.Reason = "interrupted: its host stopped while it ran"
			r.setTaskLocked(i, hearth.TaskPending, rt.Reason)
		case hearth.TaskFailed, hearth.TaskSkipped:
			rt.Failures, rt.Reason = 0, "the run was resumed"
			r.setTaskLocked(i, hearth.TaskPending, rt.Reason)
		}
	}
	if opts.Budget > 0 {
		r.head.Budget = opts.Budget
	}
	if err := r.setSectionsLocked(opts.State, "set on "+why); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	// A gate that gave up gets its loops again: resuming is a person's
	// decision to try once more.
	r.head.GateLoops = nil
	r.head.Abandoned = false
	r.mu.Unlock()
	return m.launchClaimed(r, why)
}

// checkAgents checks that this host runs every agent of r.
func (m *Runs) checkAgents(r *runExec) error {
	var missing []string
	for _, t := range r.pipe.Tasks {
		if err := m.d.Runnable(t.Agent); errors.Is(err, hearth.ErrUnknownAgent) && !slices.Contains(missing, t.Agent) {
			missing = append(missing, t.Agent)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run %s needs agents %s, which this host's config does not declare; use the config the run was started with (%s)",
			r.id, strings.Join(missing, ", "), cmp.Or(r.config, "not recorded"))
	}
	return nil
}

// checkSections checks state sections given from outside the run.
func checkSections(sections map[string]json.RawMessage) error {
	for _, k := range slices.Sorted(maps.Keys(sections)) {
		if strings.TrimSpace(k) == "" {
			return errors.New("a state section needs a name")
		}
		if !json.Valid(sections[k]) {
			return fmt.Errorf("state section %q is not valid JSON", k)
		}
	}
	return nil
}

// setSectionsLocked sets sections of the state document from outside the
// run's agents (a person resuming or forking it).
func (r *runExec) setSectionsLocked(sections map[string]json.RawMessage, why string) error {
	if len(sections) == 0 {
		return nil
	}
	if err := checkSections(sections); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(sections)) {
		v := sections[k]
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(r.state, k)
		} else {
			r.state[k] = slices.Clone(v)
		}
		r.emit(hearth.Event{Kind: hearth.EventRunState, Message: fmt.Sprintf("section %s %s (%d bytes)", k, why, len(v))})
	}
	return r.stateJSONLocked()
}

// launchClaimed is launch for a run loadRun has claimed already.
func (m *Runs) launchClaimed(r *runExec, why string) (*Handle, error) {
	m.forget(r)
	return m.launch(r, why)
}

// validateLocked checks the run's records before it resumes: outputs and
// files that should exist, statuses that agree with each other.
func (r *runExec) validateLocked() []hearth.Problem {
	var out []hearth.Problem
	for i, rt := range r.tasks {
		name := rt.Name
		if rt.Status != hearth.TaskSucceeded {
			continue
		}
		switch {
		case rt.Version == 0:
			out = append(out, hearth.Problem{Task: name, Message: "marked succeeded but has no output", Repair: "run it again"})
		case r.current[i] == nil:
			out = append(out, hearth.Problem{Task: name, Message: fmt.Sprintf("its output v%d no longer exists", rt.Version), Repair: "run it again"})
		case rt.NeedsReview:
			// A minor revisit upstream left it standing, flagged.
		default:
			for _, d := range r.deps[i] {
				if r.tasks[d].Status != hearth.TaskSucceeded {
					out = append(out, hearth.Problem{Task: name, Message: fmt.Sprintf("marked succeeded while %s, which it depends on, is %s",
						r.tasks[d].Name, r.tasks[d].Status), Repair: "run it again after " + r.tasks[d].Name})
					break
				}
			}
		}
	}
	for _, f := range r.head.Files {
		fi, err := os.Stat(r.m.d.Store.BlobPath(f.SHA256))
		switch {
		case err != nil:
			out = append(out, hearth.Problem{Message: fmt.Sprintf("file %s (sha256 %s) is missing from the file store", f.Name, f.SHA256[:12])})
		case fi.Size() != f.Size:
			out = append(out, hearth.Problem{Message: fmt.Sprintf("file %s holds %d bytes, not the %d it was attached with", f.Name, fi.Size(), f.Size)})
		}
	}
	if n := r.head.Checkpoint; n > 0 {
		if _, err := r.m.d.Store.Checkpoint(r.id, n); err != nil {
			out = append(out, hearth.Problem{Message: fmt.Sprintf("its newest checkpoint, %d, no longer exists", n), Repair: "write a new checkpoint"})
		}
	}
	return out
}

// repairLocked does what each problem's Repair says.
func (r *runExec) repairLocked(problems []hearth.Problem) *store.Pending {
	var fixed []string
	for _, p := range problems {
		if i, ok := r.index[p.Task]; ok && p.Task != "" {
			r.resetLocked(i, "repaired on resume: "+p.Message)
			fixed = append(fixed, p.Task)
		}
	}
	r.emit(hearth.Event{Kind: hearth.EventRunRepaired, Message: fmt.Sprintf("run %s repaired on resume: %d problem(s); to run again: %s", r.id, len(problems), strings.Join(fixed, ", "))})
	pend, _ := r.checkpointLocked("repaired on resume", "", record.RunWrite{})
	return pend
}

// ForkRun starts a new run from checkpoint at of run id: the state,
// tasks, outputs and files as they were then, with opts.State's sections
// replacing the state's. The original run is not touched. Tasks that
// were running at the checkpoint run again in the fork.
func (m *Runs) Fork(ctx context.Context, id string, at uint64, opts hearth.ForkOptions) (*Handle, error) {
	done, err := m.d.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := checkSections(opts.State); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	id, err = m.d.Store.ResolveRunID(id)
	if err != nil {
		return nil, err
	}
	g, err := m.d.Store.RunGraph(id)
	if err != nil {
		return nil, err
	}
	cps, err := m.d.Store.Checkpoints(id)
	if err != nil {
		return nil, err
	}
	var cp *record.Checkpoint
	tasks := make(map[string]*record.Task)
	for _, c := range cps {
		if c.Seq > at {
			break
		}
		for _, t := range c.Tasks {
			tasks[t.Name] = t
		}
		cp = c
	}
	if cp == nil || cp.Seq != at {
		last := uint64(0)
		if len(cps) > 0 {
			last = cps[len(cps)-1].Seq
		}
		return nil, fmt.Errorf("run %s has no checkpoint %d; its checkpoints are 1 to %d (hearth runs show %s --checkpoints)", id, at, last, id)
	}
	outs, err := m.d.Store.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	now := m.now()
	head := cp.Run.Clone()
	newID, err := m.newRunIDFor(opts.ID, g.Pipeline.Name, now)
	if err != nil {
		return nil, err
	}
	head.ID, head.Status, head.Reason = newID, hearth.RunCreated, ""
	head.Created, head.Updated, head.LastActivity = now, now, now
	head.Started, head.Finished, head.Checkpoint = time.Time{}, time.Time{}, 0
	head.ForkedFrom, head.ForkedAt, head.Abandoned = id, at, false
	if opts.Budget > 0 {
		head.Budget = opts.Budget
	}
	var copies []*record.Output
	for _, o := range outs {
		if !o.Time.After(cp.Time) {
			copies = append(copies, o)
		}
	}
	forkTasks := make(map[string]*record.Task, len(tasks))
	for name, t := range tasks {
		forkTasks[name] = t.Clone()
	}
	r, err := m.newRunExec(head, g, forkTasks, copies)
	if err != nil {
		return nil, err
	}
	if err := m.claim(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	for i, rt := range r.tasks {
		r.dirty[i] = true
		switch rt.Status {
		case hearth.TaskRunning, hearth.TaskRetrying, hearth.TaskFailed, hearth.TaskSkipped:
			rt.Status, rt.Failures, rt.Reason = hearth.TaskPending, 0, fmt.Sprintf("forked from %s at checkpoint %d", id, at)
		}
	}
	r.countLocked()
	var refs []string
	for _, f := range head.Files {
		refs = append(refs, f.SHA256)
	}
	r.emit(hearth.Event{Kind: hearth.EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", newID, g.Pipeline.Name, len(g.Pipeline.Tasks))})
	r.emit(hearth.Event{Kind: hearth.EventRunForked, Message: fmt.Sprintf("forked from run %s at checkpoint %d (%s)", id, at, cp.Label)})
	if err := r.setSectionsLocked(opts.State, "set on fork"); err != nil {
		r.mu.Unlock()
		m.forget(r)
		return nil, err
	}
	pend, _ := r.checkpointLocked(fmt.Sprintf("forked from %s at checkpoint %d", id, at), "",
		record.RunWrite{Graph: g, Outputs: copies, FileRefs: refs})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		m.forget(r)
		return nil, fmt.Errorf("record run %s: %w", newID, err)
	}
	return m.launchClaimed(r, fmt.Sprintf("forked from %s at checkpoint %d", id, at))
}

// PauseRun pauses a run. Running in this host, its tasks in flight are
// interrupted (they run again, with their next attempt number, when it
// resumes) and PauseRun waits until it has stopped or ctx ends. A run
// recorded as running that no host runs (its host was killed) is marked
// paused.
func (m *Runs) Pause(ctx context.Context, id string) error {
	return m.stopRun(ctx, id, stopPause, hearth.RunPaused, "paused on request")
}

// CancelRun cancels a run for good: its tasks in flight are interrupted,
// the tasks that had not finished are skipped, and it cannot be resumed
// (it can still be forked).
func (m *Runs) Cancel(ctx context.Context, id string) error {
	return m.stopRun(ctx, id, stopCancel, hearth.RunCancelled, "cancelled on request")
}

func (m *Runs) stopRun(ctx context.Context, id string, kind stopKind, to hearth.RunStatus, reason string) error {
	id, err := m.d.Store.ResolveRunID(id)
	if err != nil {
		return err
	}
	if r := m.active(id); r != nil && r.loopRunning() {
		r.requestStop(kind, to, reason, true)
		select {
		case <-r.handle.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r, err := m.load(id)
	if err != nil {
		return err
	}
	defer m.forget(r)
	r.mu.Lock()
	from := r.head.Status
	if !canRun(from, to) {
		r.mu.Unlock()
		return &hearth.TransitionError{Run: id, From: string(from), To: string(to)}
	}
	r.stop = &stopRequest{kind: kind, to: to, reason: reason}
	for i, rt := range r.tasks {
		if rt.Status == hearth.TaskRunning {
			rt.Reason = "interrupted: its host stopped while it ran"
			r.setTaskLocked(i, hearth.TaskPending, rt.Reason)
		}
	}
	r.mu.Unlock()
	r.finish()
	_, err = r.handle.Wait(ctx)
	var re *hearth.RunError
	if errors.As(err, &re) && re.Status == to {
		return nil
	}
	return err
}

// loopRunning reports whether the run's loop executes it in this host,
// as opposed to an operation holding its records.
func (r *runExec) loopRunning() bool {
	select {
	case <-r.handle.done:
		return false
	default:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.head.Status == hearth.RunRunning
}

// RevisitRun runs task of a stopped run (paused, failed or completed)
// again and treats what came after it by impact: minor flags the tasks
// downstream "needs review"; moderate archives the outputs of the
// affected tasks (opts.Affects, by default the task's direct dependents)
// and runs them again, flagging the rest; major archives everything
// downstream and runs it all again. Archived outputs keep their versions.
// The revision is recorded in the run's history, and the run resumes.
func (m *Runs) Revisit(ctx context.Context, id, task string, impact hearth.Impact, opts hearth.RevisitOptions) (*Handle, error) {
	done, err := m.d.Enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if _, err := hearth.ParseImpact(string(impact)); err != nil {
		return nil, err
	}
	id, err = m.d.Store.ResolveRunID(id)
	if err != nil {
		return nil, err
	}
	r, err := m.load(id)
	if err != nil {
		return nil, err
	}
	// What would stop the resume is checked before the revision is
	// written: a revision left behind by a failed resume would be done
	// twice by the next attempt.
	err = m.checkAgents(r)
	if err == nil {
		r.mu.Lock()
		if problems := r.validateLocked(); len(problems) > 0 {
			err = &hearth.InvalidRunError{Run: r.id, Problems: problems}
		}
		r.mu.Unlock()
	}
	var pend *store.Pending
	if err == nil {
		pend, err = r.revise(task, impact, opts)
	}
	if err == nil {
		err = pend.Wait(ctx)
	}
	if err != nil {
		m.forget(r)
		return nil, err
	}
	handle, err := m.resume(r, hearth.ResumeOptions{}, fmt.Sprintf("revisit of %s (%s impact)", task, impact))
	if err != nil {
		m.forget(r)
	}
	return handle, err
}

func (r *runExec) revise(task string, impact hearth.Impact, opts hearth.RevisitOptions) (*store.Pending, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.head.Status; s == hearth.RunRunning || s == hearth.RunCancelled {
		if s == hearth.RunRunning {
			return nil, fmt.Errorf("run %s is running; pause it first (Ctrl-C in the hearth process that runs it), then revisit", r.id)
		}
		return nil, &hearth.TransitionError{Run: r.id, From: string(s), To: string(hearth.RunRunning)}
	}
	i, ok := r.index[task]
	if !ok {
		return nil, fmt.Errorf("run %s has no task %q; its tasks: %s", r.id, task, strings.Join(r.taskNames(), ", "))
	}
	down := r.descendants(i)
	affected := r.kids[i]
	if len(opts.Affects) > 0 {
		if impact != hearth.ImpactModerate {
			return nil, fmt.Errorf("affects names the tasks a moderate revisit runs again; a %s revisit takes none", impact)
		}
		affected = nil
		for _, name := range opts.Affects {
			j, ok := r.index[name]
			if !ok || !slices.Contains(down, j) {
				return nil, fmt.Errorf("revisit of %s: %q is not downstream of it; downstream: %s", task, name, strings.Join(r.names(down), ", "))
			}
			affected = append(affected, j)
		}
	}
	rev := &hearth.Revision{Task: task, Impact: impact, Reason: opts.Reason, Time: r.now()}
	archive := func(j int, why string) {
		if v := r.tasks[j].Version; v > 0 {
			rev.Archived = append(rev.Archived, fmt.Sprintf("%s v%d", r.tasks[j].Name, v))
		}
		r.resetLocked(j, why)
		rev.Reset = append(rev.Reset, r.tasks[j].Name)
	}
	why := fmt.Sprintf("revisit of %s (%s impact)", task, impact)
	archive(i, why+prefixed(": ", opts.Reason))
	r.tasks[i].Feedback = "This task is revisited" + prefixed(": ", opts.Reason)
	for _, j := range down {
		switch {
		case impact == hearth.ImpactMajor, impact == hearth.ImpactModerate && slices.Contains(affected, j):
			archive(j, why)
		case r.tasks[j].Status == hearth.TaskSucceeded:
			r.tasks[j].NeedsReview = true
			r.dirty[j] = true
			rev.Review = append(rev.Review, r.tasks[j].Name)
		}
	}
	r.head.Revisions = append(r.head.Revisions, *rev)
	r.emit(hearth.Event{Kind: hearth.EventRunRevisit, Task: task, Message: fmt.Sprintf("%s; archived: %s; needs review: %s", why,
		text.OrNone(rev.Archived), text.OrNone(rev.Review))})
	pend, _ := r.checkpointLocked(why, task, record.RunWrite{})
	return pend, nil
}

func (r *runExec) taskNames() []string { return r.names(nil) }

// names returns the names of tasks idx, or of all tasks when idx is nil.
func (r *runExec) names(idx []int) []string {
	if idx == nil {
		out := make([]string, len(r.tasks))
		for i, t := range r.tasks {
			out[i] = t.Name
		}
		return out
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = r.tasks[i].Name
	}
	return out
}

// RunHandle returns the handle of a run this host is executing, to wait
// for it; nil when the run is not running here.
func (m *Runs) Handle(id string) *Handle {
	if r := m.active(id); r != nil && r.loopRunning() {
		return r.handle
	}
	return nil
}
