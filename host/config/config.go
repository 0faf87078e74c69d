// Package config reads hearth's HCL configuration file: the agents a host
// runs and how their sessions are pooled, how tasks are matched to
// sessions, the pipelines it runs and the guards that watch them.
//
// Decoding is strict: an unknown block or attribute is an error, and every
// error carries the file, line and column of the offending source, a quote
// of it, and what to do about it (HCL's diagnostics, printed by
// (*Error).Write). Values are checked once, at load; nothing about the file
// can surprise a running host.
//
// # Defaults
//
// Every default is listed here but the cluster block's, which
// cluster.Config lists (a setting of that block lands in host/cluster
// alone). Each lives with the part it configures: the agent, server and
// hooks blocks', and the pool block's when_full and placement, in this
// package (Default and the constants below); the matcher block's in
// package matcher, which also decodes and checks the block
// (matcher.Block); the cluster block's in package host/cluster, which
// also decodes and checks the block (cluster.Block); the store block's in
// package host/store (store.Options), and the pool and fingerprint blocks'
// numbers in package host/pool (pool.Spec.WithDefaults). This package
// imports neither the store nor the pool: it decodes their blocks into
// plain values (Store, Pool, Fingerprint), a setting left out stays
// zero, and the part reads zero as its default. Where zero is a value a
// person may write, the plain value holds -1 for it (store
// min_free_space "0": off; pool max_dormant 0: keep none).
//
//	data_dir                  in the user's state directory:
//	                          $XDG_STATE_HOME/hearth/NAME-HASH, else
//	                          ~/.local/state/hearth/NAME-HASH, one per
//	                          config file (internal/paths.DefaultDataDir says why: never
//	                          inside a workspace); relative paths: to the
//	                          config file
//	agent.capacity            the capacity the agent declares, else 1
//	agent.start_timeout       "10s"  spawn + handshake + first call
//	agent.task_timeout        "10m"  a task running longer is a hung plugin
//	agent.health_interval     "10s"  how often live plugins are pinged
//	agent.workspace           the config file's directory
//	confinement               "auto": plugins run under Landlock where the
//	                          kernel has it, unconfined (said at start)
//	                          where not; "require" refuses to start them
//	                          there; "off". Each agent block may set its own.
//	agent.read_paths          []  beyond the workspace (relative: to the
//	agent.write_paths         []  config file); never the data directory
//	agent.connect_ports       (unset: TCP not restricted) the TCP ports a
//	                          confined plugin may connect to; binds refused
//	agent.pool.max_sessions   4 (pool.DefaultMaxSessions)
//	agent.pool.idle_timeout   "30m" (pool.DefaultIdleTimeout)  idle
//	                                  sessions are retired (made dormant)
//	agent.pool.when_full      "wait" ("retire_idle": retire the least
//	                                  recently used idle session instead)
//	agent.pool.max_dormant    64 (pool.DefaultMaxDormant)  retired
//	                                  sessions kept for rehydration; the
//	                                  least recently active beyond it are
//	                                  deleted with their history; 0 keeps
//	                                  none
//	agent.pool.placement      "matcher" (the baselines hearth is measured
//	                                  against: "fresh", a new session per
//	                                  task; "round_robin", a warm pool in
//	                                  rotation)
//	agent.fingerprint.max_files         1000  (LRU; pool.DefaultMaxFiles)
//	agent.fingerprint.max_directories   256   (LRU; pool.DefaultMaxDirectories)
//	agent.fingerprint.max_technologies  32    (LRU; pool.DefaultMaxTechnologies)
//	matcher.threshold         0.6    reuse a session scoring strictly above it
//	matcher.top_k             5      candidates a decision reports
//	matcher.weights           directory 0.30, file 0.25, tech 0.20,
//	                          freshness 0.15, load 0.10 (sum to 1)
//
//	agent.pool.max_sessions   16 for an external agent
//	                          (pool.DefaultMaxExternalSessions): its live
//	                          sessions beyond it, least recently active
//	                          first, go dormant
//	server.socket             "<data_dir>/hearth.sock"  the API, owner-only
//	server.listen             off    the API over TCP; needs token_file or
//	                                  tls.client_ca_file
//	server.http               "127.0.0.1:7411"  dashboard, /metrics, hooks;
//	                                  beyond loopback it needs token_file
//	guards.case_sensitive     false  path matching folds case, on every
//	                                  system (package guard says why)
//	guards.searches_skip_hidden
//	                          false  an agent's own search tool without a
//	                                  filter may read hidden files below
//	                                  its path (never applies to Claude
//	                                  Code's Grep and Glob: --hidden)
//	guards.path_fields        {}     input fields that hold paths, by tool
//	                                  name pattern: {"mcp__fs__*" = ["path"]}
//	hooks.agent               the first agent with external = "claude-code"
//	hooks.when_unreachable    "allow" (fail open; "deny" fails closed)
//	cluster                   off: one host, no etcd. With the block:
//	cluster.*                 each setting, its default and bounds: in
//	                          host/cluster's Config, which lists them
//	store.min_free_space      "256MiB" (store.DefaultMinFreeSpace)  writes
//	                                  are refused below it; runs pause and
//	                                  resume once there is room; "0" turns
//	                                  the guard off
//	store.stall_timeout       "30s" (store.DefaultStallTimeout)  a commit
//	                                  hanging longer fails its writes
//	store.close_timeout       "5s" (store.DefaultCloseTimeout)  the wait
//	                                  for the final flush on exit
//	telemetry                 off: no spans, nothing exported, unless the
//	                          OTEL_* variables ask for OTLP. With the block:
//	                          tracing on; each setting's default is its
//	                          OTEL_* variable's (telemetry.go lists them)
//
// The matcher's freshness reaches 0 at each agent's pool.idle_timeout.
// Pipelines' defaults are in the next section.
//
// # External agents
//
// An agent with external = "claude-code" is a program hearth does not
// start: its sessions report through hooks (package host/claudecode).
// It takes pool (idle_timeout, max_dormant) and fingerprint settings and
// workspace (default: none, so its absolute paths stay absolute); the
// settings of a program (bundled, command, sha256, capacity, timeouts,
// env) are errors on it, and so is a pipeline task naming it. Default
// declares one, named claude-code.
//
// # Pipelines
//
// A pipeline block is a graph of tasks run together (`hearth run FILE
// PIPELINE`); the Go API runs the same hearth.Pipeline type, where zero fields
// mean the defaults (hearth.Pipeline.Defaults) and hearth.Pipeline.Validate makes the
// checks Load makes. Every setting, with its default:
//
//	pipeline "name" {
//	  description = ""          free text
//	  agent       = (none)      the agent of tasks that name none
//	  parallel    = 1           tasks running at once
//	  budget      = 0           total cost cap, 0 for none: a task that would
//	                            start with the run at or over it does not
//	  on_failure  = "fail"      a task failed for good fails the run;
//	                            "pause" pauses it for a person
//	  files       = []          attached to every run (relative: to this file)
//	  retry {
//	    attempts    = 3         tries in all; 1 means no retry
//	    backoff     = "1s"      the wait after the first failure, doubled
//	    max_backoff = "30s"     after each next one, up to max_backoff
//	  }
//	  context {
//	    budget   = 4096         bytes of ancestors' artifacts in a prompt;
//	                            -1 for no cap
//	    template = (built in)   a text/template for the block; see
//	                            contextchain.DefaultTemplate
//	  }
//	  state {
//	    initial = {}            the state document's first sections
//	    owner "agent" {         once any owner block is declared, an agent
//	      reads  = (all)        without one reads all and writes nothing;
//	      writes = []           a section has one writer
//	    }
//	  }
//	  retention {               idle time since the run's last activity:
//	    pause_after   = "24h"   a running run is paused,
//	    abandon_after = "168h"  a paused one flagged abandoned,
//	    delete_after  = "0"     any run deleted with its files and outputs.
//	  }                         "0" turns a step off; steps on come in order
//	  stage "name" {            the rules of entering a stage its tasks name
//	                            (hearth.StageSettings); one block a stage:
//	    not_before = (none)     the earliest time the run enters it, in
//	                            RFC 3339: "2026-12-01T09:00:00Z"; its task
//	                            waits, and the run is not idle meanwhile
//	  }
//	  task "name" {             letters, digits, '-', '_' and '.'; unique
//	    prompt     = (required)
//	    agent      = the pipeline's agent
//	    depends_on = []         tasks that must succeed first; their
//	                            artifacts are chained into its prompt
//	    stage      = (none)     entering it is a transition guards may
//	                            block; "created", "completed" are reserved
//	    metadata   = {}         strings passed to the agent
//	    attempts   = retry.attempts
//	    on_failure = the pipeline's on_failure
//	    files = [], directories = [], technologies = []  matcher hints
//	  }
//	}
//
// Load rejects dependency cycles, unknown dependencies, agents and owner
// agents, owner blocks of agents that run none of the pipeline's tasks,
// and context templates that do not parse, each at its spot. A quality
// gate is a task_result guard with action = "send_back" and back_to
// naming a task the gated tasks depend on, directly or not; max_loops
// (default 3) bounds how often it sends work back in one run.
package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/matcher"
)

