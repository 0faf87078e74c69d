package host

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
)

// indexActivityEvery is how stale a session's last activity may be in the
// matcher's index. Freshness moves by 1/18000 a second with a 30-minute idle
// timeout, so updating the index on every tool use would buy nothing and
// cost a reordering of its recency list each time.
const indexActivityEvery = 250 * time.Millisecond

// pool holds one agent's sessions, live and dormant, and places its tasks
// with the matcher.
//
// Placement (acquire): the matcher scores every live and dormant session
// against the task's hints. A live winner is reused; a dormant winner is
// rehydrated (a new process, given the session's exported state); otherwise
// a new session is spawned. Starting a process needs room in the pool
// (max_sessions processes). When the pool is full, the task waits (until
// its context's deadline) if a busy session would win it: that session
// frees up sooner than a cold one warms up. Otherwise, with when_full =
// "retire_idle" and an idle session, the least recently used idle session
// is retired (kept dormant, with its context) to make room; else the best
// live session with a free slot is reused even below the threshold
// (waiting would not make a better one appear); and when every session is
// busy the task waits for a slot to free. After a wait it decides again.
type pool struct {
	h      *Host
	logger hclog.Logger
	// spec is what a config reload may change, swapped whole.
	spec atomic.Pointer[poolSpec]

	mu       sync.Mutex
	sessions map[string]*session
	index    *matcher.Index
	// procs counts sessions with a process: starting, live or retiring.
	procs int
	// changed is closed, and replaced, whenever a slot frees up or a
	// process goes away, to wake tasks waiting for room.
	changed chan struct{}

	// placer replaces the matcher's placement; benchmarks set it to the
	// baselines hearth is compared with (a new session per task, a warm
	// pool in rotation). nil in production.
	placer func(ctx context.Context, t Task) (*session, *Decision, error)
	// released, when set, is called after a task's slot is freed.
	released func(*session)
	// removed is set when a reload removed the agent: the pool takes no
	// new tasks, and its sessions are retired as they go idle.
	removed bool
}

// poolSpec is an agent's configuration as its pool uses it.
type poolSpec struct {
	cfg  *config.Agent
	mcfg matcher.Config
	argv []string
	env  []string
}

func newPool(h *Host, a *config.Agent, m config.Matcher, argv, env []string) (*pool, error) {
	sp := &poolSpec{cfg: a, mcfg: m.For(a), argv: argv, env: append(envList(a.Env), env...)}
	ix, err := matcher.NewIndex(sp.mcfg)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", a.Name, err)
	}
	p := &pool{
		h:        h,
		logger:   h.logger.Named(a.Name),
		sessions: make(map[string]*session),
		index:    ix,
		changed:  make(chan struct{}),
	}
	p.spec.Store(sp)
	return p, nil
}

