package member

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/etcd"
)

// stats counts what the member did: the cluster series of /metrics
// (hearth.ClusterStats, host/api's metrics).
type stats struct {
	mu                        sync.Mutex
	decisions, sent, received map[string]int64
	replacements              int64
	inFlight                  atomic.Int64 // forwards sent, unanswered
}

func (s *stats) count(m *map[string]int64, key string) {
	s.mu.Lock()
	if *m == nil {
		*m = make(map[string]int64)
	}
	(*m)[key]++
	s.mu.Unlock()
}

// decided counts a task submitted here by where it ran: "local" or
// "forwarded".
func (s *stats) decided(where string) { s.count(&s.decisions, where) }

// replaced counts a placement of a forwarded task after its first.
func (s *stats) replaced() {
	s.mu.Lock()
	s.replacements++
	s.mu.Unlock()
}

// sentOutcome names what a forward's attempt came to, from its error.
func sentOutcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "completed"
	case errors.Is(err, cluster.ErrRefused):
		return "refused"
	case errors.Is(err, cluster.ErrUnreachable):
		return "unreachable"
	case errors.Is(err, cluster.ErrInterrupted):
		return "interrupted"
	case errors.Is(err, errLeft):
		return "left"
	case ctx.Err() != nil:
		return "canceled"
	}
	return "unknown"
}

// receivedOutcome names what became of a forward another host sent
// here.
func receivedOutcome(repeated bool, r cluster.Result, err error) string {
	switch {
	case repeated:
		return "repeated"
	case errors.Is(err, cluster.ErrRefused):
		return "refused"
	case errors.Is(err, cluster.ErrInterrupted):
		return "interrupted"
	case err != nil:
		// The forwarding host gave up on the call; the task goes on.
		return "abandoned"
	case r.Err != nil:
		return "failed"
	}
	return "completed"
}

// Stats is what the member did since it started, and how it sees the
// cluster now.
func (m *Member) Stats() hearth.ClusterStats {
	out := hearth.ClusterStats{Self: m.cfg.HostID, InFlightSent: int(m.stats.inFlight.Load())}
	if err := m.Err(); err != nil {
		out.EtcdErr = err.Error()
	}
	if m.membership() != nil {
		members := m.view.Members()
		out.Members = len(members)
		out.Draining = len(m.view.Draining())
		out.Unhealthy = len(m.health.hosts())
	}
	m.stats.mu.Lock()
	out.Decisions, out.ForwardsSent, out.ForwardsReceived = maps.Clone(m.stats.decisions), maps.Clone(m.stats.sent), maps.Clone(m.stats.received)
	out.Replacements = m.stats.replacements
	m.stats.mu.Unlock()
	m.mu.Lock()
	out.InFlightReceived = len(m.flights)
	m.mu.Unlock()
	if n, ok := m.membership().(interface{ Stats() etcd.Stats }); ok {
		st := n.Stats()
		out.LeaseLosses, out.EtcdTxns, out.EtcdKeys = st.LeaseLosses, st.Txns, st.Puts
	}
	return out
}
