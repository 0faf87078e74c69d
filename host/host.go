package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// Errors of the Host's API.
var (
	// ErrClosed is returned for work submitted to a host that is shutting
	// down.
	ErrClosed = errors.New("host is shutting down")
	// ErrUnknownAgent is returned for a task naming no configured agent.
	ErrUnknownAgent = errors.New("no such agent")
	// ErrRehydrate: a dormant session's state was refused by its agent.
	ErrRehydrate = errors.New("cannot rehydrate the session")
	// ErrUnknownSession is returned for a session ID the host never had.
	ErrUnknownSession = errors.New("no such session")
)

// BundledFunc returns the command and extra environment that serve the
// bundled agent name, and whether there is one. cmd/hearth re-executes the
// hearth binary.
type BundledFunc func(name string) (argv, env []string, ok bool)

// Options configure a Host. Config is required.
type Options struct {
	Config *config.Config
	Logger hclog.Logger
	// Bundled resolves `bundled = "name"` agents.
	Bundled BundledFunc
	// Store is the host's database. When nil, the host opens
	// Config.DataDir and closes it on Close.
	Store *store.Store
	// Command names the process in the data directory's owner record,
	// which a second hearth refused the directory reads ("hearth run").
	Command string
	// Now is the host's clock; time.Now when nil.
	Now func() time.Time
	// ReapInterval is how often idle sessions are looked for; by default a
	// quarter of the shortest idle timeout, at most a minute.
	ReapInterval time.Duration
	// Observe, when set, is told of every event as the host emits it,
	// tool uses included, before it is on disk: what metrics count. It is
	// called on the host's hot paths, so it must be quick and must not
	// block.
	Observe func(*Event)
}

// Host runs agents as plugin processes, pools their sessions, places each
// task on the session that knows most of what it needs, and keeps it all
// in a store. Its methods are safe for concurrent use.
//
// Lifecycle: New opens the data directory and restores every session of
// the configured agents as dormant (no plugin outlives a host), with its
// fingerprint. Submit places and runs tasks; live sessions idle past their
// pool's idle_timeout are retired (made dormant: state exported, process
// stopped). Close retires every live session and closes the store.
type Host struct {
	// mu guards cfg and pools, which a reload replaces.
	mu        sync.RWMutex
	cfg       *config.Config
	logger    hclog.Logger
	bundled   BundledFunc
	now       func() time.Time
	store     *store.Store
	ownsStore bool

	pools   map[string]*pool
	events  bus
	observe func(*Event)
	tls     *sdk.HostTLS
	guards  atomic.Pointer[guard.Set]

	// closing is closed when Close begins: no new work is accepted.
	closing   chan struct{}
	closeOnce sync.Once
	closeErr  error
	// hardStop is cancelled when the shutdown grace period is over: tasks
	// still running are cancelled.
	hardStop       context.Context
	hardStopCancel context.CancelFunc
	inflight       sync.WaitGroup
	inflightMu     sync.Mutex // orders inflight.Add against Close's Wait
	// reaping tracks plugins being stopped after they died or hung;
	// draining, sessions retired because a reload changed their agent.
	reaping  sync.WaitGroup
	draining sync.WaitGroup
	reaper   sync.WaitGroup

	// runs are the runs this host executes, or holds while an operation
	// (cancel, revisit) acts on their records; runsWG counts their loops.
	runsMu     sync.Mutex
	runs       map[string]*runExec
	runsClosed bool
	runsWG     sync.WaitGroup
	// lastSweep is when retention last ran (reaper goroutine, and New).
	lastSweep time.Time
}

