package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/matcher"
)

// Spec is an agent as its pool runs it: plain values, complete, which
// the engine maps from the agent's config block and completes with
// WithDefaults (package host/config checks the block against the file
// and leaves the numbers it does not set zero; the pool does not import
// it). New takes one; Update swaps in another.
type Spec struct {
	// Agent is the agent's name.
	Agent string
	// External is the kind of an external agent's sessions (their
	// program reports through hooks; the pool runs no process), empty
	// for a plugin agent.
	External string
	// Launch is how a session's plugin starts: Argv, Env (the whole
	// environment it starts with), Dir, SHA256, Confine, StartTimeout
	// and HealthInterval. The pool fills in the rest (the session, the
	// TLS keys, the logger, what happens on exit).
	Launch process.Launch
	// Workspace is the root tool-use paths are made relative to; empty
	// keeps absolute paths as they are (an external agent's default).
	Workspace string
	// Capacity is the number of concurrent tasks per session; 0 means
	// the capacity the agent declares.
	Capacity int
	// TaskTimeout bounds one task: a plugin running longer is hung, and
	// its session is stopped.
	TaskTimeout time.Duration
	// RequireChecks fails a task whose agent reports a tool use that a
	// pre_tool_use guard covers without having asked about it.
	RequireChecks bool
	// MaxSessions bounds the sessions with a process (for an external
	// agent: the live sessions).
	MaxSessions int
	// IdleTimeout is how long a live session may run nothing before it
	// is retired (made dormant).
	IdleTimeout time.Duration
	// MaxDormant bounds the dormant and lost sessions kept; the least
	// recently active beyond it are deleted.
	MaxDormant int
	// WhenFull is what a task does when it needs a new session and the
	// pool is full.
	WhenFull hearth.WhenFull
	// Placement is how tasks are placed on sessions.
	Placement hearth.Placement
	// Fingerprint bounds what a session's context remembers.
	Fingerprint Limits
	// Matcher tunes the scoring of sessions against tasks.
	Matcher matcher.Config
	// Model is the agent's model (its model block's), what the tokens its
	// tasks report are counted under; "" when it has none.
	Model string
}

// Limits bound a session's fingerprint: the least recently used entries
// of each set are evicted first.
type Limits struct {
	MaxFiles        int
	MaxDirectories  int
	MaxTechnologies int
}

// Check reports what in s a pool cannot run with (New and Update refuse it): each problem names the
// setting, so that a mapping that forgot one says which.
func (s *Spec) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Agent == "" {
		bad("the agent has no name")
	}
	if s.External == "" && len(s.Launch.Argv) == 0 {
		bad("no program to start (Launch.Argv)")
	}
	if s.MaxSessions < 1 {
		bad("max_sessions %d: at least 1", s.MaxSessions)
	}
	if s.MaxDormant < 0 {
		bad("max_dormant %d: 0 or more", s.MaxDormant)
	}
	if s.IdleTimeout <= 0 {
		bad("idle_timeout %s: it must be positive", s.IdleTimeout)
	}
	if s.External == "" && (s.TaskTimeout <= 0 || s.Launch.StartTimeout <= 0) {
		bad("task_timeout %s, start_timeout %s: both must be positive", s.TaskTimeout, s.Launch.StartTimeout)
	}
	switch s.WhenFull {
	case hearth.WhenFullWait, hearth.WhenFullRetireIdle:
	default:
		bad("when_full %q: want %q or %q", s.WhenFull, hearth.WhenFullWait, hearth.WhenFullRetireIdle)
	}
	switch s.Placement {
	case hearth.PlacementMatcher, hearth.PlacementFresh, hearth.PlacementRoundRobin:
	default:
		bad("placement %q: want %q, %q or %q", s.Placement, hearth.PlacementMatcher, hearth.PlacementFresh, hearth.PlacementRoundRobin)
	}
	if f := s.Fingerprint; f.MaxFiles < 1 || f.MaxDirectories < 1 || f.MaxTechnologies < 1 {
		bad("fingerprint limits %+v: each at least 1", f)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pool of agent %q: %w", s.Agent, err)
	}
	return nil
}
