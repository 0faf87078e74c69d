// Package engine is hearth's in-process engine, Engine: the composition
// root of one host, which wires a store (host/store), one pool per agent
// (host/pool), the run engine (host/runs) and the guards (host/guard)
// together, owns the event bus, and implements the services of package
// hearth (the vocabulary). engine.New starts one on a config; the daemon
// (host/api) serves one; the CLI runs one when no daemon serves the data
// directory.
//
// # Lifecycle
//
// New opens the data directory and restores every session of the
// configured agents as dormant (no plugin outlives a host), with its
// fingerprint, and pauses the runs a crashed host left running. Submit
// and StartRun place and run work; live sessions idle past their pool's
// idle_timeout are retired (made dormant: state exported, process
// stopped), and runs' retention is applied, by a background reaper. Close
// refuses new work, lets tasks in flight finish until its context is
// done, cancels the rest, retires every live session and closes the
// store. No plugin process outlives Close.
//
// # Cluster
//
// With a cluster block, `hearth serve` makes the host a member of a
// cluster: it hands the engine a host/cluster/member.Member as
// Options.Cluster, which New attaches to the host's parts (cluster.go),
// and joins it once the daemon listens. Submit and Place then ask the
// member, which decides over every host's sessions (the pools hold the
// other hosts' sessions too) and forwards a task to the host that wins
// it, or runs it here; the member also runs what other hosts forward
// here. Runs and their tasks stay on this host. The engine knows the
// member only as its Cluster interface over package cluster's contract
// (cluster.Deps): it links neither the member nor etcd's client.
//
// # Events
//
// Every event is written to the store and published to subscribers once
// it is on disk, in the order it was emitted (events.go); tool uses, at
// up to 100k/s, are published as they arrive and are durable before
// their task's stream is acknowledged.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/runs"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/scratch"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// BundledFunc returns the command and extra environment that serve the
// bundled agent name, and whether there is one. cmd/hearth re-executes the
// hearth binary.
type BundledFunc func(name string) (argv, env []string, ok bool)

// Options configure an Engine. Config is required.
type Options struct {
	Config *config.Config
	Logger hclog.Logger
	// Bundled resolves `bundled = "name"` agents; BundledNames lists
	// them, for config files a run is started from.
	Bundled      BundledFunc
	BundledNames []string
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
	// Version is the hearth the host runs in, which Status reports.
	Version string
	// Cluster, when set, is the cluster the host is a member of
	// (host/cluster/member); New attaches it to the host's parts.
	Cluster Cluster
	// Observe, when set, is told of every event as the host emits it,
	// tool uses included, before it is on disk: what metrics count. It is
	// called on the host's hot paths, so it must be quick and must not
	// block.
	Observe func(*hearth.Event)
	// Telemetry is the host's tracing (internal/telemetry); nil: none.
	// The engine does not shut it down: its owner does, after Close.
	Telemetry *telemetry.Provider
}

// Engine is the in-process engine, the composition root of one host. Its
// methods are safe for concurrent use.
type Engine struct {
	// mu guards cfg and pools, which a reload replaces.
	mu           sync.RWMutex
	cfg          *config.Config
	logger       hclog.Logger
	bundled      BundledFunc
	bundledNames []string
	now          func() time.Time
	version      string
	started      time.Time
	store        *store.Store
	ownsStore    bool
	// sweeper removes what dead hosts left in the temporary directory.
	sweeper *scratch.Sweeper

	pools   map[string]*pool.Pool
	runs    *runs.Runs
	events  bus
	observe func(*hearth.Event)
	tls     *plugin.HostTLS
	guards  atomic.Pointer[guard.Set]
	// protect are the paths no confined plugin reaches, blobDir the run
	// files confined plugins read (confine.go): fixed at New, as the
	// data directory is.
	protect []string
	blobDir string

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
	// retiring tracks pools a reload removed, whose sessions are retired
	// as they go idle.
	retiring []*pool.Pool
	reaper   sync.WaitGroup
	// cluster is the cluster the host is a member of (cluster.go); nil
	// without a cluster block.
	cluster Cluster
	// telemetry is the host's tracing, and tracer the engine's spans
	// (trace.go).
	telemetry *telemetry.Provider
	tracer    trace.Tracer
}

// The engine is every service of the vocabulary: the daemon serves it
// through them, and the CLI works on it, or on the daemon's client,
// through the same ones.
var (
	_ hearth.Service      = (*Engine)(nil)
	_ hearth.EventSource  = (*Engine)(nil)
	_ hearth.StatusReader = (*Engine)(nil)
	_ hearth.Admin        = (*Engine)(nil)
)