// New starts a host for opts.Config. It spawns nothing until work arrives.
func New(opts Options) (*Host, error) {
	if opts.Config == nil {
		return nil, errors.New("host: Options.Config is nil; load one with config.Load or use config.Default")
	}
	h := &Host{
		cfg:     opts.Config,
		logger:  opts.Logger,
		bundled: opts.Bundled,
		now:     opts.Now,
		store:   opts.Store,
		pools:   make(map[string]*pool),
		runs:    make(map[string]*runExec),
		closing: make(chan struct{}),
		observe: opts.Observe,
	}
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.hardStop, h.hardStopCancel = context.WithCancel(context.Background())
	h.guards.Store(h.cfg.GuardSet())
	var err error
	if h.tls, err = sdk.NewHostTLS(); err != nil {
		return nil, fmt.Errorf("host: make the TLS keys plugins are reached with: %w", err)
	}
	if h.store == nil {
		if h.store, err = store.Open(h.cfg.DataDir, store.Options{Logger: h.logger.Named("store"), Command: opts.Command}); err != nil {
			return nil, err
		}
		h.ownsStore = true
	}
	fail := func(err error) (*Host, error) {
		if h.ownsStore {
			_ = h.store.Close()
		}
		return nil, err
	}
	for _, a := range h.cfg.Agents {
		argv, env, err := h.command(a)
		if err != nil {
			return fail(err)
		}
		if h.pools[a.Name], err = newPool(h, a, h.cfg.Matcher, argv, env); err != nil {
			return fail(err)
		}
	}
	if err := h.restore(); err != nil {
		return fail(err)
	}
	if err := h.recoverRuns(); err != nil {
		return fail(err)
	}
	h.sweepRuns()
	reap := opts.ReapInterval
	if reap <= 0 {
		reap = time.Minute
		for _, a := range h.cfg.Agents {
			reap = min(reap, a.Pool.IdleTimeout/4)
		}
		reap = max(reap, 10*time.Millisecond)
	}
	h.reaper.Add(1)
	go h.reapLoop(reap)
	return h, nil
}

func (h *Host) restore() error {
	return h.restorePools(h.pools)
}

// restorePools loads the sessions of the agents of pools from the store.
func (h *Host) restorePools(pools map[string]*pool) error {
	recs, err := h.store.Sessions()
	if err != nil {
		return fmt.Errorf("host: read sessions: %w", err)
	}
	byAgent := make(map[string][]*storepb.Session)
	for _, r := range recs {
		byAgent[r.GetAgent()] = append(byAgent[r.GetAgent()], r)
	}
	for name, p := range pools {
		if err := p.restore(byAgent[name]); err != nil {
			return err
		}
	}
	return nil
}

// poolList returns the pools in force.
func (h *Host) poolList() []*pool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]*pool, 0, len(h.pools))
	for _, p := range h.pools {
		out = append(out, p)
	}
	return out
}

// config returns the config in force.
func (h *Host) config() *config.Config {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.cfg
}

func (h *Host) command(a *config.Agent) (argv, env []string, err error) {
	if a.Bundled == "" {
		return a.Command, nil, nil
	}
	if h.bundled == nil {
		return nil, nil, fmt.Errorf("agent %q is bundled agent %q, but this host serves no bundled agents", a.Name, a.Bundled)
	}
	argv, env, ok := h.bundled(a.Bundled)
	if !ok {
		return nil, nil, fmt.Errorf("agent %q: no bundled agent named %q", a.Name, a.Bundled)
	}
	return argv, env, nil
}

func (h *Host) reapLoop(every time.Duration) {
	defer h.reaper.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.closing:
			return
		case <-t.C:
			now := h.now()
			for _, p := range h.poolList() {
				p.retireIdle(now)
			}
			if now.Sub(h.lastSweep) >= sweepEvery {
				h.sweepRuns()
			}
		}
	}
}

// Task is work for one agent, as an orchestrator submits it.
type Task struct {
	// Agent is the configured agent to run the task.
	Agent string `json:"agent"`
	// ID identifies the task; one is generated when empty.
	ID       string            `json:"id,omitempty"`
	Name     string            `json:"name,omitempty"`
	Prompt   string            `json:"prompt"`
	Hints    sdk.Hints         `json:"hints"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Run, IdempotencyKey and Attempt are set by the host for the tasks
	// of a run; a task submitted on its own leaves them empty.
	Run            string `json:"run,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Attempt        int    `json:"attempt,omitempty"`
}

// Outcome is what Submit returns for a task that ran.
type Outcome struct {
	TaskID   string              `json:"task_id"`
	Agent    string              `json:"agent"`
	Session  string              `json:"session"`
	Decision Decision            `json:"decision"`
	Result   sdk.Result          `json:"result"`
	Artifact sdk.ContextArtifact `json:"artifact"`
	// Gate is the task_result guard that fired on the result, if any: the
	// result stands, but the guard asks for a retry or for the work to go
	// back to an earlier task (runs act on it).
	Gate *Gate `json:"gate,omitempty"`
	// Duration is the wall time from submission to result.
	Duration time.Duration `json:"duration"`
}

// Submit places t on a session of its agent, runs it and returns the
// result, the context artifact the agent left and the placement decision.
// It blocks until the task is done, ctx is done, or the host shuts down.
func (h *Host) Submit(ctx context.Context, t Task) (*Outcome, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	p, err := h.pool(t.Agent)
	if err != nil {
		return nil, err
	}
	if err := p.runnable(); err != nil {
		return nil, err
	}
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	if err := h.admit(t, guard.Run{}); err != nil {
		return nil, err
	}
	return h.execute(ctx, p, t, guard.Run{})
}

