package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// summarizeTimeout bounds the call that collects a task's artifact.
const summarizeTimeout = 30 * time.Second

// pool holds the live sessions of one agent and places tasks on them.
type pool struct {
	h      *Host
	cfg    *config.Agent
	argv   []string
	env    []string
	logger hclog.Logger

	mu       sync.Mutex
	sessions map[string]*session
	starting int
	// changed is closed, and replaced, whenever a slot frees up or a
	// session leaves, to wake tasks waiting for room.
	changed chan struct{}
}

func newPool(h *Host, a *config.Agent, argv, env []string) *pool {
	return &pool{
		h: h, cfg: a, argv: argv,
		env:      append(envList(a.Env), env...),
		logger:   h.logger.Named(a.Name),
		sessions: make(map[string]*session),
		changed:  make(chan struct{}),
	}
}

func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// notifyLocked wakes every task waiting for room. p.mu must be held.
func (p *pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *pool) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// acquire returns a live session with a slot reserved for one task:
// a warm session with a free slot, else a new one while the pool has room,
// else the first to free up.
func (p *pool) acquire(ctx context.Context) (*session, Placement, error) {
	start := p.h.now()
	for {
		p.mu.Lock()
		if s := p.pickLocked(); s != nil {
			s.load++
			p.mu.Unlock()
			return s, Placement{Waited: p.h.now().Sub(start), Reason: "reused warm session " + s.id + " with a free slot"}, nil
		}
		if len(p.sessions)+p.starting < p.cfg.Pool.MaxSessions {
			p.starting++
			p.mu.Unlock()
			s, err := p.spawn(ctx)
			p.mu.Lock()
			p.starting--
			if err != nil {
				p.notifyLocked()
				p.mu.Unlock()
				return nil, Placement{}, err
			}
			s.load = 1
			p.sessions[s.id] = s
			p.mu.Unlock()
			return s, Placement{Spawned: true, Waited: p.h.now().Sub(start), Reason: "spawned " + s.id + ": no warm session had a free slot"}, nil
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, Placement{}, fmt.Errorf("agent %q: waited %s for a free session (pool full at %d): %w",
				p.cfg.Name, p.h.now().Sub(start).Round(time.Millisecond), p.cfg.Pool.MaxSessions, context.Cause(ctx))
		case <-p.h.closing:
			return nil, Placement{}, ErrClosed
		}
	}
}

// pickLocked returns the live session with a free slot that is least
// loaded, then most recently used, then first by ID.
func (p *pool) pickLocked() *session {
	var best *session
	for _, s := range p.sessions {
		if s.load >= s.capacity {
			continue
		}
		if best == nil || better(s, best) {
			best = s
		}
	}
	return best
}

func better(a, b *session) bool {
	ra, rb := float64(a.load)/float64(a.capacity), float64(b.load)/float64(b.capacity)
	if ra != rb {
		return ra < rb
	}
	if !a.lastUsed.Equal(b.lastUsed) {
		return a.lastUsed.After(b.lastUsed)
	}
	return a.id < b.id
}

func (p *pool) release(s *session) {
	p.mu.Lock()
	s.load--
	s.lastUsed = p.h.now()
	p.notifyLocked()
	p.mu.Unlock()
}

// spawn starts a new session: a plugin process, handshake and Describe.
func (p *pool) spawn(ctx context.Context) (*session, error) {
	id := newSessionID(p.cfg.Name)
	s := &session{id: id, pool: p, logger: p.logger.With("session", id)}
	proc, err := startProcess(ctx, launch{
		agent:          p.cfg.Name,
		session:        id,
		argv:           p.argv,
		env:            p.env,
		dir:            p.cfg.Workspace,
		sha256:         p.cfg.SHA256,
		startTimeout:   p.cfg.StartTimeout,
		healthInterval: p.cfg.HealthInterval,
		tls:            p.h.tls,
		logger:         s.logger,
		logLevel:       p.h.logger.GetLevel().String(),
		onExit:         func(pe *PluginError) { p.lost(s, pe) },
	})
	if err != nil {
		return nil, err
	}
	s.proc = proc
	s.capacity = p.cfg.Capacity
	if s.capacity < 1 {
		s.capacity = proc.info.Capacity
	}
	s.logger.Debug("session started", "pid", proc.pid(), "capacity", s.capacity)
	p.h.publish(Event{Kind: EventSessionSpawned, Agent: p.cfg.Name, Session: id, PID: proc.pid(),
		Message: fmt.Sprintf("spawned %s (pid %d, capacity %d)", id, proc.pid(), s.capacity)})
	return s, nil
}