// New starts a host for opts.Config. It spawns nothing until work arrives.
func New(opts Options) (*Engine, error) {
	if opts.Config == nil {
		return nil, errors.New("engine: Options.Config is nil; load one with config.Load or use config.Default")
	}
	h := &Engine{
		cfg:          opts.Config,
		logger:       opts.Logger,
		bundled:      opts.Bundled,
		bundledNames: opts.BundledNames,
		now:          opts.Now,
		version:      opts.Version,
		store:        opts.Store,
		pools:        make(map[string]*pool.Pool),
		closing:      make(chan struct{}),
		observe:      opts.Observe,
		cluster:      opts.Cluster,
		telemetry:    opts.Telemetry,
	}
	if h.telemetry == nil {
		h.telemetry = telemetry.Off()
	}
	h.tracer = h.telemetry.TracerProvider().Tracer(scope)
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.started = h.now()
	h.hardStop, h.hardStopCancel = context.WithCancel(context.Background())
	h.guards.Store(h.cfg.GuardSet())
	var err error
	if h.tls, err = plugin.NewHostTLS(); err != nil {
		return nil, fmt.Errorf("engine: make the TLS keys plugins are reached with: %w", err)
	}
	if h.store == nil {
		// The store block's settings, zero where the file leaves one
		// out: the store's default.
		st := h.cfg.Store
		so := store.Options{MinFreeSpace: st.MinFreeSpace, StallTimeout: st.StallTimeout, CloseTimeout: st.CloseTimeout,
			Logger: h.logger.Named("store"), Command: opts.Command}
		if h.store, err = store.Open(h.cfg.DataDir, store.Write, so); err != nil {
			return nil, err
		}
		h.ownsStore = true
	}
	fail := func(err error) (*Engine, error) {
		if h.ownsStore {
			_ = h.store.Close()
		}
		return nil, err
	}
	h.runs = h.newRuns()
	if err := h.checkConfinement(); err != nil {
		return fail(err)
	}
	h.protect, h.blobDir = protected(h.cfg), h.blobs()
	for _, a := range h.cfg.Agents {
		p, err := h.newPool(a, h.cfg.Matcher)
		if err != nil {
			return fail(err)
		}
		h.pools[a.Name] = p
	}
	if err := h.restorePools(h.pools); err != nil {
		return fail(err)
	}
	if err := h.runs.Recover(); err != nil {
		return fail(err)
	}
	h.runs.Sweep()
	if h.cluster != nil {
		if err := h.attachCluster(); err != nil {
			return fail(err)
		}
	}
	reap := opts.ReapInterval
	if reap <= 0 {
		reap = time.Minute
		for _, a := range h.cfg.Agents {
			reap = min(reap, PoolSettings(a, h.cfg.Matcher).IdleTimeout/4)
		}
		reap = max(reap, 10*time.Millisecond)
	}
	h.reaper.Add(1)
	go h.reapLoop(reap)
	// What hosts killed before this one left of their plugins' temporary
	// files goes, off the path of any plugin start (internal/scratch).
	h.sweeper = scratch.Background(os.TempDir(), func(removed []string, err error) {
		if err != nil {
			h.logger.Warn("could not remove what hosts that are gone left in the temporary directory", "error", err)
		}
		if len(removed) > 0 {
			h.logger.Debug("removed what hosts that are gone left in the temporary directory", "directories", removed)
		}
	})
	return h, nil
}

// poolList returns the pools in force.
func (e *Engine) poolList() []*pool.Pool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]*pool.Pool, 0, len(e.pools))
	for _, p := range e.pools {
		out = append(out, p)
	}
	return out
}

// config returns the config in force.
func (e *Engine) config() *config.Config {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.cfg
}

func (e *Engine) command(a *config.Agent) (argv, env []string, err error) {
	if a.Bundled == "" {
		return a.Command, nil, nil
	}
	if e.bundled == nil {
		return nil, nil, fmt.Errorf("agent %q is bundled agent %q, but this host serves no bundled agents", a.Name, a.Bundled)
	}
	argv, env, ok := e.bundled(a.Bundled)
	if !ok {
		return nil, nil, fmt.Errorf("agent %q: no bundled agent named %q", a.Name, a.Bundled)
	}
	return argv, env, nil
}

func (e *Engine) reapLoop(every time.Duration) {
	defer e.reaper.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
			now := e.now()
			for _, p := range e.poolList() {
				p.RetireIdle(now)
			}
			e.runs.SweepIfDue(now)
		}
	}
}

