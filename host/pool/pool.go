package pool

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// indexActivityEvery is how stale a session's last activity may be in the
// matcher's index. Freshness moves by 1/18000 a second with a 30-minute idle
// timeout, so updating the index on every tool use would buy nothing and
// cost a reordering of its recency list each time.
const indexActivityEvery = 250 * time.Millisecond

// Deps is what a pool needs from the engine that composes it.
type Deps struct {
	Store  SessionStore
	Events Events
	// Guards returns the guards in force (a reload replaces them).
	Guards func() *guard.Set
	// TLS makes the keys plugins are reached with.
	TLS    *plugin.HostTLS
	Logger hclog.Logger
	Now    func() time.Time
	// Closing is closed when the engine begins to shut down: tasks
	// waiting for room give up with hearth.ErrClosed.
	Closing <-chan struct{}
	// HardStop is done when the shutdown's grace period is over: tasks
	// still running are cancelled.
	HardStop context.Context
	// Telemetry is the host's tracing (trace.go); nil: none.
	Telemetry *telemetry.Provider
	// Learned, when set, is told that a placement recorded a task's
	// hints in session's fingerprint that it did not hold (Execute): a
	// cluster publishes the session's summary at once.
	Learned func(session string)
}

// Events is where a pool's events go: the engine's event bus, which
// writes them to the store and publishes them.
type Events interface {
	// Append records e and publishes it once it is on disk. It returns
	// the event's sequence number and its write.
	Append(e hearth.Event) (uint64, Pending)
	// ToolUse tells observers and subscribers of a tool use as it
	// arrives: tool uses reach the store in batches, and are durable
	// before their task's stream is acknowledged.
	ToolUse(e *hearth.Event)
}

// Pool holds one agent's sessions, live and dormant, places its tasks
// (place.go) and runs them. Its methods are safe for concurrent use.
type Pool struct {
	d      Deps
	logger hclog.Logger
	// spec is what a config reload may change, swapped whole.
	spec atomic.Pointer[Spec]
	// bg tracks work the pool does in the background: plugins stopped
	// after they died or hung, sessions retired after a reload.
	bg sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*session
	index    *matcher.Index
	// procs counts sessions with a process: starting, live or retiring.
	procs int
	// changed is closed, and replaced, whenever a slot frees up or a
	// process goes away, to wake tasks waiting for room.
	changed chan struct{}
	// rotation is the round_robin placement's turn.
	rotation int
	// waiting counts the tasks waiting for room in the full pool.
	waiting int
	// removed is set when a reload removed the agent: the pool takes no
	// new tasks, and its sessions are retired as they go idle.
	removed bool
	// remote holds the other hosts' sessions in the index, by RemoteID
	// (remote.go).
	remote map[string]struct{}
	// tracer makes the pool's spans (trace.go).
	tracer trace.Tracer
}

// New makes the pool of the agent sp describes.
func New(sp Spec, d Deps) (*Pool, error) {
	if err := sp.Check(); err != nil {
		return nil, err
	}
	ix, err := matcher.NewIndex(sp.Matcher)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", sp.Agent, err)
	}
	p := &Pool{
		d:        d,
		logger:   d.Logger.Named(sp.Agent),
		sessions: make(map[string]*session),
		index:    ix,
		changed:  make(chan struct{}),
		tracer:   tracerOf(d.Telemetry),
	}
	p.spec.Store(&sp)
	return p, nil
}

// Spec is the agent as the pool runs it now.
func (p *Pool) Spec() Spec { return *p.spec.Load() }

// cfg is the agent as the pool runs it now; not to be changed.
func (p *Pool) cfg() *Spec { return p.spec.Load() }

func (p *Pool) now() time.Time { return p.d.Now() }

// emit records an event; its write is not waited for.
func (p *Pool) emit(e hearth.Event) Pending {
	_, pend := p.d.Events.Append(e)
	return pend
}

// persist snapshots a session record, in the background.
func (p *Pool) persist(rec record.Session) Pending { return p.d.Store.SaveSession(rec) }

// persistState snapshots a session record with its agent's state, in the
// background.
func (p *Pool) persistState(rec record.Session, state []byte) Pending {
	return p.d.Store.SaveSessionState(rec, state)
}

// Wait returns once the pool's background work (stopping lost plugins,
// retiring sessions after a reload) is done.
func (p *Pool) Wait() { p.bg.Wait() }

