package etcd

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/matcher"
)

// threeHosts starts a, b and c, with two sessions on a, and waits until
// every host sees all of it.
func threeHosts(t *testing.T, etcd *clustertest.Etcd) []*member {
	t.Helper()
	ms := []*member{startNode(t, etcd, "a"), startNode(t, etcd, "b"), startNode(t, etcd, "c")}
	a := ms[0]
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}})
	a.src.put(cluster.Summary{Session: "coder-2", Dirs: []string{"host"}})
	a.Changed("coder-1")
	a.Changed("coder-2")
	converged(t, ms, []string{"coder-1", "coder-2"}, 5*time.Second)
	return ms
}

// converged waits until every host sees the three members and a's
// sessions as want.
func converged(t *testing.T, ms []*member, want []string, limit time.Duration) {
	t.Helper()
	for _, m := range ms {
		waitView(t, m.View(), limit, "a, b, c and a's sessions "+join(want), func() bool {
			return slices.Equal(memberIDs(m.View()), []string{"a", "b", "c"}) && slices.Equal(sessionIDs(m.View(), "a"), want)
		})
	}
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// changeWhileAway removes coder-1 from a and adds coder-3.
func changeWhileAway(a *member) {
	a.src.remove("coder-1")
	a.Changed("coder-1")
	a.src.put(cluster.Summary{Session: "coder-3", Dirs: []string{"sdk"}})
	a.Changed("coder-3")
}

// TestEtcdRestart restarts etcd on its data under three hosts: they
// reconnect, what changed meanwhile is published, and every view
// converges.
func TestEtcdRestart(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	ms := threeHosts(t, etcd)
	etcd.Stop()
	changeWhileAway(ms[0])
	etcd.Start()
	converged(t, ms, []string{"coder-2", "coder-3"}, 5*testTTL)
	// Placement resumes over the new state.
	d := ms[1].View().Decide("coder", matcher.Hints{Dirs: []string{"sdk"}}, time.Now(), nil)
	if d.Winner != "a/coder-3" {
		t.Errorf("b places an sdk task: %v, want a/coder-3", d)
	}
}

// TestPartition stops etcd for longer than the lease TTL: each host
// notices its lost lease, empties its view (placing locally) and goes on
// working; when etcd is back, each registers under a new lease,
// republishes, and the views converge on the present state, with nothing
// stale left by the old leases.
func TestPartition(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	ms := threeHosts(t, etcd)
	a := ms[0]
	var old []int64
	for _, m := range ms {
		l, _ := m.Lease()
		old = append(old, l)
	}
	fence := a.Fence()

	etcd.Stop()
	for _, m := range ms {
		waitState(t, m.Node, false, 3*testTTL)
		if n := len(m.View().Members()); n != 0 {
			t.Errorf("host %s still lists %d members while it is out of the cluster", m.ID(), n)
		}
		if d := m.View().Decide("coder", matcher.Hints{Dirs: []string{"matcher"}}, time.Now(), nil); d.Choice != matcher.SpawnNoCandidates {
			t.Errorf("host %s still places remotely: %v", m.ID(), d)
		}
	}
	select {
	case <-fence.Done():
	default:
		t.Error("the fence of the lost lease did not end: forwarded tasks would go on running")
	}
	// Local work goes on: reports are taken, flushing waits for the lease.
	changeWhileAway(a)
	if err := a.Flush(context.Background()); err != nil {
		t.Errorf("Flush while out of the cluster: %v", err)
	}

	etcd.Start()
	for i, m := range ms {
		waitState(t, m.Node, true, 5*testTTL)
		if l, _ := m.Lease(); l == old[i] {
			t.Errorf("host %s is registered under its old lease %x", m.ID(), l)
		}
		if r := m.Stats().Registrations; r != 2 {
			t.Errorf("host %s registered %d times, want 2", m.ID(), r)
		}
	}
	converged(t, ms, []string{"coder-2", "coder-3"}, 5*testTTL)
	if got := keys(t, etcd, cluster.HostSessionsPrefix("a")); !slices.Equal(got, []string{cluster.SessionKey("a", "coder-2"), cluster.SessionKey("a", "coder-3")}) {
		t.Errorf("etcd holds %q for a", got)
	}
	if f := a.Fence(); f.Err() != nil {
		t.Errorf("the new lease's fence is already done: %v", f.Err())
	}
}

// TestEtcdReplaced starts an empty etcd where the old one was (its data
// lost): the hosts' leases are unknown to it, so they register again,
// and their watches, whose revisions it never reached, list it afresh.
func TestEtcdReplaced(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	ms := threeHosts(t, etcd)
	etcd.Stop()
	if err := os.RemoveAll(etcd.Dir); err != nil {
		t.Fatal(err)
	}
	changeWhileAway(ms[0])
	etcd.Start()
	converged(t, ms, []string{"coder-2", "coder-3"}, 5*testTTL)
}

// TestStartWhileEtcdDown starts a host while etcd does not answer: Start
// returns a node that is out of the cluster (no lease, its fence ended,
// the reason kept), which publishes nothing and places locally; when
// etcd starts, it registers, publishes what it has, and the others see
// it.
func TestStartWhileEtcdDown(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	b := startNode(t, etcd, "b")
	etcd.Stop()

	a := startNodeWithin(t, etcd, "a", time.Second)
	if l, ok := a.Lease(); ok {
		t.Fatalf("a is registered under lease %x while etcd is down", l)
	}
	if err := a.Err(); err == nil {
		t.Error("a is out of the cluster and Err does not say why")
	}
	if f := a.Fence(); f.Err() == nil {
		t.Error("a's fence is open while it is not registered: it would take forwarded tasks")
	}
	if n := len(a.View().Members()); n != 0 {
		t.Errorf("a lists %d members while etcd is down", n)
	}
	// Local work goes on meanwhile.
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}})
	a.Changed("coder-1")
	if err := a.Flush(context.Background()); err != nil {
		t.Errorf("Flush while out of the cluster: %v", err)
	}

	etcd.Start()
	waitState(t, a.Node, true, 5*testTTL)
	if err := a.Err(); err != nil {
		t.Errorf("a is registered and Err still says %v", err)
	}
	for _, m := range []*member{a, b} {
		waitView(t, m.View(), 5*testTTL, "a and b, with a's session", func() bool {
			return slices.Equal(memberIDs(m.View()), []string{"a", "b"}) && slices.Equal(sessionIDs(m.View(), "a"), []string{"coder-1"})
		})
	}
	if r := a.Stats().Registrations; r != 1 {
		t.Errorf("a registered %d times, want 1", r)
	}
}

// TestPublishNowOutOfTheCluster: a host out of the cluster does not wait
// for the registration attempt in flight (which holds the publishing
// lock for as long as etcd does not answer) before a task it runs may
// start or finish: PublishNow returns at once with nothing to publish to.
func TestPublishNowOutOfTheCluster(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	etcd.Stop()
	a := startNodeWithin(t, etcd, "a", time.Second)
	if _, ok := a.Lease(); ok {
		t.Fatal("a is registered while etcd is down")
	}
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}})
	a.Changed("coder-1")
	// Hold the lock as a registration attempt against a silent etcd does.
	a.pubMu.Lock()
	defer a.pubMu.Unlock()
	done := make(chan struct{})
	go func() {
		a.PublishNow()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("PublishNow waits for the registration attempt while the host is out of the cluster")
	}
}