// Default values; see the package documentation.
const (
	DefaultStartTimeout   = 10 * time.Second
	DefaultTaskTimeout    = 10 * time.Minute
	DefaultHealthInterval = 10 * time.Second
)

// Config is a loaded, validated configuration.
type Config struct {
	// Path is the file the configuration came from; empty for Default.
	Path string
	// DataDir is the data directory: absolute when it came from a file
	// (data_dir, or the default, resolved against the file's directory).
	// DataDirFrom says where it came from, for messages ("data_dir in
	// /etc/hearth/hearth.hcl"); the CLI sets it for its flags. Empty
	// DataDir means there is no default (no home directory): the file
	// or a flag must name one.
	DataDir     string
	DataDirFrom string
	// DataDirMove, when set, is where the default data directory lives
	// now: DataDir is the .hearth of an earlier version, inside the
	// workspace, and should be moved there (see internal/paths.DefaultDataDir).
	DataDirMove string
	// Agents in the order the file declares them.
	Agents    []*Agent
	Matcher   Matcher
	Pipelines []*hearth.Pipeline
	// Guards are compiled, in the order the file declares them, with
	// paths read under GuardPaths (the guards block).
	Guards     []*guard.Rule
	GuardPaths guard.PathPolicy
	resolver   *guard.Resolver
	// Server is how `hearth serve` listens; Hooks, how `hearth hook`
	// reports.
	Server Server
	Hooks  Hooks
	// Cluster is the cluster block; nil without one: one host, no etcd.
	// Its HostID is empty unless the file sets it (see
	// cluster.Config.WithDefaults).
	Cluster *cluster.Config
	// Store is how the store meets a full or stuck disk (the store block).
	Store Store
	// Telemetry is the telemetry block: tracing over OTLP (telemetry.go);
	// zero without one, when the OTEL_* variables alone decide.
	Telemetry telemetry.Settings
	// Warnings are what the file leaves for later to go wrong without
	// being wrong itself (a model's key variable not set where hearth
	// runs): WriteWarnings prints them.
	Warnings hcl.Diagnostics
	files    map[string]*hcl.File
}

