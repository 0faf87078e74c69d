package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
)

// StartRun creates a run of pipeline p and starts it. It returns once the
// run is recorded (checkpoint 1, "created") and started; the run goes on
// in the host until it completes, fails, is paused or cancelled, or the
// host closes (which pauses it). Follow it with the handle, or with
// Subscribe (its events carry its ID in Run).
func (h *Host) StartRun(ctx context.Context, p *config.Pipeline, opts RunOptions) (*RunHandle, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	cp, err := h.pipelineOf(p)
	if err != nil {
		return nil, err
	}
	now := h.now()
	id, err := h.newRunIDFor(opts.ID, cp.Name, now)
	if err != nil {
		return nil, err
	}
	files, refs, err := h.attachFiles(append(slices.Clone(cp.Files), opts.Files...), now)
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
	head := &storepb.Run{
		Id: id, Pipeline: cp.Name, Status: storepb.RunStatus_RUN_CREATED,
		CreatedUnixNano: now.UnixNano(), UpdatedUnixNano: now.UnixNano(), LastActivityUnixNano: now.UnixNano(),
		Budget: budget, StateJson: stateJSON, Files: files,
	}
	g := graphOfPipeline(cp, opts.Config)
	r, err := h.newRunExec(head, g, nil, nil)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.emit(Event{Kind: EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", id, cp.Name, len(cp.Tasks))})
	pend, _ := r.checkpointLocked("created", "", store.RunWrite{Graph: g, FileRefs: refs})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		return nil, fmt.Errorf("record run %s: %w", id, err)
	}
	return h.launch(r, "started")
}

// newRunIDFor checks a caller's run ID, or makes one.
func (h *Host) newRunIDFor(id, pipeline string, now time.Time) (string, error) {
	if id == "" {
		return NewRunID(pipeline, now), nil
	}
	if !validRunID(id) {
		return "", fmt.Errorf("run ID %q: use letters, digits, '-', '_' and '.' (NewRunID makes one)", id)
	}
	if _, err := h.store.Run(id); err == nil {
		return "", fmt.Errorf("run ID %q is taken", id)
	}
	return id, nil
}

func validRunID(s string) bool { return validID(s, 128, "") }

// validID reports whether s is 1 to max letters, digits, '-', '_', '.'
// and the runes of extra: IDs that are part of store keys and of command
// lines hearth prints.
func validID(s string, max int, extra string) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || strings.ContainsRune(extra, c)) {
			return false
		}
	}
	return true
}

// NewRunID names a run after its pipeline and the time it was made, with
// a random suffix: readable in a list, unique in practice.
func NewRunID(pipeline string, now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			return c
		}
		return '-'
	}, pipeline)
	return fmt.Sprintf("%s-%s-%s", name, now.UTC().Format("20060102-150405"), hex.EncodeToString(b[:]))
}

// attachFiles copies files into the file store, once per content, and
// returns the run's file records and the SHA-256s it now refers to.
func (h *Host) attachFiles(paths []string, now time.Time) ([]*storepb.RunFile, []string, error) {
	var files []*storepb.RunFile
	var refs []string
	for _, path := range paths {
		name := filepath.Base(path)
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("attach %s: %w", path, err)
		}
		sha, size, err := h.store.PutFile(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("attach %s: %w", path, err)
		}
		if i := slices.IndexFunc(files, func(f *storepb.RunFile) bool { return f.GetName() == name }); i >= 0 {
			if files[i].GetSha256() == sha && files[i].GetSize() == size {
				continue // the same file twice: idempotent by sha256 and size
			}
			return nil, nil, fmt.Errorf("attach %s: the run already has a different file named %s; files are immutable once attached, rename one of them", path, name)
		}
		files = append(files, &storepb.RunFile{Name: name, Sha256: sha, Size: size, AddedUnixNano: now.UnixNano()})
		if !slices.Contains(refs, sha) {
			refs = append(refs, sha)
		}
	}
	return files, refs, nil
}