// execute places and runs an admitted task. run is the run it belongs
// to, as its result guards see it.
func (h *Host) execute(ctx context.Context, p *pool, t Task, run guard.Run) (*Outcome, error) {
	start := h.now()
	s, d, err := p.acquire(ctx, t)
	if err != nil {
		h.emit(Event{Kind: EventTaskFailed, Agent: t.Agent, Task: t.ID, Err: err.Error(), Message: t.ID + " could not be placed"})
		return nil, err
	}
	h.emitDecision(d, t.Run)
	res, art, err := s.run(ctx, t, h.hardStop)
	p.release(s, err != nil)
	if err != nil {
		return nil, err
	}
	return &Outcome{
		Gate:     h.gate(t, s.id, res, run),
		TaskID:   t.ID,
		Agent:    t.Agent,
		Session:  s.id,
		Decision: *d,
		Result:   res,
		Artifact: art,
		Duration: h.now().Sub(start),
	}, nil
}

// Place says where a task for agent with hints would run now, and why,
// without running anything: the decision Submit would start from. Its
// Action is what the host would do if nothing changed in between.
func (h *Host) Place(agent string, hints sdk.Hints) (Decision, error) {
	p, err := h.pool(agent)
	if err != nil {
		return Decision{}, err
	}
	md := p.place(normalizeHints(hints, p.cfg().Workspace))
	d := Decision{Agent: agent, Outcome: md.Outcome.String(), Threshold: md.Threshold, Candidates: candidatesOf(md),
		Considered: md.Considered, Eligible: md.Eligible, Hints: hints, External: p.cfg().External}
	if len(md.Ranked) > 0 {
		d.Score = md.Ranked[0].Total
	}
	score, threshold := matcher.FormatScore(d.Score, d.Threshold)
	switch {
	case d.External != "" && md.Winner != "":
		// Nothing to spawn or rehydrate: the session's own program resumes
		// it, where it worked.
		d.Action, d.Session = ActionResume, md.Winner
		d.Resume, d.Workspace = ResumeCommand(d.External, md.Winner), p.workspaceOf(md.Winner)
		d.Reason = fmt.Sprintf("would resume %s session %s (%s > %s): %s", d.External, md.Winner, score, threshold, d.Resume)
	case d.External != "":
		d.Action = ActionSpawned
		d.Reason = fmt.Sprintf("would start a new %s session: %s", d.External, spawnReason(md, md.Threshold))
	case md.Dormant:
		d.Action, d.Session = ActionRehydrated, md.Winner
		d.Reason = fmt.Sprintf("would rehydrate dormant %s (%s > %s)", md.Winner, score, threshold)
	case md.Winner != "":
		d.Action, d.Session = ActionReused, md.Winner
		d.Reason = fmt.Sprintf("would reuse %s (%s > %s)", md.Winner, score, threshold)
	default:
		d.Action = ActionSpawned
		d.Reason = "would spawn: " + spawnReason(md, md.Threshold)
	}
	return d, nil
}

// enter registers one unit of in-flight work, unless the host is closing.
func (h *Host) enter() error {
	h.inflightMu.Lock()
	defer h.inflightMu.Unlock()
	select {
	case <-h.closing:
		return ErrClosed
	default:
	}
	h.inflight.Add(1)
	return nil
}