// cfg is the agent's configuration now.
func (p *pool) cfg() *config.Agent { return p.spec.Load().cfg }

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// notifyLocked wakes every task waiting for room. p.mu must be held.
func (p *pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// room reports whether another process may start. p.mu must be held.
func (p *pool) room() bool { return p.procs < p.cfg().Pool.MaxSessions }

// stateLocked is a session's entry in the matcher's index.
func (p *pool) stateLocked(s *session) matcher.State {
	return matcher.State{Capacity: s.capacity, Load: s.load, LastActivity: s.lastActivity, Dormant: s.status == statusDormant}
}

// indexLocked puts a session, fingerprint and all, into the index.
func (p *pool) indexLocked(s *session) {
	p.index.Put(matcher.Candidate{
		ID: s.id, State: p.stateLocked(s),
		Files: s.fp.files.keys(), Dirs: s.fp.dirs.keys(), Techs: s.fp.techs.keys(),
	})
	s.indexedActivity = s.lastActivity
}

// unavailableLocked lists the sessions in the index that cannot take a
// task right now: starting or being retired.
func (p *pool) unavailableLocked() []string {
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

// Place returns the decision the pool would make for hints now, without
// acting on it.
func (p *pool) place(hints matcher.Hints) matcher.Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.index.Decide(hints, p.h.now(), p.unavailableLocked()...)
}

// acquire places a task: it returns a live session with a slot reserved
// for it, and the decision that chose it.
func (p *pool) acquire(ctx context.Context, t Task) (*session, *Decision, error) {
	if p.placer != nil {
		return p.placer(ctx, t)
	}
	hints := normalizeHints(t.Hints, p.cfg().Workspace)
	start := p.h.now()
	dec := &Decision{Task: t.ID, TaskName: t.Name, Agent: p.cfg().Name, Threshold: p.spec.Load().mcfg.Threshold, Hints: t.Hints}
	// waited counts only time spent waiting for room, not retiring a
	// session to make some.
	var waited time.Duration
	// vetoed are the winners session_reuse guards refused; the matcher
	// decides again without them.
	var vetoed []string
	for {
		p.mu.Lock()
		now := p.h.now()
		d := p.index.Decide(hints, now, append(p.unavailableLocked(), vetoed...)...)
		if d.Outcome == matcher.Reuse {
			if v := p.vetoLocked(p.sessions[d.Winner], d.Ranked[0].Total, t, now); v != nil {
				p.mu.Unlock()
				vetoed = append(vetoed, d.Winner)
				dec.Vetoed = append(dec.Vetoed, d.Winner+":"+v.Guard)
				p.h.emitGuard(guard.SessionReuse, v, p.cfg().Name, d.Winner, t.ID)
				continue
			}
		}
		dec.Outcome, dec.Candidates = d.Outcome.String(), candidatesOf(d)
		dec.Considered, dec.Eligible = d.Considered, d.Eligible
		dec.Waited = waited
		if len(d.Ranked) > 0 {
			dec.Score = d.Ranked[0].Total
		}
		switch {
		case d.Outcome == matcher.Reuse && !d.Dormant:
			s := p.sessions[d.Winner]
			p.reserveLocked(s)
			p.mu.Unlock()
			dec.Action, dec.Session = ActionReused, s.id
			score, threshold := matcher.FormatScore(dec.Score, dec.Threshold)
			dec.Reason = fmt.Sprintf("reused %s (%s > %s)", s.id, score, threshold)
			return s, p.finish(dec), nil

		case d.Outcome == matcher.Reuse && p.room():
			s := p.sessions[d.Winner]
			s.status = statusStarting
			p.procs++
			p.mu.Unlock()
			if err := p.start(ctx, s, true); err != nil {
				if ctx.Err() != nil {
					return nil, nil, err
				}
				// The session is no candidate any more: decide again,
				// and say why in the decision.
				p.logger.Warn("rehydration failed; placing the task elsewhere", "session", s.id, "error", err)
				dec.Rehydration = fmt.Sprintf("rehydrating %s failed (%v)", s.id, err)
				continue
			}
			dec.Action, dec.Session = ActionRehydrated, s.id
			score, threshold := matcher.FormatScore(dec.Score, dec.Threshold)
			dec.Reason = fmt.Sprintf("rehydrated dormant %s (%s > %s)", s.id, score, threshold)
			return s, p.finish(dec), nil

		case d.Outcome != matcher.Reuse && p.room():
			stateless := p.statelessDormantLocked()
			s := p.newSessionLocked()
			p.mu.Unlock()
			dec.Action, dec.Session = ActionSpawned, s.id
			dec.Reason = "spawned " + s.id + ": " + spawnReason(d, dec.Threshold)
			if stateless > 0 {
				// Otherwise "no session to reuse" puzzles whoever sees
				// dormant sessions listed.
				dec.Reason += fmt.Sprintf(" (%d dormant session(s) left out: their agent exported no state to rehydrate them with; see sdk.StateExporter)", stateless)
			}
			if err := p.start(ctx, s, false); err != nil {
				return nil, nil, err
			}
			return s, p.finish(dec), nil
		}

		// The pool is full. When a busy session would win, it frees up
		// soon enough: wait for it rather than put the task somewhere cold.
		if !p.busyWinnerLocked(hints, now) {
			// With retire_idle, the least recently used idle session makes
			// room: it is kept, dormant, with its context, and the task
			// gets a session of its own.
			if p.cfg().Pool.WhenFull == config.WhenFullRetireIdle {
				if v := p.idlestLocked(); v != nil {
					v.status = statusRetiring
					p.mu.Unlock()
					p.retire(v, "retired to make room for task "+t.ID)
					dec.Retired = v.id
					continue
				}
			}
			// Otherwise an idle session is the best this task can get:
			// waiting would not make a better one appear.
			if s := p.bestEligibleLiveLocked(d); s != nil {
				p.reserveLocked(s)
				p.mu.Unlock()
				dec.Action, dec.Session = ActionReused, s.id
				dec.Score = p.totalOf(d, s.id)
				score, threshold := matcher.FormatScore(dec.Score, dec.Threshold)
				dec.Reason = fmt.Sprintf("reused %s below the threshold (%s, not above %s): the pool is full at %d sessions", s.id, score, threshold, p.cfg().Pool.MaxSessions)
				return s, p.finish(dec), nil
			}
		}
		// Wait for a slot, and decide again.
		changed := p.changed
		p.mu.Unlock()
		waitStart := p.h.now()
		select {
		case <-changed:
			waited += p.h.now().Sub(waitStart)
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("agent %q: waited %s for a free session (pool full: all %d sessions busy): %w",
				p.cfg().Name, p.h.now().Sub(start).Round(time.Millisecond), p.cfg().Pool.MaxSessions, context.Cause(ctx))
		case <-p.h.closing:
			return nil, nil, ErrClosed
		}
	}
}

// finish completes a decision's reason with what happened on the way.
func (p *pool) finish(d *Decision) *Decision {
	if d.Rehydration != "" {
		d.Reason = d.Rehydration + "; " + d.Reason
	}
	if len(d.Vetoed) > 0 {
		d.Reason = fmt.Sprintf("vetoed %s; %s", strings.Join(d.Vetoed, ", "), d.Reason)
	}
	if d.Retired != "" {
		d.Reason = "retired idle " + d.Retired + " to make room; " + d.Reason
	}
	if d.Waited >= time.Millisecond {
		d.Reason = fmt.Sprintf("waited %s (pool full); %s", d.Waited.Round(time.Millisecond), d.Reason)
	}
	return d
}

func spawnReason(d matcher.Decision, threshold float64) string {
	switch d.Outcome {
	case matcher.SpawnNoCandidates:
		return "no session to reuse"
	case matcher.SpawnAllBusy:
		return fmt.Sprintf("all %d candidates busy", d.Considered)
	}
	best := d.Ranked[0]
	score, th := matcher.FormatScore(best.Total, threshold)
	return fmt.Sprintf("best score %s (%s) not above %s", score, best.ID, th)
}

func (p *pool) totalOf(d matcher.Decision, id string) float64 {
	for _, r := range d.Ranked {
		if r.ID == id {
			return r.Total
		}
	}
	return 0
}

// busyWinnerLocked reports whether a session that is busy now would win the
// task, scoring above the threshold: the decision again, with the
// sessions that could take the task now (and the dormant ones, which need
// room the pool does not have) left out.
func (p *pool) busyWinnerLocked(hints matcher.Hints, now time.Time) bool {
	exclude := p.unavailableLocked()
	for id, s := range p.sessions {
		if s.status == statusDormant || s.status == statusLive && s.load < s.capacity {
			exclude = append(exclude, id)
		}
	}
	d := p.index.Decide(hints, now, exclude...)
	return d.Outcome == matcher.SpawnAllBusy && len(d.Ranked) > 0 && d.Ranked[0].Total > p.spec.Load().mcfg.Threshold
}

// bestEligibleLiveLocked is the highest-ranked live session with a free
// slot: the ranking lists eligible candidates first.
func (p *pool) bestEligibleLiveLocked(d matcher.Decision) *session {
	for _, r := range d.Ranked {
		if r.Eligible && !r.Dormant {
			if s := p.sessions[r.ID]; s != nil && s.status == statusLive && !s.stale && s.load < s.capacity {
				return s
			}
		}
	}
	// The ranking holds the top K only; any live session with room will
	// do.
	var best *session
	for _, s := range p.sessions {
		if s.status == statusLive && !s.stale && s.load < s.capacity && (best == nil || s.lastActivity.After(best.lastActivity)) {
			best = s
		}
	}
	return best
}

// statelessDormantLocked counts the dormant sessions that are no
// candidates because their agent exported no state.
func (p *pool) statelessDormantLocked() int {
	n := 0
	for _, s := range p.sessions {
		if s.status == statusDormant && !s.hasState {
			n++
		}
	}
	return n
}

// idlestLocked is the least recently active live session running nothing.
func (p *pool) idlestLocked() *session {
	var v *session
	for _, s := range p.sessions {
		if s.status == statusLive && s.load == 0 && (v == nil || s.lastActivity.Before(v.lastActivity)) {
			v = s
		}
	}
	return v
}

func (p *pool) reserveLocked(s *session) {
	s.load++
	p.index.Upsert(s.id, p.stateLocked(s))
}

func (p *pool) newSessionLocked() *session {
	id := newSessionID(p.cfg().Name)
	s := newSession(p, id, p.h.now())
	s.status = statusStarting
	p.sessions[id] = s
	p.procs++
	return s
}

// start starts the process of a session whose status is starting, new or
// dormant. On success the session is live with one slot reserved. On
// failure a new session is forgotten; a dormant one whose rehydration
// failed stays dormant but is no longer a candidate: otherwise every
// matching task would pick it and fail the same way.
func (p *pool) start(ctx context.Context, s *session, rehydrate bool) error {
	var (
		fp   *fingerprint
		proc *process
		err  error
	)
	if rehydrate {
		fp, err = s.loadFingerprint()
	}
	if err == nil {
		sp := p.spec.Load()
		proc, err = startProcess(ctx, launch{
			agent:          sp.cfg.Name,
			session:        s.id,
			argv:           sp.argv,
			env:            sp.env,
			dir:            sp.cfg.Workspace,
			sha256:         sp.cfg.SHA256,
			startTimeout:   sp.cfg.StartTimeout,
			healthInterval: sp.cfg.HealthInterval,
			tls:            p.h.tls,
			logger:         s.logger,
			logLevel:       p.h.logger.GetLevel().String(),
			onExit:         func(pe *PluginError) { p.lost(s, pe) },
		})
	}
	if err == nil && rehydrate {
		if err = p.rehydrate(ctx, s, proc); err != nil {
			proc.stop(true)
		}
	}

	// Events and records are built under the lock and written after it:
	// a full store queue must not hold up the pool.
	var (
		ev  *Event
		rec *storepb.Session
	)
	p.mu.Lock()
	switch {
	case err == nil && s.status == statusLost:
		// The process died between its start and now; lost() has
		// accounted for the session, and the process is ours to reap.
		p.h.reaping.Go(func() { proc.stop(true) })
		err = s.lostErr
	case err != nil && s.status == statusLost:
	case err != nil && rehydrate:
		p.procs--
		s.status = statusDormant
		s.hasState = false
		s.reason = "rehydration failed: " + err.Error()
		p.index.Remove(s.id)
		rec = s.recordLocked()
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
			s.capacity = proc.info.Capacity
		}
		s.agentVersion = proc.info.Version
		s.exportsState = proc.info.ExportsState
		s.load = 1
		s.lastActivity = p.h.now()
		p.indexLocked(s)
		s.startSaver()
		rec = s.recordLocked()
		s.logger.Debug("session live", "pid", proc.pid(), "capacity", s.capacity, "rehydrated", rehydrate)
		kind, verb := EventSessionSpawned, "spawned"
		if rehydrate {
			kind, verb = EventSessionRehydrated, "rehydrated"
		}
		ev = &Event{Kind: kind, Agent: p.cfg().Name, Session: s.id, PID: proc.pid(),
			Message: fmt.Sprintf("%s %s (pid %d, capacity %d)", verb, s.id, proc.pid(), s.capacity)}
	}
	p.mu.Unlock()
	if rec != nil {
		p.h.persist(rec)
	}
	if ev != nil {
		p.h.emit(*ev)
	}
	return err
}