// launch registers r as running in this host, records it as running and
// starts its loop.
func (h *Host) launch(r *runExec, why string) (*RunHandle, error) {
	if err := h.claimRun(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if err := r.setRunLocked(RunRunning, why); err != nil {
		r.mu.Unlock()
		h.forgetRun(r)
		return nil, err
	}
	r.touchLocked()
	pend := r.saveLocked(store.RunWrite{})
	r.mu.Unlock()
	if err := pend.Wait(context.Background()); err != nil {
		h.forgetRun(r)
		return nil, fmt.Errorf("record run %s as running: %w", r.id, err)
	}
	h.runsWG.Add(1)
	go r.loop()
	return r.handle, nil
}

// claimRun registers r in this host, so that no other operation acts on
// the same run at the same time.
func (h *Host) claimRun(r *runExec) error {
	h.runsMu.Lock()
	defer h.runsMu.Unlock()
	if h.runsClosed {
		return ErrClosed
	}
	if _, busy := h.runs[r.id]; busy {
		return fmt.Errorf("run %s: %w in this host", r.id, ErrRunActive)
	}
	h.runs[r.id] = r
	return nil
}

// forgetRun unregisters r.
func (h *Host) forgetRun(r *runExec) {
	h.runsMu.Lock()
	if h.runs[r.id] == r {
		delete(h.runs, r.id)
	}
	h.runsMu.Unlock()
}

// activeRun returns the run id this host executes, or nil.
func (h *Host) activeRun(id string) *runExec {
	if id == "" {
		return nil
	}
	h.runsMu.Lock()
	defer h.runsMu.Unlock()
	return h.runs[id]
}

// stopRuns pauses every run this host executes, for its shutdown: no
// task starts any more; tasks in flight may finish within the shutdown's
// grace period.
func (h *Host) stopRuns() {
	h.runsMu.Lock()
	h.runsClosed = true
	runs := make([]*runExec, 0, len(h.runs))
	for _, r := range h.runs {
		runs = append(runs, r)
	}
	h.runsMu.Unlock()
	for _, r := range runs {
		r.requestStop(stopShutdown, RunPaused, "the host shut down; resume the run to go on", false)
	}
}

// loadRun reads a run's records and builds its executor, claimed in this
// host. Release it with forgetRun, or launch it.
func (h *Host) loadRun(id string) (*runExec, error) {
	head, err := h.store.Run(id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w %q", ErrUnknownRun, id)
		}
		return nil, err
	}
	g, err := h.store.RunGraph(id)
	if err != nil {
		return nil, err
	}
	recs, err := h.store.RunTasks(id)
	if err != nil {
		return nil, err
	}
	outs, err := h.store.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	r, err := h.newRunExec(head, g, recs, outs)
	if err != nil {
		return nil, err
	}
	if err := h.claimRun(r); err != nil {
		return nil, err
	}
	return r, nil
}

// ResolveRun finds the run an ID or a unique prefix of one names.
func (h *Host) ResolveRun(id string) (string, error) { return ResolveRunID(h.store, id) }

// ResumeRun continues a paused, failed or interrupted run from where its
// records stand: the newest checkpoint, plus the state writes and chunk
// marks made since. Tasks that succeeded are not run again; tasks that
// were running, failed or were skipped become pending, and each gets its
// attempts again. The run's records are validated first (see
// InvalidRunError).
func (h *Host) ResumeRun(ctx context.Context, id string, opts ResumeOptions) (*RunHandle, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	id, err := h.ResolveRun(id)
	if err != nil {
		return nil, err
	}
	r, err := h.loadRun(id)
	if err != nil {
		return nil, err
	}
	handle, err := h.resume(r, opts, "resumed")
	if err != nil {
		h.forgetRun(r)
	}
	return handle, err
}

