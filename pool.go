package hearth

// WhenFull says what an agent's pool does when a task needs a new
// session and the pool is at its maximum (an agent block's
// pool.when_full). The config file names it, the pool acts on it: both
// speak this type, so neither maps the other's.
type WhenFull string

// Full-pool policies.
const (
	// WhenFullWait makes the task wait for a session to free up, until
	// its context's deadline.
	WhenFullWait WhenFull = "wait"
	// WhenFullRetireIdle retires the least recently used idle session to
	// make room; with none idle, the task waits.
	WhenFullRetireIdle WhenFull = "retire_idle"
)

// Placement says how an agent's pool places tasks on its sessions (an
// agent block's pool.placement).
type Placement string

// Placements. Only PlacementMatcher is hearth's; the others are the
// baselines it is measured against, here so that anyone can measure them
// on their own tree (host/pool's decideLocked says how each places).
const (
	// PlacementMatcher places each task on the session that knows most of
	// what it needs (package matcher), else on a new one.
	PlacementMatcher Placement = "matcher"
	// PlacementFresh gives every task a new session, stopped after it: no
	// reuse at all.
	PlacementFresh Placement = "fresh"
	// PlacementRoundRobin keeps max_sessions warm sessions and hands tasks
	// out to them in turn, with no regard for what each one knows.
	PlacementRoundRobin Placement = "round_robin"
)