// lost removes a session whose plugin died or hung, and reaps it. The pool
// lock orders it against stopAll, so a session is reaped once and Close
// sees every reaping it must wait for.
func (p *pool) lost(s *session, pe *PluginError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.dead {
		return
	}
	s.dead = true
	s.lostErr = pe
	delete(p.sessions, s.id)
	p.notifyLocked()
	p.h.publish(Event{Kind: EventSessionLost, Agent: p.cfg.Name, Session: s.id, PID: s.proc.pid(), Err: pe.Error(),
		Message: fmt.Sprintf("lost %s: %v", s.id, pe.Err)})
	// Reaped in the background, so the caller (the task that noticed, or
	// the watcher) is not held up.
	p.h.reaping.Go(func() { s.proc.stop(true) })
}

// stopAll stops every live session's plugin, gracefully.
func (p *pool) stopAll() {
	p.mu.Lock()
	sessions := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		s.dead = true
		sessions = append(sessions, s)
	}
	clear(p.sessions)
	p.notifyLocked()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			s.proc.stop(false)
			p.h.publish(Event{Kind: EventSessionStopped, Agent: p.cfg.Name, Session: s.id, PID: s.proc.pid(), Message: "stopped " + s.id})
		})
	}
	wg.Wait()
}

// session is one live instance of an agent: a plugin process that runs up
// to capacity tasks at once.
type session struct {
	id     string
	pool   *pool
	proc   *process
	logger hclog.Logger

	// Guarded by pool.mu.
	capacity int
	load     int
	lastUsed time.Time
	dead     bool
	lostErr  *PluginError
}

// newSessionID returns "<agent>-<8 hex digits>": short enough to type in
// `hearth sessions show`, random enough for one host's lifetime of sessions.
func newSessionID(agent string) string {
	return sdk.NewID(agent)[:len(agent)+1+8]
}

// run runs one task on the session. The task is cancelled when ctx is
// done, when it runs past its agent's task_timeout (the plugin is then
// considered hung and stopped), or when the host's shutdown grace period
// ends.
func (s *session) run(ctx context.Context, t Task, hardStop context.Context) (sdk.Result, sdk.ContextArtifact, error) {
	cfg := s.pool.cfg
	base, cancelBase := context.WithCancelCause(ctx)
	defer cancelBase(nil)
	unhook := context.AfterFunc(hardStop, func() { cancelBase(ErrClosed) })
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
		Name:           t.Name,
		Session:        s.id,
		Prompt:         t.Prompt,
		Hints:          t.Hints,
		IdempotencyKey: t.ID,
		Attempt:        1,
		Metadata:       t.Metadata,
	}
	th := &taskHost{s: s, task: t.ID}
	op := "run task " + t.ID
	s.pool.h.publish(Event{Kind: EventTaskStarted, Agent: cfg.Name, Session: s.id, Task: t.ID, Message: "started " + t.ID + " on " + s.id})
	res, err := s.proc.remote.Run(tctx, st, th)
	if err != nil {
		err = s.runError(tctx, op, err)
		s.pool.h.publish(Event{Kind: EventTaskFailed, Agent: cfg.Name, Session: s.id, Task: t.ID, Err: err.Error(), Message: t.ID + " failed"})
		return res, sdk.ContextArtifact{}, err
	}
	sctx, scancel := context.WithTimeout(base, summarizeTimeout)
	defer scancel()
	art, err := s.proc.remote.Summarize(sctx, t.ID)
	if err != nil {
		err = s.runError(sctx, "summarize task "+t.ID, err)
		s.pool.h.publish(Event{Kind: EventTaskFailed, Agent: cfg.Name, Session: s.id, Task: t.ID, Err: err.Error(), Message: t.ID + " failed"})
		return res, art, err
	}
	s.pool.h.publish(Event{Kind: EventTaskSucceeded, Agent: cfg.Name, Session: s.id, Task: t.ID, Message: t.ID + " succeeded"})
	return res, art, nil
}

// runError explains a failed call: a hung or dead plugin becomes a
// *PluginError (and the session is stopped); a failure of the task itself
// is wrapped with the agent, session and task it belongs to.
func (s *session) runError(ctx context.Context, op string, err error) error {
	var timeout taskTimeoutError
	if errors.As(context.Cause(ctx), &timeout) {
		pe := s.proc.errorf(op, ErrPluginHung, timeout.Error(),
			"the session was stopped; raise the agent's task_timeout if the task is only slow")
		s.pool.lost(s, pe)
		return pe
	}
	if perr, detail, hint := s.proc.callError(ctx, err); perr != err {
		pe := s.proc.errorf(op, perr, detail, hint)
		s.pool.lost(s, pe)
		return pe
	}
	if errors.Is(err, sdk.ErrAgentPanicked) {
		s.pool.lost(s, s.proc.errorf(op, err, "", "the session was retired because its state may be broken"))
	}
	if c := context.Cause(ctx); c != nil && errors.Is(c, ErrClosed) {
		return fmt.Errorf("agent %q (session %s): %s: %w", s.pool.cfg.Name, s.id, op, ErrClosed)
	}
	return fmt.Errorf("agent %q (session %s): %s: %w", s.pool.cfg.Name, s.id, op, err)
}