// resume validates r, resets what must run again and launches it.
func (h *Host) resume(r *runExec, opts ResumeOptions, why string) (*RunHandle, error) {
	if err := h.checkAgents(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	from := runStatusOf(r.head.GetStatus())
	if from == RunCompleted && why == "resumed" {
		r.mu.Unlock()
		return nil, fmt.Errorf("run %s completed; revisit a task to run it again (hearth runs revisit), or fork it", r.id)
	}
	if !canRun(from, RunRunning) {
		r.mu.Unlock()
		return nil, &TransitionError{Run: r.id, From: string(from), To: string(RunRunning)}
	}
	problems := r.validateLocked()
	if len(problems) > 0 {
		if !opts.Repair || slices.ContainsFunc(problems, func(p Problem) bool { return p.Repair == "" }) {
			r.mu.Unlock()
			return nil, &InvalidRunError{Run: r.id, Problems: problems}
		}
		pend := r.repairLocked(problems)
		r.mu.Unlock()
		if err := pend.Wait(context.Background()); err != nil {
			return nil, fmt.Errorf("repair run %s: %w", r.id, err)
		}
		r.mu.Lock()
	}
	for i, rt := range r.tasks {
		switch taskStatusOf(rt.GetStatus()) {
		case TaskRunning:
			rt.Reason = "interrupted: its host stopped while it ran"
			r.setTaskLocked(i, TaskPending, rt.Reason)
		case TaskFailed, TaskSkipped:
			rt.Failures, rt.Reason = 0, "the run was resumed"
			r.setTaskLocked(i, TaskPending, rt.Reason)
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
	return h.launchClaimed(r, why)
}

// checkAgents checks that this host runs every agent of r.
func (h *Host) checkAgents(r *runExec) error {
	var missing []string
	for _, t := range r.graph.GetTasks() {
		if _, err := h.pool(t.GetAgent()); err != nil && !slices.Contains(missing, t.GetAgent()) {
			missing = append(missing, t.GetAgent())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run %s needs agents %s, which this host's config does not declare; use the config the run was started with (%s)",
			r.id, strings.Join(missing, ", "), cmpOr(r.graph.GetConfig(), "not recorded"))
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
		r.emit(Event{Kind: EventRunState, Message: fmt.Sprintf("section %s %s (%d bytes)", k, why, len(v))})
	}
	return r.stateJSONLocked()
}

// launchClaimed is launch for a run loadRun has claimed already.
func (h *Host) launchClaimed(r *runExec, why string) (*RunHandle, error) {
	h.forgetRun(r)
	return h.launch(r, why)
}

// validateLocked checks the run's records before it resumes: outputs and
// files that should exist, statuses that agree with each other.
func (r *runExec) validateLocked() []Problem {
	var out []Problem
	for i, rt := range r.tasks {
		name := rt.GetName()
		if rt.GetStatus() != storepb.TaskStatus_TASK_SUCCEEDED {
			continue
		}
		switch {
		case rt.GetVersion() == 0:
			out = append(out, Problem{Task: name, Message: "marked succeeded but has no output", Repair: "run it again"})
		case r.current[i] == nil:
			out = append(out, Problem{Task: name, Message: fmt.Sprintf("its output v%d no longer exists", rt.GetVersion()), Repair: "run it again"})
		case rt.GetNeedsReview():
			// A minor revisit upstream left it standing, flagged.
		default:
			for _, d := range r.deps[i] {
				if r.tasks[d].GetStatus() != storepb.TaskStatus_TASK_SUCCEEDED {
					out = append(out, Problem{Task: name, Message: fmt.Sprintf("marked succeeded while %s, which it depends on, is %s",
						r.tasks[d].GetName(), taskStatusOf(r.tasks[d].GetStatus())), Repair: "run it again after " + r.tasks[d].GetName()})
					break
				}
			}
		}
	}
	for _, f := range r.head.GetFiles() {
		fi, err := os.Stat(r.h.store.BlobPath(f.GetSha256()))
		switch {
		case err != nil:
			out = append(out, Problem{Message: fmt.Sprintf("file %s (sha256 %s) is missing from the file store", f.GetName(), f.GetSha256()[:12])})
		case fi.Size() != f.GetSize():
			out = append(out, Problem{Message: fmt.Sprintf("file %s holds %d bytes, not the %d it was attached with", f.GetName(), fi.Size(), f.GetSize())})
		}
	}
	if n := r.head.GetCheckpoint(); n > 0 {
		if _, err := r.h.store.Checkpoint(r.id, n); err != nil {
			out = append(out, Problem{Message: fmt.Sprintf("its newest checkpoint, %d, no longer exists", n), Repair: "write a new checkpoint"})
		}
	}
	return out
}

// repairLocked does what each problem's Repair says.
func (r *runExec) repairLocked(problems []Problem) *store.Pending {
	var fixed []string
	for _, p := range problems {
		if i, ok := r.index[p.Task]; ok && p.Task != "" {
			r.resetLocked(i, "repaired on resume: "+p.Message)
			fixed = append(fixed, p.Task)
		}
	}
	r.emit(Event{Kind: EventRunRepaired, Message: fmt.Sprintf("run %s repaired on resume: %d problem(s); to run again: %s", r.id, len(problems), strings.Join(fixed, ", "))})
	pend, _ := r.checkpointLocked("repaired on resume", "", store.RunWrite{})
	return pend
}

// ForkRun starts a new run from checkpoint at of run id: the state,
// tasks, outputs and files as they were then, with opts.State's sections
// replacing the state's. The original run is not touched. Tasks that
// were running at the checkpoint run again in the fork.
func (h *Host) ForkRun(ctx context.Context, id string, at uint64, opts ForkOptions) (*RunHandle, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	if err := checkSections(opts.State); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	id, err := h.ResolveRun(id)
	if err != nil {
		return nil, err
	}
	g, err := h.store.RunGraph(id)
	if err != nil {
		return nil, err
	}
	cps, err := h.store.Checkpoints(id)
	if err != nil {
		return nil, err
	}
	var cp *storepb.Checkpoint
	tasks := make(map[string]*storepb.RunTask)
	for _, c := range cps {
		if c.GetSeq() > at {
			break
		}
		for _, t := range c.GetTasks() {
			tasks[t.GetName()] = t
		}
		cp = c
	}
	if cp == nil || cp.GetSeq() != at {
		last := uint64(0)
		if len(cps) > 0 {
			last = cps[len(cps)-1].GetSeq()
		}
		return nil, fmt.Errorf("run %s has no checkpoint %d; its checkpoints are 1 to %d (hearth runs show %s --checkpoints)", id, at, last, id)
	}
	outs, err := h.store.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	now := h.now()
	head := proto.Clone(cp.GetRun()).(*storepb.Run)
	newID, err := h.newRunIDFor(opts.ID, g.GetPipeline(), now)
	if err != nil {
		return nil, err
	}
	head.Id, head.Status, head.Reason = newID, storepb.RunStatus_RUN_CREATED, ""
	head.CreatedUnixNano, head.UpdatedUnixNano, head.LastActivityUnixNano = now.UnixNano(), now.UnixNano(), now.UnixNano()
	head.StartedUnixNano, head.FinishedUnixNano, head.Checkpoint = 0, 0, 0
	head.ForkedFrom, head.ForkedAt, head.Abandoned = id, at, false
	if opts.Budget > 0 {
		head.Budget = opts.Budget
	}
	var copies []*storepb.TaskOutput
	for _, o := range outs {
		if o.GetUnixNano() <= cp.GetUnixNano() {
			copies = append(copies, o)
		}
	}
	forkTasks := make(map[string]*storepb.RunTask, len(tasks))
	for name, t := range tasks {
		forkTasks[name] = proto.Clone(t).(*storepb.RunTask)
	}
	r, err := h.newRunExec(head, g, forkTasks, copies)
	if err != nil {
		return nil, err
	}
	if err := h.claimRun(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	for i, rt := range r.tasks {
		r.dirty[i] = true
		switch taskStatusOf(rt.GetStatus()) {
		case TaskRunning, TaskRetrying, TaskFailed, TaskSkipped:
			rt.Status, rt.Failures, rt.Reason = storepb.TaskStatus_TASK_PENDING, 0, fmt.Sprintf("forked from %s at checkpoint %d", id, at)
		}
	}
	r.countLocked()
	var refs []string
	for _, f := range head.GetFiles() {
		refs = append(refs, f.GetSha256())
	}
	r.emit(Event{Kind: EventRunCreated, Message: fmt.Sprintf("run %s of pipeline %s: %d tasks", newID, g.GetPipeline(), len(g.GetTasks()))})
	r.emit(Event{Kind: EventRunForked, Message: fmt.Sprintf("forked from run %s at checkpoint %d (%s)", id, at, cp.GetLabel())})
	if err := r.setSectionsLocked(opts.State, "set on fork"); err != nil {
		r.mu.Unlock()
		h.forgetRun(r)
		return nil, err
	}
	pend, _ := r.checkpointLocked(fmt.Sprintf("forked from %s at checkpoint %d", id, at), "",
		store.RunWrite{Graph: g, Outputs: copies, FileRefs: refs})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		h.forgetRun(r)
		return nil, fmt.Errorf("record run %s: %w", newID, err)
	}
	return h.launchClaimed(r, fmt.Sprintf("forked from %s at checkpoint %d", id, at))
}

// PauseRun pauses a run. Running in this host, its tasks in flight are
// interrupted (they run again, with their next attempt number, when it
// resumes) and PauseRun waits until it has stopped or ctx ends. A run
// recorded as running that no host runs (its host was killed) is marked
// paused.
func (h *Host) PauseRun(ctx context.Context, id string) error {
	return h.stopRun(ctx, id, stopPause, RunPaused, "paused on request")
}

// CancelRun cancels a run for good: its tasks in flight are interrupted,
// the tasks that had not finished are skipped, and it cannot be resumed
// (it can still be forked).
func (h *Host) CancelRun(ctx context.Context, id string) error {
	return h.stopRun(ctx, id, stopCancel, RunCancelled, "cancelled on request")
}

func (h *Host) stopRun(ctx context.Context, id string, kind stopKind, to RunStatus, reason string) error {
	id, err := h.ResolveRun(id)
	if err != nil {
		return err
	}
	if r := h.activeRun(id); r != nil && r.loopRunning() {
		r.requestStop(kind, to, reason, true)
		select {
		case <-r.handle.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r, err := h.loadRun(id)
	if err != nil {
		return err
	}
	defer h.forgetRun(r)
	r.mu.Lock()
	from := runStatusOf(r.head.GetStatus())
	if !canRun(from, to) {
		r.mu.Unlock()
		return &TransitionError{Run: id, From: string(from), To: string(to)}
	}
	r.stop = &stopRequest{kind: kind, to: to, reason: reason}
	for i, rt := range r.tasks {
		if taskStatusOf(rt.GetStatus()) == TaskRunning {
			rt.Reason = "interrupted: its host stopped while it ran"
			r.setTaskLocked(i, TaskPending, rt.Reason)
		}
	}
	r.mu.Unlock()
	r.finish()
	_, err = r.handle.Wait(ctx)
	var re *RunError
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
	return runStatusOf(r.head.GetStatus()) == RunRunning
}

// RevisitRun runs task of a stopped run (paused, failed or completed)
// again and treats what came after it by impact: minor flags the tasks
// downstream "needs review"; moderate archives the outputs of the
// affected tasks (opts.Affects, by default the task's direct dependents)
// and runs them again, flagging the rest; major archives everything
// downstream and runs it all again. Archived outputs keep their versions.
// The revision is recorded in the run's history, and the run resumes.
func (h *Host) RevisitRun(ctx context.Context, id, task string, impact Impact, opts RevisitOptions) (*RunHandle, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	if _, err := ParseImpact(string(impact)); err != nil {
		return nil, err
	}
	id, err := h.ResolveRun(id)
	if err != nil {
		return nil, err
	}
	r, err := h.loadRun(id)
	if err != nil {
		return nil, err
	}
	// What would stop the resume is checked before the revision is
	// written: a revision left behind by a failed resume would be done
	// twice by the next attempt.
	err = h.checkAgents(r)
	if err == nil {
		r.mu.Lock()
		if problems := r.validateLocked(); len(problems) > 0 {
			err = &InvalidRunError{Run: r.id, Problems: problems}
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
		h.forgetRun(r)
		return nil, err
	}
	handle, err := h.resume(r, ResumeOptions{}, fmt.Sprintf("revisit of %s (%s impact)", task, impact))
	if err != nil {
		h.forgetRun(r)
	}
	return handle, err
}

func (r *runExec) revise(task string, impact Impact, opts RevisitOptions) (*store.Pending, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := runStatusOf(r.head.GetStatus()); s == RunRunning || s == RunCancelled {
		if s == RunRunning {
			return nil, fmt.Errorf("run %s is running; pause it first (Ctrl-C in the hearth process that runs it), then revisit", r.id)
		}
		return nil, &TransitionError{Run: r.id, From: string(s), To: string(RunRunning)}
	}
	i, ok := r.index[task]
	if !ok {
		return nil, fmt.Errorf("run %s has no task %q; its tasks: %s", r.id, task, strings.Join(r.taskNames(), ", "))
	}
	down := r.descendants(i)
	affected := r.kids[i]
	if len(opts.Affects) > 0 {
		if impact != ImpactModerate {
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
	rev := &storepb.Revision{Task: task, Impact: string(impact), Reason: opts.Reason, UnixNano: r.now().UnixNano()}
	archive := func(j int, why string) {
		if v := r.tasks[j].GetVersion(); v > 0 {
			rev.Archived = append(rev.Archived, fmt.Sprintf("%s v%d", r.tasks[j].GetName(), v))
		}
		r.resetLocked(j, why)
		rev.ResetTasks = append(rev.ResetTasks, r.tasks[j].GetName())
	}
	why := fmt.Sprintf("revisit of %s (%s impact)", task, impact)
	archive(i, why+prefixed(": ", opts.Reason))
	r.tasks[i].Feedback = "This task is revisited" + prefixed(": ", opts.Reason)
	for _, j := range down {
		switch {
		case impact == ImpactMajor, impact == ImpactModerate && slices.Contains(affected, j):
			archive(j, why)
		case r.tasks[j].GetStatus() == storepb.TaskStatus_TASK_SUCCEEDED:
			r.tasks[j].NeedsReview = true
			r.dirty[j] = true
			rev.Review = append(rev.Review, r.tasks[j].GetName())
		}
	}
	r.head.Revisions = append(r.head.Revisions, rev)
	r.emit(Event{Kind: EventRunRevisit, Task: task, Message: fmt.Sprintf("%s; archived: %s; needs review: %s", why,
		orNone(rev.Archived), orNone(rev.Review))})
	pend, _ := r.checkpointLocked(why, task, store.RunWrite{})
	return pend, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (r *runExec) taskNames() []string { return r.names(nil) }

// names returns the names of tasks idx, or of all tasks when idx is nil.
func (r *runExec) names(idx []int) []string {
	if idx == nil {
		out := make([]string, len(r.tasks))
		for i, t := range r.tasks {
			out[i] = t.GetName()
		}
		return out
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = r.tasks[i].GetName()
	}
	return out
}

// RunHandle returns the handle of a run this host is executing, to wait
// for it; nil when the run is not running here.
func (h *Host) RunHandle(id string) *RunHandle {
	if r := h.activeRun(id); r != nil && r.loopRunning() {
		return r.handle
	}
	return nil
}
