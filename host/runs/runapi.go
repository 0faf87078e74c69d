package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/paths"
)

// The operations on runs. Each reads what it needs from the store, asks
// the run's Schedule what it means, and writes what the schedule answers.

// Start creates a run of pipeline p and starts it. It returns once the
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
	r, err := m.newRun(head, g, nil, nil)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	pend := r.writeLocked(r.s.Created(now, g, refs))
	r.mu.Unlock()
	if err := wait(ctx, pend); err != nil {
		return nil, fmt.Errorf("record run %s: %w", id, err)
	}
	return m.launch(ctx, r, "started")
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
func (m *Runs) launch(ctx context.Context, r *Run, why string) (*Handle, error) {
	if err := m.claim(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.startTraceLocked(ctx, why)
	eff, err := r.s.Launch(r.now(), why)
	if err != nil {
		r.mu.Unlock()
		r.launchFailed(err)
		m.forget(r)
		return nil, err
	}
	pend := r.writeLocked(eff)
	r.mu.Unlock()
	if err := wait(context.Background(), pend); err != nil {
		err = fmt.Errorf("record run %s as running: %w", r.id, err)
		r.launchFailed(err)
		m.forget(r)
		return nil, err
	}
	m.wg.Add(1)
	go r.loop()
	return r.handle, nil
}

// claim registers r in this host, so that no other operation acts on the
// same run at the same time.
func (m *Runs) claim(r *Run) error {
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

// forget unregisters r.
func (m *Runs) forget(r *Run) {
	m.mu.Lock()
	if m.runs[r.id] == r {
		delete(m.runs, r.id)
	}
	m.mu.Unlock()
}

// active returns the run id this host executes, or nil.
func (m *Runs) active(id string) *Run {
	if id == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs[id]
}

// Stop pauses every run this host executes, for its shutdown: no task
// starts any more; tasks in flight may finish within the shutdown's
// grace period.
func (m *Runs) Stop() {
	m.mu.Lock()
	m.closed = true
	runs := make([]*Run, 0, len(m.runs))
	for _, r := range m.runs {
		runs = append(runs, r)
	}
	m.mu.Unlock()
	for _, r := range runs {
		r.requestStop(StopShutdown, hearth.RunPaused, "the host shut down; resume the run to go on", false)
	}
}

// load reads a run's records and builds its shell and schedule, claimed
// in this host. Release it with forget, or launch it.
func (m *Runs) load(id string) (*Run, error) {
	head, err := m.d.Store.RunRecord(id)
	if err != nil {
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
	r, err := m.newRun(head, g, recs, outs)
	if err != nil {
		return nil, err
	}
	if err := m.claim(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Resume continues a paused, failed or interrupted run from where its
// records stand: the newest checkpoint, plus the state writes and chunk
// marks made since. Tasks that succeeded are not run again; tasks that
// were running, failed or were skipped become pending, and each gets its
// attempts again. The run's records are validated first (see
// hearth.InvalidRunError).
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
	handle, err := m.resume(ctx, r, opts, "resumed")
	if err != nil {
		m.forget(r)
	}
	return handle, err
}

// resume validates r, resets what must run again and launches it.
func (m *Runs) resume(ctx context.Context, r *Run, opts hearth.ResumeOptions, why string) (*Handle, error) {
	if err := m.checkAgents(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	if err := r.s.Resumable(why); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	if problems := r.problemsLocked(); len(problems) > 0 {
		if !opts.Repair || slices.ContainsFunc(problems, func(p hearth.Problem) bool { return p.Repair == "" }) {
			r.mu.Unlock()
			return nil, &hearth.InvalidRunError{Run: r.id, Problems: problems}
		}
		pend := r.writeLocked(r.s.Repair(r.now(), problems))
		r.mu.Unlock()
		if err := wait(context.Background(), pend); err != nil {
			return nil, fmt.Errorf("repair run %s: %w", r.id, err)
		}
		r.mu.Lock()
	}
	err := r.s.Resume(r.now(), opts, why)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return m.launchClaimed(ctx, r, why)
}

// checkAgents checks that this host runs every agent of r.
func (m *Runs) checkAgents(r *Run) error {
	var missing []string
	for _, t := range r.s.pipe.Tasks {
		if err := m.d.Runnable(t.Agent); errors.Is(err, hearth.ErrUnknownAgent) && !slices.Contains(missing, t.Agent) {
			missing = append(missing, t.Agent)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("run %s needs agents %s, which this host's config does not declare; use the config the run was started with (%s)",
			r.id, strings.Join(missing, ", "), cmp.Or(r.s.config, "not recorded"))
	}
	return nil
}

// launchClaimed is launch for a run load has claimed already.
func (m *Runs) launchClaimed(ctx context.Context, r *Run, why string) (*Handle, error) {
	m.forget(r)
	return m.launch(ctx, r, why)
}

// problemsLocked checks the run's records before it resumes: its tasks'
// (the schedule's), and that its files and its newest checkpoint are on
// disk.
func (r *Run) problemsLocked() []hearth.Problem {
	out := r.s.Problems()
	for _, f := range r.s.Files() {
		fi, err := os.Stat(r.m.d.Store.BlobPath(f.SHA256))
		switch {
		case err != nil:
			out = append(out, hearth.Problem{Message: fmt.Sprintf("file %s (sha256 %s) is missing from the file store", f.Name, f.SHA256[:12])})
		case fi.Size() != f.Size:
			out = append(out, hearth.Problem{Message: fmt.Sprintf("file %s holds %d bytes, not the %d it was attached with", f.Name, fi.Size(), f.Size)})
		}
	}
	if n := r.s.Newest(); n > 0 {
		if _, err := r.m.d.Store.Checkpoint(r.id, n); err != nil {
			out = append(out, hearth.Problem{Message: fmt.Sprintf("its newest checkpoint, %d, no longer exists", n), Repair: "write a new checkpoint"})
		}
	}
	return out
}

// Fork starts a new run from checkpoint at of run id: the state, tasks,
// outputs and files as they were then, with opts.State's sections
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
	outs, err := m.d.Store.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	now := m.now()
	head, tasks, copies, label, err := ForkRecords(id, at, cps, outs, opts.Budget, now)
	if err != nil {
		return nil, err
	}
	if head.ID, err = m.newRunIDFor(opts.ID, g.Pipeline.Name, now); err != nil {
		return nil, err
	}
	r, err := m.newRun(head, g, tasks, copies)
	if err != nil {
		return nil, err
	}
	if err := m.claim(r); err != nil {
		return nil, err
	}
	r.mu.Lock()
	eff, err := r.s.Forked(now, id, at, label, opts.State, g, copies)
	pend := r.writeLocked(eff)
	r.mu.Unlock()
	if err != nil {
		m.forget(r)
		return nil, err
	}
	if err := wait(ctx, pend); err != nil {
		m.forget(r)
		return nil, fmt.Errorf("record run %s: %w", head.ID, err)
	}
	return m.launchClaimed(ctx, r, fmt.Sprintf("forked from %s at checkpoint %d", id, at))
}

// Pause pauses a run. Running in this host, its tasks in flight are
// interrupted (they run again, with their next attempt number, when it
// resumes) and Pause waits until it has stopped or ctx ends. A run
// recorded as running that no host runs (its host was killed) is marked
// paused.
func (m *Runs) Pause(ctx context.Context, id string) error {
	return m.stopRun(ctx, id, StopPause, hearth.RunPaused, "paused on request")
}

// Cancel cancels a run for good: its tasks in flight are interrupted,
// the tasks that had not finished are skipped, and it cannot be resumed
// (it can still be forked).
func (m *Runs) Cancel(ctx context.Context, id string) error {
	return m.stopRun(ctx, id, StopCancel, hearth.RunCancelled, "cancelled on request")
}

func (m *Runs) stopRun(ctx context.Context, id string, kind StopKind, to hearth.RunStatus, reason string) error {
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
	if from := r.s.Status(); !canRun(from, to) {
		r.mu.Unlock()
		return &hearth.TransitionError{Run: id, From: string(from), To: string(to)}
	}
	r.s.Stop(kind, to, reason)
	r.s.Interrupted(r.now())
	r.mu.Unlock()
	r.finish()
	_, err = r.handle.Wait(ctx)
	var re *hearth.RunError
	if errors.As(err, &re) && re.Status == to {
		return nil
	}
	return err
}

// Revisit runs task of a stopped run (paused, failed or completed) again
// and treats what came after it by impact: minor flags the tasks
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
	var pend Pending
	if err == nil {
		r.mu.Lock()
		if problems := r.problemsLocked(); len(problems) > 0 {
			err = &hearth.InvalidRunError{Run: r.id, Problems: problems}
		} else {
			var eff Effects
			eff, err = r.s.Revise(r.now(), task, impact, opts)
			pend = r.writeLocked(eff)
		}
		r.mu.Unlock()
	}
	if err == nil {
		err = wait(ctx, pend)
	}
	if err != nil {
		m.forget(r)
		return nil, err
	}
	handle, err := m.resume(ctx, r, hearth.ResumeOptions{}, fmt.Sprintf("revisit of %s (%s impact)", task, impact))
	if err != nil {
		m.forget(r)
	}
	return handle, err
}

// Handle returns the handle of a run this host is executing, to wait for
// it; nil when the run is not running here.
func (m *Runs) Handle(id string) *Handle {
	if r := m.active(id); r != nil && r.loopRunning() {
		return r.handle
	}
	return nil
}
