package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk"
)

// exportTimeout bounds the export of a session's state.
const exportTimeout = 30 * time.Second

type sessionStatus int

const (
	// statusStarting: a process is being started for the session, new or
	// rehydrated.
	statusStarting sessionStatus = iota
	statusLive
	// statusRetiring: its state is being exported and its process stopped.
	statusRetiring
	statusDormant
	// statusLost: its plugin died or hung. Kept for its history only.
	statusLost
)

func (st sessionStatus) String() string {
	return [...]string{"starting", "live", "retiring", "dormant", "lost"}[st]
}

var statusToRecord = map[sessionStatus]record.SessionStatus{
	statusStarting: record.SessionLive,
	statusLive:     record.SessionLive,
	statusRetiring: record.SessionLive,
	statusDormant:  record.SessionDormant,
	statusLost:     record.SessionLost,
}

// session is one instance of an agent: live (a plugin process running up
// to capacity tasks) or dormant (its fingerprint and exported state in the
// store, ready to be rehydrated).
type session struct {
	id      string
	pool    *Pool
	logger  hclog.Logger
	created time.Time

	// Guarded by pool.mu.
	status          sessionStatus
	proc            *process.Process
	capacity        int
	load            int
	lastActivity    time.Time
	indexedActivity time.Time
	// fp is the fingerprint of a session that can be touched: nil once it
	// is dormant or lost, when its entry in the matcher's index and its
	// record in the store hold all that placement and rehydration need.
	// Measured: ~100 bytes per file in the sets, ~14 in the index.
	fp           *fingerprint
	hasState     bool
	exportsState bool
	agentVersion string
	reason       string
	lostErr      *hearth.PluginError
	// stale: a reload changed or removed its agent; it takes no new task
	// and is retired once idle.
	stale bool
	// persisting: its retirement's record is being queued; eviction
	// waits.
	persisting bool
	// external is the kind of an external session (Spec.External),
	// which has no process: it reports through hooks. workspace is where
	// it works.
	external    string
	workspace   string
	tasks       uint64
	tasksFailed uint64
	toolUses    uint64
	unchecked   uint64
	// lastSeq is the last tool-use event of the session handed to the
	// store; a snapshot of the fingerprint covers events up to it.
	lastSeq uint64
	// saves asks the session's saver to snapshot it; nil when no saver
	// runs.
	saves     chan struct{}
	saverDone chan struct{}
}

func newSession(p *Pool, id string, created time.Time) *session {
	return &session{
		id:           id,
		pool:         p,
		logger:       p.logger.With("session", id),
		created:      created,
		lastActivity: created,
		capacity:     max(p.cfg().Capacity, 1),
		fp:           newFingerprint(p.cfg().Fingerprint),
	}
}

// newSessionID returns "<agent>-<8 hex digits>": short enough to type in
// `hearth sessions show`, random enough for an agent's lifetime of
// sessions.
func newSessionID(agent string) string {
	return sdk.NewID(agent)[:len(agent)+1+8]
}

// recordLocked snapshots the session for the store. A session without its
// fingerprint in memory (dormant or lost) must not be written back from
// it: its record already holds the fingerprint.
func (s *session) recordLocked() record.Session {
	r := record.Session{
		ID:             s.id,
		Agent:          s.pool.cfg().Agent,
		Status:         statusToRecord[s.status],
		Created:        s.created,
		LastActivity:   s.lastActivity,
		Capacity:       s.capacity,
		FingerprintSeq: s.lastSeq,
		Tasks:          s.tasks,
		TasksFailed:    s.tasksFailed,
		ToolUses:       s.toolUses,
		Unchecked:      s.unchecked,
		HasState:       s.hasState,
		AgentVersion:   s.agentVersion,
		Reason:         s.reason,
		External:       s.external,
		Workspace:      s.workspace,
		Busy:           s.external != "" && s.load > 0,
	}
	if s.fp != nil {
		r.Files, r.Dirs, r.Techs = s.fp.files.keys(), s.fp.dirs.keys(), s.fp.techs.keys()
	}
	if s.proc != nil {
		r.PID = s.proc.PID()
	}
	return r
}

// loadFingerprint reads a dormant session's fingerprint from the store.
func (s *session) loadFingerprint() (*fingerprint, error) {
	r, err := s.pool.d.Store.SessionRecord(s.id)
	if err != nil {
		return nil, fmt.Errorf("rehydrate %s: read its fingerprint: %w", s.id, err)
	}
	fp := newFingerprint(s.pool.cfg().Fingerprint)
	fp.files.load(r.Files)
	fp.dirs.load(r.Dirs)
	fp.techs.load(r.Techs)
	return fp, nil
}

