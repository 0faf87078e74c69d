package etcd

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/matcher"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// source stands for the host's member (host/cluster/member): its record
// and sessions.
type source struct {
	mu       sync.Mutex
	host     hearth.Member
	sessions map[string]cluster.Summary
	reads    int // Session calls
}

func newSource(addr string) *source {
	return &source{
		host: hearth.Member{Addr: addr, Hostname: "test", Started: time.Now(),
			Agents: []hearth.AgentLoad{{Name: "coder", MaxSessions: 4}}},
		sessions: make(map[string]cluster.Summary),
	}
}

func (s *source) Host() hearth.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.host
	h.Agents = slices.Clone(h.Agents)
	return h
}

func (s *source) Session(id string) (cluster.Summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	v, ok := s.sessions[id]
	return v, ok
}

func (s *source) Sessions() []cluster.Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]cluster.Summary, 0, len(s.sessions))
	for _, v := range s.sessions {
		out = append(out, v)
	}
	return out
}

func (s *source) put(sum cluster.Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sum.Agent == "" {
		sum.Agent = "coder"
	}
	if sum.Capacity == 0 {
		sum.Capacity = 1
	}
	if sum.LastActivity.IsZero() {
		sum.LastActivity = time.Now()
	}
	s.sessions[sum.Session] = sum
}

func (s *source) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, id)
}

const testTTL = 2 * time.Second

// member is one host of a test cluster.
type member struct {
	*Node
	src *source
}

func startNode(t testing.TB, etcd *clustertest.Etcd, id string, edit ...func(*Options)) *member {
	t.Helper()
	return startNodeWithin(t, etcd, id, 10*time.Second, edit...)
}

// startNodeWithin starts a node whose first attempt to register has
// limit.
func startNodeWithin(t testing.TB, etcd *clustertest.Etcd, id string, limit time.Duration, edit ...func(*Options)) *member {
	t.Helper()
	src := newSource(id + ".test:7420")
	cfg := cluster.Config{
		Endpoints:       etcd.Endpoints(),
		Advertise:       id + ".test:7420",
		HostID:          id,
		LeaseTTL:        testTTL,
		PublishInterval: 100 * time.Millisecond,
	}.WithDefaults("test", "/data/"+id)
	o := Options{
		Config:   cfg,
		Identity: cluster.Identity("test", "/data/"+id),
		Source:   src,
	}
	for _, e := range edit {
		e(&o)
	}
	o.View = cluster.NewView(o.Config.HostID, func(string) matcher.Config { return matcher.DefaultConfig() })
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	n, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("starting node %s: %v", id, err)
	}
	m := &member{Node: n, src: src}
	t.Cleanup(func() { m.Close() })
	return m
}

// Close closes the node once; tests close some early.
func (m *member) Close() error {
	if m.Node == nil {
		return nil
	}
	err := m.Node.Close()
	m.Node = nil
	return err
}

// crash stops the node as kill -9 would: no revoke, the lease expires on
// its own.
func (m *member) crash() {
	m.crashed.Store(true)
	m.Close()
}

// waitView waits, on the view's change signal, until cond holds, failing
// after limit.
func waitView(t testing.TB, v *cluster.View, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		ch := v.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("host %s: not within %s: %s", v.Self(), limit, what)
		}
	}
}

// waitState waits, on the node's state signal, until it is registered
// (or not).
func waitState(t testing.TB, n *Node, registered bool, limit time.Duration) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		ch := n.StateChanged()
		if _, ok := n.Lease(); ok == registered {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("host %s: registered is not %v within %s", n.ID(), registered, limit)
		}
	}
}

func memberIDs(v *cluster.View) []string {
	var ids []string
	for _, h := range v.Members() {
		ids = append(ids, h.ID)
	}
	return ids
}

func sessionIDs(v *cluster.View, host string) []string {
	var ids []string
	for _, s := range v.Sessions(host) {
		ids = append(ids, s.Session)
	}
	return ids
}