func (h *Host) pool(agent string) (*pool, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p, ok := h.pools[agent]
	if !ok {
		names := make([]string, 0, len(h.pools))
		for n := range h.pools {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q; configured agents: %s", ErrUnknownAgent, agent, strings.Join(names, ", "))
	}
	return p, nil
}

// AgentStatus describes one configured agent.
type AgentStatus struct {
	Name    string   `json:"name"`
	Bundled string   `json:"bundled,omitempty"`
	Command []string `json:"command,omitempty"`
	// External is the kind of an external agent's sessions.
	External string `json:"external,omitempty"`
	// Live and Dormant count the agent's sessions.
	Live    int `json:"live"`
	Dormant int `json:"dormant"`
}

// Agents lists the configured agents in config order.
func (h *Host) Agents() []AgentStatus {
	h.mu.RLock()
	cfg, pools := h.cfg, h.pools
	h.mu.RUnlock()
	var out []AgentStatus
	for _, a := range cfg.Agents {
		st := AgentStatus{Name: a.Name, Bundled: a.Bundled, Command: slices.Clone(a.Command), External: a.External}
		p := pools[a.Name]
		if p == nil {
			continue
		}
		p.mu.Lock()
		for _, s := range p.sessions {
			switch s.status {
			case statusLive, statusStarting, statusRetiring:
				st.Live++
			case statusDormant:
				st.Dormant++
			}
		}
		p.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// emit records an event in the store and publishes it to subscribers
// once it is on disk. The write is not waited for: events that
// acknowledge something to someone (tool uses, decisions) are waited for
// by their callers.
func (h *Host) emit(e Event) *store.Pending {
	_, p := h.append(e)
	return p
}

// append is emit, with the event's sequence number in the store.
func (h *Host) append(e Event) (uint64, *store.Pending) {
	if e.Time.IsZero() {
		e.Time = h.now()
	}
	if h.observe != nil {
		h.observe(&e)
	}
	rec := e.record()
	p := h.store.Append(rec)
	h.events.publishDurable(e, p)
	return rec.GetSeq(), p
}

// SessionCount is how many sessions of an agent are in a status.
type SessionCount struct {
	Agent  string
	Status string
	N      int
}

// SessionCounts counts the sessions by agent and status (live, starting,
// retiring, dormant, lost), without reading the store: what a metrics
// scrape asks for.
func (h *Host) SessionCounts() []SessionCount {
	var out []SessionCount
	for _, p := range h.poolList() {
		n := make(map[sessionStatus]int)
		p.mu.Lock()
		for _, s := range p.sessions {
			n[s.status]++
		}
		p.mu.Unlock()
		for st := statusStarting; st <= statusLost; st++ {
			out = append(out, SessionCount{Agent: p.cfg().Name, Status: st.String(), N: n[st]})
		}
	}
	return out
}

// StoreSize is the size of the store's files: its LSM tree and its value
// log.
func (h *Host) StoreSize() (lsm, vlog int64) { return h.store.Size() }

// DataDir is the data directory the host keeps its store in.
func (h *Host) DataDir() string { return h.store.Dir() }

// Config returns the configuration in force (it changes on Reload).
func (h *Host) Config() *config.Config { return h.config() }

func (h *Host) emitDecision(d *Decision, run string) {
	p := h.emit(Event{Kind: EventDecision, Agent: d.Agent, Session: d.Session, Task: d.Task, Run: run, Message: d.Reason, Decision: d})
	// The decision is part of the task's answer: durable before the task
	// runs, so that a crash mid-task leaves the reason it ran where it did.
	if err := p.Wait(context.Background()); err != nil {
		h.logger.Warn("cannot record a decision", "task", d.Task, "error", err)
	}
}

// persist snapshots a session record, in the background.
func (h *Host) persist(rec *storepb.Session) *store.Pending {
	return h.store.SaveSession(rec)
}

// persistState snapshots a session record with its agent's state, in the
// background.
func (h *Host) persistState(rec *storepb.Session, state []byte) *store.Pending {
	return h.store.SaveSessionState(rec, state)
}

// Close shuts the host down. New work is refused at once; tasks in flight
// may finish until ctx is done (the grace period), after which they are
// cancelled. Then every live session is retired: its state exported and
// kept, its plugin stopped, process group and all. Close returns once no
// plugin process is left and the store is closed.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.inflightMu.Lock()
		close(h.closing)
		h.inflightMu.Unlock()
		// Runs start no new task; their tasks in flight finish within
		// the grace period like any other, then the runs pause.
		h.stopRuns()
		done := make(chan struct{})
		go func() {
			h.inflight.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			h.logger.Warn("shutdown grace period over or cut short; cancelling tasks in flight")
			h.hardStopCancel()
			<-done
		}
		h.hardStopCancel()
		h.runsWG.Wait()
		h.reaper.Wait()
		var wg sync.WaitGroup
		for _, p := range h.poolList() {
			wg.Go(func() { p.retireAll("the host shut down") })
		}
		wg.Wait()
		h.draining.Wait()
		h.reaping.Wait()
		if h.ownsStore {
			h.closeErr = h.store.Close()
		}
		h.events.wait()
	})
	return h.closeErr
}

// taskTimeoutError is the cancellation cause of a task that ran past its
// agent's task_timeout.
type taskTimeoutError struct{ d time.Duration }

func (e taskTimeoutError) Error() string {
	return fmt.Sprintf("task did not finish within its %s task_timeout", e.d)
}

func (e taskTimeoutError) Unwrap() error { return context.DeadlineExceeded }