// Pipeline returns the pipeline named name, or nil.
func (c *Config) Pipeline(name string) *hearth.Pipeline {
	for _, p := range c.Pipelines {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// ErrNoPipeline is wrapped by SelectPipeline's errors.
var ErrNoPipeline = errors.New("no such pipeline")

// SelectPipeline returns the pipeline named name, or, with name empty,
// the file's only one. Its errors say which pipelines there are.
func (c *Config) SelectPipeline(name string) (*hearth.Pipeline, error) {
	where := c.Path
	if where == "" {
		where = "the config"
	}
	names := make([]string, 0, len(c.Pipelines))
	for _, p := range c.Pipelines {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	switch {
	case name != "":
		if p := c.Pipeline(name); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("%w: %s has no pipeline %q; its pipelines: %s", ErrNoPipeline, where, name, text.OrNone(names))
	case len(c.Pipelines) == 1:
		return c.Pipelines[0], nil
	case len(c.Pipelines) == 0:
		return nil, fmt.Errorf("%w: %s declares no pipeline; add a pipeline block, or use hearth submit for a single task", ErrNoPipeline, where)
	}
	return nil, fmt.Errorf("%w: %s has %d pipelines; name one: %s", ErrNoPipeline, where, len(names), strings.Join(names, ", "))
}

// Matcher tunes how tasks are placed on sessions: the matcher block, the
// same for every agent. An agent's pool scores with it and with the
// pool's idle timeout (freshness reaches 0 when a session is retired),
// which the engine maps (engine.PoolSettings, then
// pool.Spec.WithDefaults).
type Matcher struct {
	Weights   matcher.Weights
	Threshold float64
	TopK      int
}

// DefaultMatcher returns the seed's weights and threshold.
func DefaultMatcher() Matcher {
	d := matcher.DefaultConfig()
	return Matcher{Weights: d.Weights, Threshold: d.Threshold, TopK: d.TopK}
}

// Agent returns the agent named name, or nil.
func (c *Config) Agent(name string) *Agent {
	for _, a := range c.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// DefaultPassEnv are the host variables a plugin gets when its agent
// block has no pass_env: what programs need to run, nothing secret.
var DefaultPassEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// Agent is one `agent "name" { ... }` block.
type Agent struct {
	Name string
	// Bundled names an agent served by the hearth binary itself. Exactly
	// one of Bundled and Command is set.
	Bundled string
	// Command is the plugin's program and arguments; a relative program
	// path is resolved against the config file's directory.
	Command []string
	// External, when set, names the kind of program whose sessions hearth
	// follows without running them (ExternalClaudeCode): they report
	// through hooks, and tasks are never placed on them, only pointed at
	// (Engine.Place). Bundled and Command are then empty.
	External string
	// SHA256 pins the plugin program's checksum (hex), if set.
	SHA256 string
	// Capacity is the number of concurrent tasks per session; 0 means the
	// capacity the agent declares.
	Capacity       int
	StartTimeout   time.Duration
	TaskTimeout    time.Duration
	HealthInterval time.Duration
	// Env is added to the plugin's environment.
	Env map[string]string
	// PassEnv names the host's environment variables a plugin gets; nil
	// means DefaultPassEnv. Nothing else of the host's environment
	// reaches a plugin.
	PassEnv []string
	// Workspace is the root that tool-use paths are made relative to.
	Workspace string
	// RequireChecks fails a task whose agent reports a tool use that a
	// pre_tool_use guard covers without having asked about it; without
	// it such a use is flagged (a tool.unchecked event) and the task
	// stands.
	RequireChecks bool
	// Confinement says whether the plugin runs under Landlock; ReadPaths
	// and WritePaths are absolute paths it may reach beyond its
	// workspace. ConnectPorts, when not nil, limits its TCP connects to
	// those ports and refuses TCP binds; nil leaves TCP alone.
	Confinement  Confinement
	ReadPaths    []string
	WritePaths   []string
	ConnectPorts []uint16
	Pool         Pool
	Fingerprint  Fingerprint
	// Model holds the model block's settings, nil without one. They are
	// in Env already (HEARTH_MODEL_*), and its key variable in PassEnv.
	Model *Model
	// ClaudeCode holds the claude_code block's settings, nil without one.
	// They are in Env already (HEARTH_CLAUDE_*), its key variable in
	// PassEnv, and its grants in ReadPaths and ConnectPorts.
	ClaudeCode *ClaudeCode
}

// Pool is an agent's session pool policy as the file says it. A number
// the file leaves out is zero, which the pool reads as its own default
// (pool.Spec.WithDefaults, where the defaults live); the engine hands
// these values to the pool.
type Pool struct {
	// MaxSessions is at least 1; 0 is the pool's default.
	MaxSessions int
	// IdleTimeout is positive; 0 is the pool's default.
	IdleTimeout time.Duration
	WhenFull    hearth.WhenFull
	// MaxDormant is the retired sessions kept: 0 is the pool's default,
	// -1 keeps none (max_dormant = 0 in the file).
	MaxDormant int
	Placement  hearth.Placement
}

// Fingerprint bounds what a session's context remembers; the least
// recently used entries are evicted first. A limit the file leaves out
// is zero, the pool's default.
type Fingerprint struct {
	MaxFiles        int
	MaxDirectories  int
	MaxTechnologies int
}

// DefaultAgent returns an agent with every default of this package
// applied; its pool and fingerprint numbers are unset (zero), the pool's
// defaults.
func DefaultAgent(name string) *Agent {
	return &Agent{
		Name:           name,
		StartTimeout:   DefaultStartTimeout,
		TaskTimeout:    DefaultTaskTimeout,
		HealthInterval: DefaultHealthInterval,
		Workspace:      ".",
		Confinement:    ConfinementAuto,
		Pool:           Pool{WhenFull: hearth.WhenFullWait, Placement: hearth.PlacementMatcher},
	}
}

// Default is the configuration used when no file is given: every bundled
// agent, and the external claude-code agent, with defaults. Its DataDir
// is empty: the caller sets it (paths.DefaultDataDir, for the current
// directory).
func Default(bundled []string) *Config {
	c := &Config{Matcher: DefaultMatcher(), Server: DefaultServer(),
		Hooks: Hooks{Agent: DefaultExternalAgent, WhenUnreachable: HookAllow}}
	for _, name := range bundled {
		a := DefaultAgent(name)
		a.Bundled = name
		c.Agents = append(c.Agents, a)
	}
	c.Agents = append(c.Agents, DefaultExternal(DefaultExternalAgent, ExternalClaudeCode))
	return c
}

// DefaultExternal returns an external agent of kind with every default
// applied.
func DefaultExternal(name, kind string) *Agent {
	a := DefaultAgent(name)
	a.makeExternal(kind)
	return a
}

// makeExternal gives a an external agent's defaults: one session is one
// program's session, and its absolute paths are kept as they are unless
// workspace says what they are relative to. Its max_sessions default
// differs too, and is the pool's (pool.DefaultMaxExternalSessions).
func (a *Agent) makeExternal(kind string) {
	a.External, a.Workspace, a.Capacity = kind, "", 1
}