func (s *session) fromRecord(r record.Session) {
	s.lastActivity = r.LastActivity
	if r.Capacity > 0 {
		s.capacity = r.Capacity
	}
	s.fp = newFingerprint(s.pool.cfg().Fingerprint)
	s.fp.files.load(r.Files)
	s.fp.dirs.load(r.Dirs)
	s.fp.techs.load(r.Techs)
	s.lastSeq = r.FingerprintSeq
	s.tasks, s.tasksFailed, s.toolUses, s.unchecked = r.Tasks, r.TasksFailed, r.ToolUses, r.Unchecked
	s.hasState = r.HasState
	s.agentVersion = r.AgentVersion
	s.reason = r.Reason
	s.external, s.workspace = r.External, r.Workspace
}

// replay applies a logged tool use to the fingerprint.
func (s *session) replay(ev hearth.Event) {
	if ev.Kind != hearth.EventToolUsed || ev.ToolUse == nil {
		return
	}
	s.fp.observe(*ev.ToolUse, s.pool.cfg().Workspace)
	s.toolUses++
	s.lastSeq = max(s.lastSeq, ev.Seq)
	if ev.Time.After(s.lastActivity) {
		s.lastActivity = ev.Time
	}
}

// startSaver starts the goroutine that snapshots the session, and exports
// its agent's state, after its tasks: so that a host killed with kill -9
// still finds the session's state when it restarts. Requests coalesce.
// pool.mu must be held.
func (s *session) startSaver() {
	s.saves = make(chan struct{}, 1)
	s.saverDone = make(chan struct{})
	saves, done := s.saves, s.saverDone
	go func() {
		defer close(done)
		for range saves {
			s.save()
		}
	}()
}

// requestSave asks for a snapshot. pool.mu must be held.
func (s *session) requestSave() {
	if s.saves == nil {
		return
	}
	select {
	case s.saves <- struct{}{}:
	default: // one is pending already
	}
}

// stopSaverLocked ends the saver after any pending save. pool.mu must be
// held.
func (s *session) stopSaverLocked() {
	if s.saves != nil {
		close(s.saves)
		s.saves = nil
	}
}

// waitSaver stops the saver and waits for it to finish.
func (s *session) waitSaver() {
	s.pool.mu.Lock()
	s.stopSaverLocked()
	done := s.saverDone
	s.pool.mu.Unlock()
	if done != nil {
		<-done
	}
}

// save snapshots the session, with its agent's exported state if it has
// one. The snapshot is durable once the returned Pending's Wait returns.
func (s *session) save() Pending {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	state, ok := s.exportState(ctx)
	s.pool.mu.Lock()
	rec := s.recordLocked()
	s.pool.mu.Unlock()
	if !ok {
		return s.pool.persist(rec)
	}
	rec.HasState = true
	pend := s.pool.persistState(rec, state)
	// The session says it has saved state only once the state is on disk:
	// whoever reads it (sessions list, a test about to kill the host)
	// may count on it.
	if pend.Wait(ctx) == nil {
		s.pool.mu.Lock()
		s.hasState = true
		s.pool.mu.Unlock()
	}
	return pend
}

// exportState asks the agent for its state; false when it exports none or
// could not.
func (s *session) exportState(ctx context.Context) ([]byte, bool) {
	s.pool.mu.Lock()
	proc, exports := s.proc, s.exportsState
	s.pool.mu.Unlock()
	if proc == nil || !exports {
		return nil, false
	}
	b, err := proc.Agent().ExportState(ctx)
	if err != nil {
		if !errors.Is(err, sdk.ErrStateNotSupported) {
			s.logger.Warn("cannot export the session's state", "error", err)
		}
		return nil, false
	}
	return b, true
}

// taskTimeoutError is the cancellation cause of a task that ran past its
// agent's task_timeout.
type taskTimeoutError struct{ d time.Duration }

func (e taskTimeoutError) Error() string {
	return fmt.Sprintf("task did not finish within its %s task_timeout", e.d)
}

