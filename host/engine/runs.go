package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/runs"
	"github.com/hearth-dev/hearth/host/store"
)

// The run services: the run engine (package host/runs) does the work;
// the engine wires it to the store, the guards, the pools and the event
// bus (newRuns), and adds the subscription that makes a RunWatch and the
// reading of pipelines from config files.

// newRuns makes the run engine of e.
func (e *Engine) newRuns() *runs.Runs {
	return runs.New(runs.Deps{
		Store: runStore{e.store}, Logger: e.logger, Now: e.now,
		Emit:           func(ev hearth.Event) runs.Pending { return e.emit(ev) },
		Publish:        func(evs []hearth.Event, p runs.Pending) { e.publishWritten(evs, p) },
		AfterPublished: e.events.afterPublished,
		Enter:          e.enter,
		Runnable:       e.runnable,
		Guards:         (*runGuards)(e),
		Execute:        e.executeRunTask,
		Tracer:         e.telemetry.TracerProvider().Tracer("github.com/hearth-dev/hearth/host/runs"),
	})
}

// runStore is the store as the run engine's runs.Store.
type runStore struct{ *store.Store }

func (s runStore) SaveRun(id string, w record.RunWrite) runs.Pending { return s.Store.SaveRun(id, w) }

func (s runStore) SaveRunStatus(id string, head *record.Run) runs.Pending {
	return s.Store.SaveRunStatus(id, head)
}

func (s runStore) RunRecord(id string) (*record.Run, error) {
	head, err := s.Store.RunRecord(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
	}
	return head, err
}

var (
	_ runs.Store = runStore{}
	// What a run's tasks reach of it.
	_ pool.Run = (*runs.Run)(nil)
)

// watchBuffer is how many events a run's watcher may fall behind before
// it misses some.
const watchBuffer = 4096

// runWatch follows a run of this host: its subscription, made before the
// run started, and its handle.
type runWatch struct {
	handle *runs.Handle
	sub    *subscription
}

func (w runWatch) ID() string                  { return w.handle.ID }
func (w runWatch) Events() <-chan hearth.Event { return w.sub.Events() }
func (w runWatch) Done() <-chan struct{}       { return w.handle.Done() }
func (w runWatch) Close()                      { w.sub.Close() }

// Dropped is how many of the run's events the watcher missed because it
// fell behind.
func (w runWatch) Dropped() uint64 { return w.sub.Dropped() }
func (w runWatch) Wait(ctx context.Context) (hearth.RunInfo, error) {
	return w.handle.Wait(ctx)
}

// watched subscribes to run id's events, then starts it with start.
func (e *Engine) watched(id string, start func() (*runs.Handle, error)) (hearth.RunWatch, error) {
	sub := e.events.subscribe(hearth.EventFilter{Run: id, Buffer: watchBuffer})
	handle, err := start()
	if err != nil {
		sub.Close()
		return nil, err
	}
	return runWatch{handle, sub}, nil
}

// StartRun creates a run of the pipeline spec names and starts it. It
// returns once the run is recorded (checkpoint 1, "created") and started;
// the run goes on in the host until it completes, fails, is paused or
// cancelled, or the host closes (which pauses it).
func (e *Engine) StartRun(ctx context.Context, spec hearth.RunSpec) (hearth.RunWatch, error) {
	p, file, err := e.specPipeline(spec)
	if err != nil {
		return nil, err
	}
	opts := spec.RunOptions
	opts.Config = file
	if opts.ID == "" {
		opts.ID = hearth.NewRunID(p.Name, e.now())
	}
	return e.watched(opts.ID, func() (*runs.Handle, error) { return e.runs.Start(ctx, p, opts) })
}

// specPipeline finds the pipeline a spec names: the one it gives, or the
// one in the config file it names (read by this host, run by this host's
// agents), and the file it came from.
func (e *Engine) specPipeline(spec hearth.RunSpec) (*hearth.Pipeline, string, error) {
	if spec.Pipeline != nil {
		return spec.Pipeline, spec.Config, nil
	}
	cfg := e.config()
	if file := spec.Config; file != "" {
		if fi, err := os.Stat(file); err == nil && fi.IsDir() {
			file = filepath.Join(file, "hearth.hcl")
		}
		if !samePath(file, cfg.Path) {
			other, err := config.Load(file, config.Options{Bundled: e.bundledNames})
			if err != nil {
				return nil, "", err
			}
			if missing := missingGuards(other, cfg); len(missing) > 0 {
				return nil, "", fmt.Errorf("%w: %s declares guards the daemon does not run, or runs otherwise: %s; its run would go unguarded. Start the daemon with --config %s, or put them in the daemon's config and reload it (SIGHUP)",
					hearth.ErrConfig, file, strings.Join(missing, ", "), file)
			}
			cfg = other
		}
	}
	p, err := cfg.SelectPipeline(spec.PipelineName)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", hearth.ErrConfig, err)
	}
	return p, cfg.Path, nil
}

