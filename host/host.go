package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// Errors of the Host's API.
var (
	// ErrClosed is returned for work submitted to a host that is shutting
	// down.
	ErrClosed = errors.New("host is shutting down")
	// ErrUnknownAgent is returned for a task naming no configured agent.
	ErrUnknownAgent = errors.New("no such agent")
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
	// Now is the host's clock; time.Now when nil.
	Now func() time.Time
}

// Host runs agents as plugin processes, pools their sessions and places
// tasks on them. Its methods are safe for concurrent use.
type Host struct {
	cfg     *config.Config
	logger  hclog.Logger
	bundled BundledFunc
	now     func() time.Time

	pools  map[string]*pool
	events bus
	tls    *sdk.HostTLS

	// closing is closed when Close begins: no new work is accepted.
	closing   chan struct{}
	closeOnce sync.Once
	// hardStop is cancelled when the shutdown grace period is over: tasks
	// still running are cancelled.
	hardStop       context.Context
	hardStopCancel context.CancelFunc
	inflight       sync.WaitGroup
	// reaping tracks plugins being stopped after they died or hung.
	reaping    sync.WaitGroup
	inflightMu sync.Mutex // orders inflight.Add against Close's Wait
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
		pools:   make(map[string]*pool),
		closing: make(chan struct{}),
	}
	if h.logger == nil {
		h.logger = hclog.NewNullLogger()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.hardStop, h.hardStopCancel = context.WithCancel(context.Background())
	var err error
	if h.tls, err = sdk.NewHostTLS(); err != nil {
		return nil, fmt.Errorf("host: make the TLS keys plugins are reached with: %w", err)
	}
	for _, a := range h.cfg.Agents {
		argv, env, err := h.command(a)
		if err != nil {
			return nil, err
		}
		h.pools[a.Name] = newPool(h, a, argv, env)
	}
	return h, nil
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
}

// Outcome is what Submit returns for a task that ran.
type Outcome struct {
	TaskID    string              `json:"task_id"`
	Agent     string              `json:"agent"`
	Session   string              `json:"session"`
	Placement Placement           `json:"placement"`
	Result    sdk.Result          `json:"result"`
	Artifact  sdk.ContextArtifact `json:"artifact"`
	// Duration is the wall time from submission to result.
	Duration time.Duration `json:"duration"`
}

// Placement says how a task found its session.
type Placement struct {
	// Spawned is true when a new session was started for the task.
	Spawned bool `json:"spawned"`
	// Waited is how long the task waited for a free session.
	Waited time.Duration `json:"waited"`
	// Reason explains the choice in one line.
	Reason string `json:"reason"`
}

// Submit runs t on a session of its agent and returns the result and the
// context artifact the agent left. It blocks until the task is done, ctx
// is done, or the host is shut down.
func (h *Host) Submit(ctx context.Context, t Task) (*Outcome, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.inflight.Done()
	p, err := h.pool(t.Agent)
	if err != nil {
		return nil, err
	}
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	start := h.now()
	s, placement, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer p.release(s)
	res, art, err := s.run(ctx, t, h.hardStop)
	if err != nil {
		return nil, err
	}
	return &Outcome{
		TaskID:    t.ID,
		Agent:     t.Agent,
		Session:   s.id,
		Placement: placement,
		Result:    res,
		Artifact:  art,
		Duration:  h.now().Sub(start),
	}, nil
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
	// Live is the number of live sessions.
	Live int `json:"live"`
}

// Agents lists the configured agents in config order.
func (h *Host) Agents() []AgentStatus {
	var out []AgentStatus
	for _, a := range h.cfg.Agents {
		p := h.pools[a.Name]
		out = append(out, AgentStatus{Name: a.Name, Bundled: a.Bundled, Command: slices.Clone(a.Command), Live: p.live()})
	}
	return out
}

// Close shuts the host down. New work is refused at once; tasks in flight
// may finish until ctx is done (the grace period), after which they are
// cancelled. Then every plugin is stopped, its process group with it.
// Close returns once no plugin process is left.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		h.inflightMu.Lock()
		close(h.closing)
		h.inflightMu.Unlock()
		done := make(chan struct{})
		go func() {
			h.inflight.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			h.logger.Warn("shutdown grace period over; cancelling tasks in flight")
			h.hardStopCancel()
			<-done
		}
		h.hardStopCancel()
		var wg sync.WaitGroup
		for _, p := range h.pools {
			wg.Go(p.stopAll)
		}
		wg.Wait()
		h.reaping.Wait()
	})
	return nil
}

// taskTimeoutError is the cancellation cause of a task that ran past its
// agent's task_timeout.
type taskTimeoutError struct{ d time.Duration }

func (e taskTimeoutError) Error() string {
	return fmt.Sprintf("task did not finish within its %s task_timeout", e.d)
}

func (e taskTimeoutError) Unwrap() error { return context.DeadlineExceeded }