func (e taskTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// runTask runs one task on the session (run is it, traced); run is the
// run it belongs to, nil for none. The task is cancelled when ctx is done, when it runs past its
// agent's task_timeout (the plugin is then considered hung and stopped),
// or when the engine's shutdown grace period ends. It also returns how
// many tool uses the agent reported for the task.
func (s *session) runTask(ctx context.Context, t hearth.Task, run Run) (sdk.Result, uint64, error) {
	p := s.pool
	cfg := p.cfg()
	base, cancelBase := context.WithCancelCause(ctx)
	defer cancelBase(nil)
	unhook := context.AfterFunc(p.d.HardStop, func() { cancelBase(hearth.ErrClosed) })
	defer unhook()
	// The task timeout is the host's own timer, not a deadline: gRPC would
	// send a deadline to the plugin, whose copy can fire first, and the
	// host must know for certain that it was its timeout that ended the
	// task.
	tctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	timer := time.AfterFunc(cfg.TaskTimeout, func() { cancel(taskTimeoutError{cfg.TaskTimeout}) })
	defer timer.Stop()

	st := sdk.Task{
		ID:             t.ID,
		Run:            t.Run,
		Name:           t.Name,
		Session:        s.id,
		Prompt:         t.Prompt,
		Hints:          t.Hints,
		Upstream:       t.Upstream,
		Context:        t.Context,
		Feedback:       t.Feedback,
		IdempotencyKey: cmp.Or(t.IdempotencyKey, t.ID),
		Attempt:        max(t.Attempt, 1),
		Metadata:       t.Metadata,
	}
	p.mu.Lock()
	proc := s.proc
	p.mu.Unlock()
	sc := trace.SpanContextFromContext(ctx)
	calls := &callbacks{s: s, task: t.ID, t: t, run: run, span: sc,
		spanCtx: trace.ContextWithSpanContext(context.Background(), sc), taskAttr: telemetry.AttrTask.String(t.ID)}
	// A task of a run is given the run's methods (sdk.RunCallbacks); any other
	// task Callbacks without them.
	var th sdk.Callbacks = calls
	if run != nil {
		th = runCallbacks{calls, run}
	}
	start := p.now()
	p.emit(hearth.Event{Kind: hearth.EventTaskStarted, Agent: cfg.Agent, Session: s.id, Task: t.ID, Run: t.Run, Message: "started " + t.ID + " on " + s.id})
	res, err := proc.Agent().Run(tctx, st, th)
	res = reportedResult(res)
	if err != nil {
		err = s.runError(tctx, proc, "run task "+t.ID, err)
		p.emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: cfg.Agent, Session: s.id, Task: t.ID, Run: t.Run, Err: err.Error(), Message: t.ID + " failed",
			Duration: p.now().Sub(start), Cost: res.Cost, Tokens: tokensOf(cfg, res)})
		return res, calls.reported.Load(), err
	}
	if err := cmp.Or(calls.defiedErr(), calls.uncheckedErr()); err != nil {
		// The agent's own code does the same again: retrying cannot help.
		err = fmt.Errorf("agent %q (session %s): run task %s: %w", cfg.Agent, s.id, t.ID, sdk.Permanent(err))
		p.emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: cfg.Agent, Session: s.id, Task: t.ID, Run: t.Run, Err: err.Error(), Message: t.ID + " failed",
			Duration: p.now().Sub(start), Cost: res.Cost, Tokens: tokensOf(cfg, res)})
		return res, calls.reported.Load(), err
	}
	ok := hearth.Event{Kind: hearth.EventTaskSucceeded, Agent: cfg.Agent, Session: s.id, Task: t.ID, Run: t.Run, Message: t.ID + " succeeded",
		Duration: p.now().Sub(start), Cost: res.Cost, Tokens: tokensOf(cfg, res)}
	if run != nil {
		run.Succeeded(ok) // written with the run's record of it
	} else {
		p.emit(ok)
	}
	return res, calls.reported.Load(), nil
}

// runError explains a failed call: a hung or dead plugin becomes a
// *PluginError (and the session is stopped); a failure of the task itself
// is wrapped with the agent, session and task it belongs to.
func (s *session) runError(ctx context.Context, proc *process.Process, op string, err error) error {
	var timeout taskTimeoutError
	if errors.As(context.Cause(ctx), &timeout) {
		pe := proc.Errorf(op, hearth.ErrPluginHung, timeout.Error(),
			"the session was stopped; raise the agent's task_timeout if the task is only slow")
		s.pool.lost(s, pe)
		return pe
	}
	if perr, detail, hint := proc.CallError(ctx, err); perr != err {
		pe := proc.Errorf(op, perr, detail, hint)
		s.pool.lost(s, pe)
		return pe
	}
	if errors.Is(err, sdk.ErrAgentPanicked) {
		s.pool.lost(s, proc.Errorf(op, err, "", "the session was retired because its state may be broken"))
	}
	if c := context.Cause(ctx); c != nil && errors.Is(c, hearth.ErrClosed) {
		return fmt.Errorf("agent %q (session %s): %s: %w", s.pool.cfg().Agent, s.id, op, hearth.ErrClosed)
	}
	return fmt.Errorf("agent %q (session %s): %s: %w", s.pool.cfg().Agent, s.id, op, err)
}