// enter registers one unit of in-flight work, unless the host is
// closing; the returned func ends it.
func (e *Engine) enter() (func(), error) {
	e.inflightMu.Lock()
	defer e.inflightMu.Unlock()
	select {
	case <-e.closing:
		return nil, hearth.ErrClosed
	default:
	}
	e.inflight.Add(1)
	return e.inflight.Done, nil
}

// pool is agent's pool.
func (e *Engine) pool(agent string) (*pool.Pool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	p, ok := e.pools[agent]
	if !ok {
		names := make([]string, 0, len(e.pools))
		for n := range e.pools {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q; configured agents: %s", hearth.ErrUnknownAgent, agent, strings.Join(names, ", "))
	}
	return p, nil
}

// runnable checks that agent is configured and runs tasks.
func (e *Engine) runnable(agent string) error {
	p, err := e.pool(agent)
	if err != nil {
		return err
	}
	return p.Runnable()
}

// Status says what the host is and how it is doing, read from memory:
// what a metrics scrape asks for, as often as it likes.
func (e *Engine) Status(context.Context) (hearth.HostStatus, error) {
	lsm, vlog := e.store.Size()
	st := hearth.HostStatus{
		Version: e.version, DataDir: e.store.Dir(), PID: os.Getpid(), Started: e.started,
		Config: e.config().Path, ProtocolVersion: plugin.ProtocolVersion,
		Agents: e.agents(), Sessions: e.sessionCounts(), Store: hearth.StoreSize{LSM: lsm, VLog: vlog},
	}
	if c, ok := e.cluster.(interface{ Stats() hearth.ClusterStats }); ok {
		cs := c.Stats()
		st.Cluster = &cs
	}
	return st, nil
}

// agents lists the configured agents in config order.
func (e *Engine) agents() []hearth.AgentStatus {
	e.mu.RLock()
	cfg, pools := e.cfg, e.pools
	e.mu.RUnlock()
	var out []hearth.AgentStatus
	for _, a := range cfg.Agents {
		p := pools[a.Name]
		if p == nil {
			continue
		}
		n := p.Counts()
		out = append(out, hearth.AgentStatus{
			Name: a.Name, Bundled: a.Bundled, Command: slices.Clone(a.Command), External: a.External,
			Live: n["live"] + n["starting"] + n["retiring"], Dormant: n["dormant"],
		})
	}
	return out
}

// sessionCounts counts the sessions by agent and status (live, starting,
// retiring, dormant, lost), without reading the store.
func (e *Engine) sessionCounts() []hearth.SessionCount {
	var out []hearth.SessionCount
	for _, p := range e.poolList() {
		n := p.Counts()
		for _, st := range pool.Statuses() {
			out = append(out, hearth.SessionCount{Agent: p.Spec().Agent, Status: st, N: n[st]})
		}
	}
	return out
}

// Backup writes a consistent backup of the data directory to w while the
// host serves (store.Backup).
func (e *Engine) Backup(ctx context.Context, w io.Writer) (hearth.BackupStats, error) {
	st, err := e.store.Backup(ctx, w)
	return hearth.BackupStats(st), err
}

// Config returns the configuration in force (it changes on Reload).
func (e *Engine) Config() *config.Config { return e.config() }

// Close shuts the host down. New work is refused at once; tasks in flight
// may finish until ctx is done (the grace period), after which they are
// cancelled. Then every live session is retired: its state exported and
// kept, its plugin stopped, process group and all. Close returns once no
// plugin process is left and the store is closed.
func (e *Engine) Close(ctx context.Context) error {
	e.closeOnce.Do(func() {
		e.inflightMu.Lock()
		close(e.closing)
		e.inflightMu.Unlock()
		// Runs start no new task; their tasks in flight finish within
		// the grace period like any other, then the runs pause.
		e.runs.Stop()
		done := make(chan struct{})
		go func() {
			e.inflight.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			e.logger.Warn("shutdown grace period over or cut short; cancelling tasks in flight")
			e.hardStopCancel()
			<-done
		}
		e.hardStopCancel()
		e.runs.Wait()
		e.reaper.Wait()
		e.sweeper.Stop()
		pools := e.poolList()
		e.mu.RLock()
		pools = append(pools, e.retiring...)
		e.mu.RUnlock()
		var wg sync.WaitGroup
		for _, p := range pools {
			wg.Go(func() { p.RetireAll("the host shut down") })
		}
		wg.Wait()
		for _, p := range pools {
			p.Wait()
		}
		if e.ownsStore {
			e.closeErr = e.store.Close()
		}
		e.events.wait()
	})
	return e.closeErr
}
