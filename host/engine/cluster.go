package engine

import (
	"context"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/matcher"
)

// Cluster is the cluster the host is a member of (Options.Cluster):
// host/cluster/member's Member, which `hearth serve` makes from the
// config's cluster block and joins once the daemon listens. The engine
// hands it the host's parts (Attach, in New), lets it run the tasks it
// places across hosts (Submit, Place), and tells it what changed; what
// the cluster decides is decided there. The engine names the member
// only through this interface and the contract in package cluster
// (cluster.Deps, cluster.Pool), so that it links neither the member nor
// etcd's client (docs/architecture.md, the rules).
type Cluster interface {
	// Attach hands the cluster the host's parts, once.
	Attach(cluster.Deps) error
	// Submit runs an admitted task where it belongs: on another host, or
	// here through Deps.Execute.
	Submit(ctx context.Context, p cluster.Pool, t hearth.Task) (*hearth.Outcome, error)
	// Place says where a task would run now, as Submit would decide it.
	Place(p cluster.Pool, t hearth.Task) hearth.Decision
	// Changed says a session's summary (and, with hostToo, the host's
	// load) may have changed.
	Changed(session string, hostToo bool)
	// Learned says a placement taught a session what its published
	// summary does not say yet: it goes out now.
	Learned(session string)
	// Reloaded says the config was reloaded; added, that it made new
	// pools.
	Reloaded(added bool)
	// Run reads a run another host of the cluster owns, with its Owner
	// set; an error wrapping hearth.ErrUnknownRun when no host lists it.
	Run(ctx context.Context, id string) (hearth.RunDetail, error)
	// RunOwner says which host of the cluster owns run id, if one does.
	RunOwner(ctx context.Context, id string) (host string, ok bool)
}

// attachCluster hands the cluster the host's parts.
func (e *Engine) attachCluster() error {
	return e.cluster.Attach(cluster.Deps{
		Pools: func() []cluster.Pool {
			cfg := e.config()
			e.mu.RLock()
			defer e.mu.RUnlock()
			out := make([]cluster.Pool, 0, len(cfg.Agents))
			for _, a := range cfg.Agents {
				if p := e.pools[a.Name]; p != nil {
					out = append(out, p)
				}
			}
			return out
		},
		Pool: func(agent string) (cluster.Pool, bool) {
			e.mu.RLock()
			defer e.mu.RUnlock()
			if p := e.pools[agent]; p != nil {
				return p, true
			}
			return nil, false
		},
		MatcherConfig: e.matcherConfig,
		Runnable:      e.runnable,
		Enter:         e.enter,
		Admit:         func(t hearth.Task) error { return e.admit(t, guard.Run{}) },
		Execute: func(ctx context.Context, t hearth.Task) (*hearth.Outcome, error) {
			p, err := e.pool(t.Agent)
			if err != nil {
				return nil, err
			}
			return e.execute(ctx, p, t, nil)
		},
		Emit:    func(ev hearth.Event) { e.emit(ev) },
		Runs:    e.Runs,
		Run:     e.ownRun,
		Keys:    keyStore{e.store},
		Closing: e.closing,
		Now:     e.now,
	})
}

// keyStore is the store as the member's cluster.KeyStore.
type keyStore struct{ *store.Store }

func (s keyStore) SaveForward(rec cluster.ForwardRecord, drop []string) cluster.Pending {
	return s.Store.SaveForward(rec, drop)
}

func (s keyStore) DropForwards(keys []string) cluster.Pending { return s.Store.DropForwards(keys) }

var _ cluster.KeyStore = keyStore{}

// matcherConfig is the matcher configuration the host scores agent's
// sessions with: remote sessions are scored as local ones.
func (e *Engine) matcherConfig(agent string) matcher.Config {
	cfg := e.config()
	if a := cfg.Agent(agent); a != nil {
		return PoolSettings(a, cfg.Matcher).Matcher
	}
	return matcher.DefaultConfig()
}

// changed tells the cluster that a session (and the host's load)
// changed.
func (e *Engine) changed(session string, hostToo bool) {
	if e.cluster != nil {
		e.cluster.Changed(session, hostToo)
	}
}

// vouch is how long a cluster's plugins go on without hearing from their
// host (process.Launch.Vouch): a third of the lease TTL, at least what
// gRPC's keep-alive can detect (1.25 s). A host renews its lease every
// third of the TTL, so when it is paused its lease has at least two
// thirds of the TTL left: its plugins stop before the lease expires and
// another host may run their tasks. Without a cluster, 0: a paused host
// is waited for.
func (e *Engine) vouch() time.Duration {
	c := e.cfg.Cluster
	if c == nil || e.cluster == nil {
		return 0
	}
	ttl := c.LeaseTTL
	if ttl == 0 {
		ttl = cluster.DefaultLeaseTTL
	}
	return max(ttl/3, 1250*time.Millisecond)
}