// rehydrate hands a fresh process the state its session exported.
func (p *pool) rehydrate(ctx context.Context, s *session, proc *process) error {
	state, err := p.h.store.SessionState(s.id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the fingerprint alone; nothing to import
	}
	if err != nil {
		return fmt.Errorf("rehydrate %s: read its state: %w", s.id, err)
	}
	ictx, cancel := context.WithTimeout(ctx, p.cfg().StartTimeout)
	defer cancel()
	if err := proc.remote.(interface {
		ImportState(context.Context, []byte) error
	}).ImportState(ictx, state); err != nil {
		perr, detail, hint := proc.callError(ictx, err)
		if perr == err {
			detail, hint = err.Error(), "the agent refused the state its session exported; the task goes to another session, and this one is not offered again"
			perr = ErrRehydrate
		}
		return proc.errorf("rehydrate", perr, detail, hint)
	}
	return nil
}

// release frees the slot a task held and records the task's effect.
func (p *pool) release(s *session, failed bool) {
	if p.released != nil {
		defer p.released(s)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.load--
	s.tasks++
	if failed {
		s.tasksFailed++
	}
	s.lastActivity = p.h.now()
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
			p.h.draining.Go(func() { p.retire(s, why) })
		}
	}
	p.notifyLocked()
}

// lost removes a session whose plugin died or hung. The pool lock orders
// it against retirement and shutdown, so a session is stopped once and
// Close sees every stop it must wait for.
func (p *pool) lost(s *session, pe *PluginError) {
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
	proc := s.proc
	if proc != nil {
		// Started under the lock, so that Close, which retires the
		// pools first, waits for this stop.
		p.h.reaping.Go(func() { proc.stop(true) })
	}
	// Still starting (proc == nil): the process is not the session's yet,
	// and the starter stops it.
	p.mu.Unlock()
	p.h.persist(rec)
	pid := 0
	if proc != nil {
		pid = proc.pid()
	}
	p.h.emit(Event{Kind: EventSessionLost, Agent: p.cfg().Name, Session: s.id, PID: pid, Err: pe.Error(),
		Message: fmt.Sprintf("lost %s: %v", s.id, pe.Err)})
}