func samePath(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// missingGuards names the guards of file that daemon does not have as
// they are: a run from the file is guarded by the host's guards only.
func missingGuards(file, daemon *config.Config) []string {
	have := make(map[string]guard.Spec, len(daemon.Guards))
	for _, g := range daemon.Guards {
		have[g.Name] = g.Spec
	}
	var out []string
	for _, g := range file.Guards {
		if d, ok := have[g.Name]; !ok || !reflect.DeepEqual(d, g.Spec) {
			out = append(out, g.Name)
		}
	}
	return out
}

// ResumeRun continues a paused, failed or interrupted run from where its
// records stand: the newest checkpoint, plus the state writes and chunk
// marks made since. Tasks that succeeded are not run again; tasks that
// were running, failed or were skipped become pending, and each gets its
// attempts again. The run's records are validated first (see
// hearth.InvalidRunError).
func (e *Engine) ResumeRun(ctx context.Context, id string, opts hearth.ResumeOptions) (hearth.RunWatch, error) {
	id, err := e.resolveRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.watched(id, func() (*runs.Handle, error) { return e.runs.Resume(ctx, id, opts) })
}

// ForkRun starts a new run from checkpoint at of run id: the state,
// tasks, outputs and files as they were then, with opts.State's sections
// replacing the state's. The original run is not touched. Tasks that
// were running at the checkpoint run again in the fork.
func (e *Engine) ForkRun(ctx context.Context, id string, at uint64, opts hearth.ForkOptions) (hearth.RunWatch, error) {
	from, err := e.resolveRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if opts.ID == "" {
		g, err := e.store.RunGraph(from)
		if err != nil {
			return nil, err
		}
		opts.ID = hearth.NewRunID(g.Pipeline.Name, e.now())
	}
	return e.watched(opts.ID, func() (*runs.Handle, error) { return e.runs.Fork(ctx, from, at, opts) })
}

// RevisitRun runs task of a stopped run (paused, failed or completed)
// again and treats what came after it by impact: minor flags the tasks
// downstream "needs review"; moderate archives the outputs of the
// affected tasks (opts.Affects, by default the task's direct dependents)
// and runs them again, flagging the rest; major archives everything
// downstream and runs it all again. Archived outputs keep their versions.
// The revision is recorded in the run's history, and the run resumes.
func (e *Engine) RevisitRun(ctx context.Context, id, task string, impact hearth.Impact, opts hearth.RevisitOptions) (hearth.RunWatch, error) {
	id, err := e.resolveRun(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.watched(id, func() (*runs.Handle, error) { return e.runs.Revisit(ctx, id, task, impact, opts) })
}

// WatchRun follows a run: to its end when this host is running it; a run
// that is not running here comes back stopped at once, as it is.
func (e *Engine) WatchRun(ctx context.Context, id string) (hearth.RunWatch, error) {
	id, err := e.resolveRun(ctx, id)
	if err != nil {
		return nil, err
	}
	sub := e.events.subscribe(hearth.EventFilter{Run: id, Buffer: watchBuffer})
	if handle := e.runs.Handle(id); handle != nil {
		return runWatch{handle, sub}, nil
	}
	sub.Close()
	d, err := e.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	return stoppedWatch{d.RunInfo}, nil
}

// stoppedWatch is the watch of a run that does not run here.
type stoppedWatch struct{ info hearth.RunInfo }

var closedEvents = func() chan hearth.Event { c := make(chan hearth.Event); close(c); return c }()

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (w stoppedWatch) ID() string                  { return w.info.ID }
func (w stoppedWatch) Events() <-chan hearth.Event { return closedEvents }
func (w stoppedWatch) Done() <-chan struct{}       { return closedDone }
func (w stoppedWatch) Close()                      {}
func (w stoppedWatch) Wait(context.Context) (hearth.RunInfo, error) {
	if w.info.Status == hearth.RunCompleted {
		return w.info, nil
	}
	return w.info, &hearth.RunError{Run: w.info.ID, Status: w.info.Status, Reason: w.info.Reason}
}

// PauseRun pauses a run. Running in this host, its tasks in flight are
// interrupted (they run again, with their next attempt number, when it
// resumes) and PauseRun waits until it has stopped or ctx ends. A run
// recorded as running that no host runs (its host was killed) is marked
// paused. It returns the run as it stopped.
func (e *Engine) PauseRun(ctx context.Context, id string) (hearth.RunInfo, error) {
	return e.stopRun(ctx, id, e.runs.Pause)
}

// CancelRun cancels a run for good: its tasks in flight are interrupted,
// the tasks that had not finished are skipped, and it cannot be resumed
// (it can still be forked). It returns the run as it stopped.
func (e *Engine) CancelRun(ctx context.Context, id string) (hearth.RunInfo, error) {
	return e.stopRun(ctx, id, e.runs.Cancel)
}

func (e *Engine) stopRun(ctx context.Context, id string, stop func(context.Context, string) error) (hearth.RunInfo, error) {
	id, err := e.resolveRun(ctx, id)
	if err != nil {
		return hearth.RunInfo{}, err
	}
	if err := stop(ctx, id); err != nil {
		return hearth.RunInfo{}, err
	}
	d, err := e.Run(ctx, id)
	return d.RunInfo, err
}

// DeleteRun deletes a stopped run with its outputs, checkpoints and
// files (those no other run uses), and returns its full ID. Its events
// stay, ending with the deletion.
func (e *Engine) DeleteRun(ctx context.Context, id string) (string, error) {
	id, err := e.resolveRun(ctx, id)
	if err != nil {
		return "", err
	}
	return id, e.runs.Delete(ctx, id)
}

// Runs lists the runs of the host's store, most recently active first.
// A run recorded as running that this host does not run is interrupted.
func (e *Engine) Runs(context.Context) ([]hearth.RunInfo, error) {
	heads, err := e.store.RunRecords()
	if err != nil {
		return nil, err
	}
	out := make([]hearth.RunInfo, len(heads))
	for i, head := range heads {
		out[i] = head.Info(false)
	}
	store.SortRuns(out)
	return out, nil
}

// Run describes one run: of the host's store, or, in a cluster, as the
// host of the cluster that owns it has it (RunDetail.Owner says which).
func (e *Engine) Run(ctx context.Context, id string) (hearth.RunDetail, error) {
	d, err := e.ownRun(ctx, id)
	if err != nil && e.cluster != nil && errors.Is(err, hearth.ErrUnknownRun) {
		return e.cluster.Run(ctx, id)
	}
	return d, err
}

// ownRun describes one run of the host's store.
func (e *Engine) ownRun(_ context.Context, id string) (hearth.RunDetail, error) {
	return e.store.RunDetail(id, false)
}

// resolveRun finds the run of the host's store that id (an ID or a
// prefix) names, for a command that changes it. Only reading a run goes
// through any host of a cluster: a run another host owns is changed in
// its owner's store, so the error names that host.
func (e *Engine) resolveRun(ctx context.Context, id string) (string, error) {
	full, err := e.store.ResolveRunID(id)
	if err != nil && e.cluster != nil && errors.Is(err, hearth.ErrUnknownRun) {
		if owner, ok := e.cluster.RunOwner(ctx, id); ok {
			return "", fmt.Errorf("%w: run %s is host %s's: send this to host %s, which owns it (through another host of the cluster a run can only be read)", err, id, owner, owner)
		}
	}
	return full, err
}

// RunOutputs reads the outputs of one run of the host's store.
func (e *Engine) RunOutputs(ctx context.Context, id string) ([]hearth.TaskOutput, error) {
	return e.store.RunOutputs(ctx, id)
}

// RunCheckpoints reads the checkpoints of one run of the host's store.
func (e *Engine) RunCheckpoints(ctx context.Context, id string) ([]hearth.CheckpointInfo, error) {
	return e.store.RunCheckpoints(ctx, id)
}

// RunEvents reads the events of one run of the host's store.
func (e *Engine) RunEvents(ctx context.Context, id string, limit int) ([]hearth.Event, error) {
	return e.store.RunEvents(ctx, id, limit)
}
