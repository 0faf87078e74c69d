package cluster

import (
	"context"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

// The contract between a host's engine and its member of the cluster
// (host/cluster/member): what the engine hands the member when it
// attaches it (Deps), and the record of a forwarded task the member
// keeps in the host's store (ForwardRecord). It is here, in the
// cluster's base package, so that the engine names it without importing
// the member, and through it etcd's client and the hosts' API: `hearth
// serve` makes the member and hands it to the engine as an option
// (engine.Options.Cluster), and the engine stands on no cluster
// implementation.

// Pool is one agent's pool as the cluster uses it: host/pool's Pool, the
// one placement policy. Its remote sessions are the other hosts'
// sessions of the agent, kept in its matcher index by RemoteID and owned
// by their host.
type Pool interface {
	// AcrossHosts says whether the pool's tasks are placed over every
	// host's sessions.
	AcrossHosts() bool
	// PlaceAcross decides t over every host's sessions, leaving out the
	// RemoteIDs in exclude; Place over this host's alone.
	PlaceAcross(t hearth.Task, exclude []string, now time.Time) Placement
	Place(t hearth.Task) hearth.Decision
	// ApplyRemote updates the other hosts' sessions in the pool's index.
	ApplyRemote(reset bool, puts []matcher.Candidate, removes []string)
	// ExpectRemote records t's hints against a remote session (a
	// RemoteID) t was just forwarded to.
	ExpectRemote(id string, t hearth.Task)
	// Summary and Summaries are what the host publishes of its sessions;
	// Load, of the agent.
	Summary(id string) (Summary, bool)
	Summaries() []Summary
	Load() hearth.AgentLoad
}

// KeyStore keeps the idempotency keys of the tasks forwarded here, and
// their results, across restarts: the host's store.
type KeyStore interface {
	// SaveForward queues rec and the deletion of the records of the keys
	// in drop, as one atomic write.
	SaveForward(rec ForwardRecord, drop []string) Pending
	// ForwardRecords reads every record; one that cannot be read has
	// only its Key and Err.
	ForwardRecords() ([]ForwardRecord, error)
	// DropForwards queues the deletion of the records of keys.
	DropForwards(keys []string) Pending
}

// ForwardRecord is a task another host forwarded to this one, by its
// idempotency key, as the host's store keeps it (key fw/<key>): what
// keeps Accepted's promise, that a key is run at most once, across a
// restart of the host. It is the cluster's record, which the store keeps
// as etcd keeps HostRecord and Summary.
type ForwardRecord struct {
	Key   string
	From  string
	Agent string
	// Done says the task finished; its result is Outcome, or Error (with
	// ErrorKind, the name of the sentinel error it wrapped: ErrorKind,
	// KeptError). A record that is not done was running when it was
	// written: after a restart, a task the host never finished.
	Done     bool
	Accepted time.Time
	Finished time.Time
	Outcome  *hearth.Outcome
	Error    string
	// ErrorKind names the sentinel error Error wrapped, empty for none.
	ErrorKind string
	// Err is set, by the store's ForwardRecords, on a record that cannot
	// be read (a damaged record, or one of a newer layout); only Key is
	// known then.
	Err error
}

// Pending is a write a KeyStore queued.
type Pending interface {
	// Wait returns once the write is durable (nil) or failed, or ctx is
	// done.
	Wait(ctx context.Context) error
}

// Deps are the parts of the host its member works with, which the
// engine hands it (the member's Attach): its pools, and the means to run
// a task here.
type Deps struct {
	// Pools returns the host's pools in config order; Pool the pool of
	// agent, if the host runs it.
	Pools func() []Pool
	Pool  func(agent string) (Pool, bool)
	// MatcherConfig is the matcher configuration the host scores
	// agent's sessions with; another host's sessions are scored alike.
	MatcherConfig func(agent string) matcher.Config
	// Runnable says whether the host runs tasks of agent.
	Runnable func(agent string) error
	// Enter registers a unit of work in flight, refused once the host
	// is closing; the func it returns ends it.
	Enter func() (func(), error)
	// Admit runs the admission guards on a task forwarded here.
	Admit func(hearth.Task) error
	// Execute places an admitted task over this host's sessions and runs
	// it, with its quality gate.
	Execute func(ctx context.Context, t hearth.Task) (*hearth.Outcome, error)
	// Emit records an event.
	Emit func(hearth.Event)
	// Runs lists the runs the host owns.
	Runs func(ctx context.Context) ([]hearth.RunInfo, error)
	// Run reads one run the host owns, by its ID or a prefix; an error
	// wrapping hearth.ErrUnknownRun when it has none.
	Run func(ctx context.Context, id string) (hearth.RunDetail, error)
	// Keys keeps the idempotency keys of forwarded tasks.
	Keys KeyStore
	// Closing is closed when the host begins to shut down.
	Closing <-chan struct{}
	// Now is the host's clock.
	Now func() time.Time
}