// retire makes a live session dormant: its state is exported and stored,
// its process stopped; its fingerprint stays for the matcher, which may
// rehydrate it. The caller has set its status to retiring.
func (p *pool) retire(s *session, why string) {
	if s.external != "" {
		p.detach(s, why)
		return
	}
	s.waitSaver()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg().StartTimeout)
	state, saved := s.exportState(ctx)
	cancel()
	s.proc.stop(false)
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
		p.h.persistState(rec, state)
	} else {
		p.h.persist(rec)
	}
	p.persisted(s, fmt.Sprintf("retired %s: %s", s.id, why), evicted)
}

// dormantLocked makes s dormant for why, a candidate of the index or
// not, and returns its record, fingerprint included, for the caller to
// queue, and the sessions evicted to make room. Until the caller has
// queued the record and called persisted, s is not evicted: a delete
// queued first would be undone by the record.
func (p *pool) dormantLocked(s *session, why string, candidate bool) (*storepb.Session, []string) {
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
func (p *pool) persisted(s *session, msg string, evicted []string) {
	p.mu.Lock()
	s.persisting = false
	p.mu.Unlock()
	p.h.emit(Event{Kind: EventSessionRetired, Agent: p.cfg().Name, Session: s.id, Message: msg})
	p.deleteEvicted(evicted)
}

// deleteEvicted deletes the records of sessions evicted beyond
// max_dormant.
func (p *pool) deleteEvicted(ids []string) {
	for _, id := range ids {
		if err := p.h.store.DeleteSession(context.Background(), id); err != nil {
			p.logger.Warn("cannot delete an evicted dormant session", "session", id, "error", err)
		}
	}
}

// evictDormantLocked forgets the least recently active dormant sessions
// beyond max_dormant and returns them for deletion from the store.
func (p *pool) evictDormantLocked() []string {
	var dormant []*session
	for _, s := range p.sessions {
		if (s.status == statusDormant || s.status == statusLost) && !s.persisting {
			dormant = append(dormant, s)
		}
	}
	if len(dormant) <= p.cfg().Pool.MaxDormant {
		return nil
	}
	sort.Slice(dormant, func(i, j int) bool { return dormant[i].lastActivity.After(dormant[j].lastActivity) })
	var ids []string
	for _, s := range dormant[p.cfg().Pool.MaxDormant:] {
		delete(p.sessions, s.id)
		p.index.Remove(s.id)
		ids = append(ids, s.id)
	}
	return ids
}

// retireIdle retires the live sessions idle past the idle timeout.
func (p *pool) retireIdle(now time.Time) {
	p.mu.Lock()
	var idle []*session
	for _, s := range p.sessions {
		// An external session's turn has no end the host sees if its
		// program died: idle long enough, it is dormant even "busy".
		if s.status == statusLive && (s.load == 0 || s.external != "") && now.Sub(s.lastActivity) >= p.cfg().Pool.IdleTimeout {
			s.status = statusRetiring
			idle = append(idle, s)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Go(func() { p.retire(s, fmt.Sprintf("idle for more than %s", p.cfg().Pool.IdleTimeout)) })
	}
	wg.Wait()
}

// retireAll retires every live session: the host is shutting down.
func (p *pool) retireAll(why string) {
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

// restore loads the agent's sessions from the store: all dormant, since no
// process survives a host. Sessions that were live when the host stopped
// without retiring them (kill -9) get the tool uses logged after their
// last snapshot replayed into their fingerprint.
func (p *pool) restore(recs []*storepb.Session) error {
	fix, evicted, err := p.restoreLocked(recs)
	if err != nil {
		return err
	}
	for _, id := range evicted {
		if err := p.h.store.DeleteSession(context.Background(), id); err != nil {
			// Not worth refusing to start over: the next restart tries
			// again.
			p.logger.Warn("cannot delete a dormant session beyond max_dormant", "session", id, "error", err)
		}
	}
	// Startup finishes its own writes before the host takes work.
	for _, r := range fix {
		if err := p.h.persist(r).Wait(context.Background()); err != nil {
			return fmt.Errorf("restore session %s: %w", r.GetId(), err)
		}
	}
	return nil
}

func (p *pool) restoreLocked(recs []*storepb.Session) (fix []*storepb.Session, evicted []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range recs {
		s := newSession(p, r.GetId(), time.Unix(0, r.GetCreatedUnixNano()))
		s.fromRecord(r)
		if r.GetStatus() == storepb.SessionStatus_SESSION_LOST {
			s.status = statusLost
			s.fp = nil
			p.sessions[s.id] = s
			continue
		}
		s.status = statusDormant
		evs, err := p.h.store.Events(s.id, r.GetFingerprintSeq(), 0)
		if err != nil {
			return nil, nil, fmt.Errorf("restore session %s: %w", s.id, err)
		}
		for _, ev := range evs {
			s.replay(ev)
		}
		if r.GetStatus() != storepb.SessionStatus_SESSION_DORMANT || len(evs) > 0 {
			if r.GetStatus() == storepb.SessionStatus_SESSION_LIVE {
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
func (p *pool) observeLocked(s *session, u sdk.ToolUse) {
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
func (p *pool) applyLocked(s *session, c change) {
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
