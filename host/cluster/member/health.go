package member

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
)

// The other hosts' health, as this host sees it: whether it can work
// with each member over the hosts' API. A host can be a member (its
// record is in etcd) and still be useless to this one: its certificate
// is from another CA, so every handshake fails; or it does not answer.
// Such a host is marked unhealthy (hearth.Member.Unhealthy, in the
// listings), left out of placement (no task is forwarded to it, nothing
// spawned there) until it answers again, and named in one logged line
// when it turns unhealthy and one when it answers again: its host ID,
// its address and why. Before (issue 26) it stayed listed, kept being
// chosen, and gRPC's own redialing wrote a warning naming only an
// address every second or two in both hosts' logs.

// DefaultProbeEvery is how often a host probes each other member's API
// (peer.Client.Probe). A host that turns unhealthy is left out of
// placement within it plus the dial timeout; one that answers again is
// placed on again within it.
const DefaultProbeEvery = 2 * time.Second

// health is why each member this host cannot work with fails, by host
// ID: absent while it can (or before its first probe).
type health struct {
	mu  sync.Mutex
	bad map[string]string
}

// unhealthy returns why host id fails its probes, empty while it does
// not.
func (h *health) unhealthy(id string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bad[id]
}

// hosts returns the unhealthy hosts' IDs, sorted.
func (h *health) hosts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.bad))
	for id := range h.bad {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// probeLoop probes every other member now and every `every` until ctx
// ends.
func (m *Member) probeLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.probeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probeAll probes the other members at once, each within the dial
// timeout, and records what changed.
func (m *Member) probeAll(ctx context.Context) {
	members := m.view.Members()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, mm := range members {
		if mm.ID == m.cfg.HostID {
			continue
		}
		wg.Go(func() { errs[i] = m.peers.Probe(ctx, mm) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	for i, mm := range members {
		if mm.ID != m.cfg.HostID {
			m.setHealth(mm, errs[i])
		}
	}
}

// setHealth records mm's last probe, and logs a change of state: one
// line when mm turns unhealthy, one when it answers again. A failing
// host whose reason changes (a reset, then a refused handshake) is not
// logged again; the listing shows the latest reason. An unhealthy host
// that leaves the cluster stays recorded (one short string per host ID),
// so that when it comes back and answers (restarted with the right
// certificate, say) the line that it answers again is logged: the last
// word on it in each log is never "cannot work with" once it works.
func (m *Member) setHealth(mm hearth.Member, err error) {
	m.health.mu.Lock()
	was, bad := m.health.bad[mm.ID]
	if err != nil {
		if m.health.bad == nil {
			m.health.bad = make(map[string]string)
		}
		m.health.bad[mm.ID] = err.Error()
	} else {
		delete(m.health.bad, mm.ID)
	}
	m.health.mu.Unlock()
	switch {
	case err != nil && !bad:
		m.log.Warn("cannot work with a host of the cluster; it is left out of placement until it answers again", "host", mm.ID, "addr", mm.Addr, "why", err.Error())
	case err == nil && bad:
		m.log.Warn("a host of the cluster answers again; it is placed on again", "host", mm.ID, "addr", mm.Addr, "was", was)
	}
}