// notifyLocked wakes every task waiting for room. p.mu must be held.
func (p *Pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// room reports whether another process may start. p.mu must be held.
func (p *Pool) room() bool { return p.procs < p.cfg().MaxSessions }

// stateLocked is a session's entry in the matcher's index.
func (p *Pool) stateLocked(s *session) matcher.State {
	return matcher.State{Capacity: s.capacity, Load: s.load, LastActivity: s.lastActivity, Dormant: s.status == statusDormant}
}

// indexLocked puts a session, fingerprint and all, into the index.
func (p *Pool) indexLocked(s *session) {
	p.index.Put(matcher.Candidate{
		ID: s.id, State: p.stateLocked(s),
		Files: s.fp.files.keys(), Dirs: s.fp.dirs.keys(), Techs: s.fp.techs.keys(),
	})
	s.indexedActivity = s.lastActivity
}

// unavailableLocked lists the sessions in the index that cannot take a
// task right now: starting or being retired.
func (p *Pool) unavailableLocked() []string {
	var out []string
	for id, s := range p.sessions {
		if s.status == statusStarting || s.status == statusRetiring || s.stale {
			if _, ok := p.index.Candidate(id); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// statelessDormantLocked counts the dormant sessions that are no
// candidates because their agent exported no state.
func (p *Pool) statelessDormantLocked() int {
	n := 0
	for _, s := range p.sessions {
		if s.status == statusDormant && !s.hasState {
			n++
		}
	}
	return n
}

// idlestLocked is the least recently active live session running nothing.
func (p *Pool) idlestLocked() *session {
	var v *session
	for _, s := range p.sessions {
		if s.status == statusLive && s.load == 0 && (v == nil || s.lastActivity.Before(v.lastActivity)) {
			v = s
		}
	}
	return v
}

func (p *Pool) reserveLocked(s *session) {
	s.load++
	p.index.Upsert(s.id, p.stateLocked(s))
}

func (p *Pool) newSessionLocked() *session {
	id := newSessionID(p.cfg().Agent)
	s := newSession(p, id, p.now())
	s.status = statusStarting
	p.sessions[id] = s
	p.procs++
	return s
}

// launch starts the process of a session whose status is starting, new or
// dormant (start is it, traced). On success the session is live with one slot reserved. On
// failure a new session is forgotten; a dormant one whose rehydration
// failed stays dormant but is no longer a candidate: otherwise every
// matching task would pick it and fail the same way.
func (p *Pool) launch(ctx context.Context, s *session, rehydrate bool) error {
	var (
		fp   *fingerprint
		proc *process.Process
		err  error
	)
	if rehydrate {
		fp, err = s.loadFingerprint()
	}
	if err == nil {
		l := p.cfg().Launch
		l.Agent, l.Session, l.TLS = p.cfg().Agent, s.id, p.d.TLS
		l.Logger, l.LogLevel = s.logger, p.d.Logger.GetLevel().String()
		l.OnExit = func(pe *hearth.PluginError) { p.lost(s, pe) }
		l.Plugin = p.pluginTraces()
		proc, err = process.Start(ctx, l)
	}
	if err == nil && rehydrate {
		if err = p.rehydrate(ctx, s, proc); err != nil {
			proc.Stop(true)
		}
	}

	// Events and records are built under the lock and written after it:
	// a full store queue must not hold up the pool.
	var (
		ev  *hearth.Event
		rec *record.Session
	)
	record := func() {
		r := s.recordLocked()
		rec = &r
	}
	p.mu.Lock()
	switch {
	case err == nil && s.status == statusLost:
		// The process died between its start and now; lost() has
		// accounted for the session, and the process is ours to reap.
		p.bg.Go(func() { proc.Stop(true) })
		err = s.lostErr
	case err != nil && s.status == statusLost:
	case err != nil && rehydrate:
		p.procs--
		s.status = statusDormant
		s.hasState = false
		s.reason = "rehydration failed: " + err.Error()
		p.index.Remove(s.id)
		record()
		p.notifyLocked()
	case err != nil:
		p.procs--
		delete(p.sessions, s.id)
		p.notifyLocked()
	default:
		s.proc = proc
		s.status = statusLive
		if fp != nil {
			s.fp = fp
		}
		s.capacity = p.cfg().Capacity
		if s.capacity < 1 {
			s.capacity = proc.Info().Capacity
		}
		s.agentVersion = proc.Info().Version
		s.exportsState = proc.Agent().ExportsState()
		s.load = 1
		s.lastActivity = p.now()
		p.indexLocked(s)
		s.startSaver()
		record()
		s.logger.Debug("session live", "pid", proc.PID(), "capacity", s.capacity, "rehydrated", rehydrate)
		kind, verb := hearth.EventSessionSpawned, "spawned"
		if rehydrate {
			kind, verb = hearth.EventSessionRehydrated, "rehydrated"
		}
		ev = &hearth.Event{Kind: kind, Agent: p.cfg().Agent, Session: s.id, PID: proc.PID(),
			Message: fmt.Sprintf("%s %s (pid %d, capacity %d)", verb, s.id, proc.PID(), s.capacity)}
	}
	p.mu.Unlock()
	if rec != nil {
		p.persist(*rec)
	}
	if ev != nil {
		p.emit(*ev)
	}
	return err
}

// rehydrate hands a fresh process the state its session exported.
func (p *Pool) rehydrate(ctx context.Context, s *session, proc *process.Process) error {
	state, ok, err := p.d.Store.SessionState(s.id)
	if err != nil {
		return fmt.Errorf("rehydrate %s: read its state: %w", s.id, err)
	}
	if !ok {
		return nil // the fingerprint alone; nothing to import
	}
	ictx, cancel := context.WithTimeout(ctx, p.cfg().Launch.StartTimeout)
	defer cancel()
	if err := proc.Agent().(interface {
		ImportState(context.Context, []byte) error
	}).ImportState(ictx, state); err != nil {
		perr, detail, hint := proc.CallError(ictx, err)
		if perr == err {
			detail, hint = err.Error(), "the agent refused the state its session exported; the task goes to another session, and this one is not offered again"
			perr = hearth.ErrRehydrate
		}
		return proc.Errorf("rehydrate", perr, detail, hint)
	}
	return nil
}

// release frees the slot a task held and records the task's effect.
func (p *Pool) release(s *session, failed bool) {
	p.mu.Lock()
	s.load--
	s.tasks++
	if failed {
		s.tasksFailed++
	}
	s.lastActivity = p.now()
	if p.cfg().Placement == hearth.PlacementFresh && s.status == statusLive && s.load == 0 {
		// The fresh baseline keeps nothing: the session is stopped after
		// its task, without its state.
		s.status, s.reason = statusLost, "placement = fresh: stopped after its task"
		p.procs--
		p.index.Remove(s.id)
		s.stopSaverLocked()
		s.fp = nil
		proc := s.proc
		p.notifyLocked()
		// Stopped as a retired session is, asked first: a kill would be
		// logged as a plugin's crash, once per task. The task has its
		// result; the stop need not hold it up.
		p.bg.Go(func() { proc.Stop(false) })
		p.mu.Unlock()
		return
	}
	defer p.mu.Unlock()
	if s.status == statusLive {
		p.index.Upsert(s.id, p.stateLocked(s))
		s.indexedActivity = s.lastActivity
		s.requestSave()
		if s.stale && s.load == 0 {
			// A reload changed or removed its agent: this was its last
			// task.
			s.status = statusRetiring
			why := "its agent's definition changed"
			if p.removed {
				why = "its agent was removed from the config"
			}
			p.bg.Go(func() { p.retire(s, why) })
		}
	}
	p.notifyLocked()
}

// lost removes a session whose plugin died or hung. The pool lock orders
// it against retirement and shutdown, so a session is stopped once and
// Close sees every stop it must wait for.
func (p *Pool) lost(s *session, pe *hearth.PluginError) {
	p.mu.Lock()
	if s.status != statusLive && s.status != statusStarting {
		p.mu.Unlock()
		return
	}
	s.status = statusLost
	s.reason = pe.Error()
	s.lostErr = pe
	p.procs--
	p.index.Remove(s.id)
	s.stopSaverLocked()
	p.notifyLocked()
	rec := s.recordLocked()
	s.fp = nil
	// Not evicted before its record is queued (see dormantLocked).
	s.persisting = true
	proc := s.proc
	if proc != nil {
		// Started under the lock, so that Close, which retires the
		// pools first, waits for this stop.
		p.bg.Go(func() { proc.Stop(true) })
	}
	// Still starting (proc == nil): the process is not the session's yet,
	// and the starter stops it.
	p.mu.Unlock()
	p.persist(rec)
	// A lost session counts against max_dormant like a dormant one: the
	// oldest beyond it go now, not when a session next retires.
	p.mu.Lock()
	s.persisting = false
	evicted := p.evictDormantLocked()
	p.mu.Unlock()
	p.deleteEvicted(evicted)
	pid := 0
	if proc != nil {
		pid = proc.PID()
	}
	p.emit(hearth.Event{Kind: hearth.EventSessionLost, Agent: p.cfg().Agent, Session: s.id, PID: pid, Err: pe.Error(),
		Message: fmt.Sprintf("lost %s: %v", s.id, pe.Err)})
}

// retire makes a live session dormant: its state is exported and stored,
// its process stopped; its fingerprint stays for the matcher, which may
// rehydrate it. The caller has set its status to retiring.
func (p *Pool) retire(s *session, why string) {
	if s.external != "" {
		p.detach(s, why)
		return
	}
	s.waitSaver()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg().Launch.StartTimeout)
	state, saved := s.exportState(ctx)
	cancel()
	s.proc.Stop(false)
	p.mu.Lock()
	p.procs--
	s.proc = nil
	if saved {
		s.hasState = true
	}
	// Without exported state a new process would know nothing the
	// fingerprint says: not a candidate.
	rec, evicted := p.dormantLocked(s, why, s.hasState)
	p.mu.Unlock()
	if saved {
		p.persistState(rec, state)
	} else {
		p.persist(rec)
	}
	p.persisted(s, fmt.Sprintf("retired %s: %s", s.id, why), evicted)
}

// dormantLocked makes s dormant for why, a candidate of the index or
// not, and returns its record, fingerprint included, for the caller to
// queue, and the sessions evicted to make room. Until the caller has
// queued the record and called persisted, s is not evicted: a delete
// queued first would be undone by the record.
func (p *Pool) dormantLocked(s *session, why string, candidate bool) (record.Session, []string) {
	s.status = statusDormant
	s.reason = why
	s.load = 0
	if candidate {
		p.index.Upsert(s.id, p.stateLocked(s))
	} else {
		p.index.Remove(s.id)
	}
	rec := s.recordLocked()
	s.fp = nil
	s.persisting = true
	evicted := p.evictDormantLocked()
	p.notifyLocked()
	return rec, evicted
}

// persisted ends what dormantLocked began, once s's record is queued:
// s may be evicted again, the retirement is an event, and the sessions
// evicted for it are deleted.
func (p *Pool) persisted(s *session, msg string, evicted []string) {
	p.mu.Lock()
	s.persisting = false
	p.mu.Unlock()
	p.emit(hearth.Event{Kind: hearth.EventSessionRetired, Agent: p.cfg().Agent, Session: s.id, Message: msg})
	p.deleteEvicted(evicted)
}

// deleteEvicted deletes the records of sessions evicted beyond
// max_dormant.
func (p *Pool) deleteEvicted(ids []string) {
	for _, id := range ids {
		if err := p.d.Store.DeleteSession(context.Background(), id); err != nil {
			p.logger.Warn("cannot delete an evicted dormant session", "session", id, "error", err)
		}
	}
}

// evictDormantLocked forgets the dormant sessions beyond max_dormant and
// returns them for deletion from the store: those that never reported a
// tool use first (an empty `claude -p` session knows nothing worth
// resuming, and must not push out one that does), then the least
// recently active.
func (p *Pool) evictDormantLocked() []string {
	var dormant []*session
	for _, s := range p.sessions {
		if (s.status == statusDormant || s.status == statusLost) && !s.persisting {
			dormant = append(dormant, s)
		}
	}
	if len(dormant) <= p.cfg().MaxDormant {
		return nil
	}
	sort.Slice(dormant, func(i, j int) bool {
		if ui, uj := dormant[i].toolUses > 0, dormant[j].toolUses > 0; ui != uj {
			return ui
		}
		return dormant[i].lastActivity.After(dormant[j].lastActivity)
	})
	var ids []string
	for _, s := range dormant[p.cfg().MaxDormant:] {
		delete(p.sessions, s.id)
		p.index.Remove(s.id)
		ids = append(ids, s.id)
	}
	return ids
}

// RetireIdle retires the live sessions idle past the idle timeout.
func (p *Pool) RetireIdle(now time.Time) {
	p.mu.Lock()
	var idle []*session
	for _, s := range p.sessions {
		// An external session's turn has no end the host sees if its
		// program died: idle long enough, it is dormant even "busy".
		if s.status == statusLive && (s.load == 0 || s.external != "") && now.Sub(s.lastActivity) >= p.cfg().IdleTimeout {
			s.status = statusRetiring
			idle = append(idle, s)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Go(func() { p.retire(s, fmt.Sprintf("idle for more than %s", p.cfg().IdleTimeout)) })
	}
	wg.Wait()
}

// RetireAll retires every live session: the host is shutting down.
func (p *Pool) RetireAll(why string) {
	p.mu.Lock()
	var live []*session
	for _, s := range p.sessions {
		if s.status == statusLive {
			s.status = statusRetiring
			live = append(live, s)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range live {
		wg.Go(func() { p.retire(s, why) })
	}
	wg.Wait()
}

// Restore loads the agent's sessions from the store: all dormant, since no
// process survives a host. Sessions that were live when the host stopped
// without retiring them (kill -9) get the tool uses logged after their
// last snapshot replayed into their fingerprint.
func (p *Pool) Restore(recs []record.Session) error {
	fix, evicted, err := p.restoreLocked(recs)
	if err != nil {
		return err
	}
	for _, id := range evicted {
		if err := p.d.Store.DeleteSession(context.Background(), id); err != nil {
			// Not worth refusing to start over: the next restart tries
			// again.
			p.logger.Warn("cannot delete a dormant session beyond max_dormant", "session", id, "error", err)
		}
	}
	// Startup finishes its own writes before the host takes work.
	for _, r := range fix {
		if err := p.persist(r).Wait(context.Background()); err != nil {
			return fmt.Errorf("restore session %s: %w", r.ID, err)
		}
	}
	return nil
}

func (p *Pool) restoreLocked(recs []record.Session) (fix []record.Session, evicted []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		s := newSession(p, r.ID, r.Created)
		s.fromRecord(r)
		if r.Status == record.SessionLost {
			s.status = statusLost
			s.fp = nil
			p.sessions[s.id] = s
			continue
		}
		s.status = statusDormant
		evs, err := p.d.Store.Events(s.id, r.FingerprintSeq, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("restore session %s: %w", s.id, err)
		}
		for _, ev := range evs {
			s.replay(ev)
		}
		if r.Status != record.SessionDormant || len(evs) > 0 {
			if r.Status == record.SessionLive {
				s.reason = "the host stopped without retiring it"
			}
			fix = append(fix, s.recordLocked())
		}
		p.sessions[s.id] = s
		if s.hasState {
			p.indexLocked(s)
		}
		s.fp = nil
	}
	return fix, p.evictDormantLocked(), nil
}

// observeLocked takes a tool use the session reported into its
// fingerprint, and the fingerprint's change into the index. Reports can
// arrive after the session was lost or retired (the task timed out, or
// was cancelled, while its reports were still queued): they are logged,
// but there is no fingerprint to update any more.
func (p *Pool) observeLocked(s *session, u sdk.ToolUse) {
	var c change
	if s.fp != nil {
		c = s.fp.observe(u, p.cfg().Workspace)
	}
	s.toolUses++
	if u.At.After(s.lastActivity) {
		s.lastActivity = u.At
	}
	if s.status == statusLive {
		if !c.empty() {
			p.applyLocked(s, c)
		}
		if s.lastActivity.Sub(s.indexedActivity) >= indexActivityEvery {
			p.index.Upsert(s.id, p.stateLocked(s))
			s.indexedActivity = s.lastActivity
		}
	}
}

// applyLocked carries a fingerprint change into the index.
func (p *Pool) applyLocked(s *session, c change) {
	if len(c.addFiles) > 0 {
		p.index.AddFiles(s.id, c.addFiles...)
	}
	if len(c.dropFiles) > 0 {
		p.index.RemoveFiles(s.id, c.dropFiles...)
	}
	if len(c.addDirs) > 0 {
		p.index.AddDirs(s.id, c.addDirs...)
	}
	if len(c.dropDirs) > 0 {
		p.index.RemoveDirs(s.id, c.dropDirs...)
	}
	if len(c.addTechs) > 0 {
		p.index.AddTechs(s.id, c.addTechs...)
	}
	if len(c.dropTechs) > 0 {
		p.index.RemoveTechs(s.id, c.dropTechs...)
	}
}
