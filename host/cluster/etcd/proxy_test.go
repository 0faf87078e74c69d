package etcd

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
)

// proxy stands between one host and etcd on loopback, so that a test can
// cut that host off while the others keep their connections: a network
// partition between a host and etcd.
type proxy struct {
	l      net.Listener
	target string

	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]struct{}
	wg      sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) endpoint() string { return "http://" + p.l.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		blocked := p.blocked
		p.mu.Unlock()
		if blocked {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		go pipe(c, up)
		go pipe(up, c)
	}
}

// cut drops every connection and refuses new ones until heal.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) heal() {
	p.mu.Lock()
	p.blocked = false
	p.mu.Unlock()
}

func throughProxy(p *proxy) func(*Options) {
	return func(o *Options) { o.Config.Endpoints = []string{p.endpoint()} }
}

// TestHostPartition cuts one host off etcd for longer than the TTL while
// the others keep working: they see it leave, it places locally, and when
// the network heals it registers again and catches up with what changed.
func TestHostPartition(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	p := newProxy(t, etcd.ClientURL.Host)
	a, b, c := startNode(t, etcd, "a"), startNode(t, etcd, "b", throughProxy(p)), startNode(t, etcd, "c")
	ms := []*member{a, b, c}
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}})
	a.src.put(cluster.Summary{Session: "coder-2", Dirs: []string{"host"}})
	a.Changed("coder-1")
	a.Changed("coder-2")
	b.src.put(cluster.Summary{Session: "coder-9", Dirs: []string{"sdk"}})
	b.Changed("coder-9")
	converged(t, ms, []string{"coder-1", "coder-2"}, 5*time.Second)

	p.cut()
	for _, m := range []*member{a, c} {
		waitView(t, m.View(), 3*testTTL, "b and its sessions gone", func() bool {
			return slices.Equal(memberIDs(m.View()), []string{"a", "c"}) && len(m.View().Sessions("b")) == 0
		})
	}
	waitState(t, b.Node, false, 3*testTTL)
	if n := len(b.View().Members()); n != 0 {
		t.Errorf("b, cut off, lists %d members", n)
	}
	changeWhileAway(a)

	p.heal()
	waitState(t, b.Node, true, 5*testTTL)
	converged(t, ms, []string{"coder-2", "coder-3"}, 5*testTTL)
	waitView(t, a.View(), 5*testTTL, "b's coder-9 back", func() bool { return slices.Equal(sessionIDs(a.View(), "b"), []string{"coder-9"}) })
}

// TestWatchCompacted cuts a host off briefly (well within its TTL) while
// etcd moves on and compacts its history: the host's watch cannot resume
// where it stopped, so it lists the cluster again.
func TestWatchCompacted(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	p := newProxy(t, etcd.ClientURL.Host)
	long := func(o *Options) { o.Config.LeaseTTL = 30 * time.Second }
	a, b := startNode(t, etcd, "a", long), startNode(t, etcd, "b", long, throughProxy(p))
	a.src.put(cluster.Summary{Session: "coder-1"})
	a.Changed("coder-1")
	waitView(t, b.View(), 5*time.Second, "coder-1", func() bool { return slices.Equal(sessionIDs(b.View(), "a"), []string{"coder-1"}) })
	lease, _ := b.Lease()

	p.cut()
	ctx := context.Background()
	a.src.put(cluster.Summary{Session: "coder-2"})
	a.Changed("coder-2")
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// A write elsewhere, so that the compaction takes the revision of
	// coder-2's put, the one b's watch resumes from.
	if _, err := raw.Put(ctx, "/elsewhere", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Compact(ctx, etcd.Revision(), clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	p.heal()

	waitView(t, b.View(), 10*time.Second, "coder-1 and coder-2", func() bool {
		return slices.Equal(sessionIDs(b.View(), "a"), []string{"coder-1", "coder-2"})
	})
	if st := b.Stats(); st.Compactions < 1 || st.Listings < 2 {
		t.Errorf("b's watch met %d compactions and it listed %d times; want it to have listed again after a compaction", st.Compactions, st.Listings)
	}
	if l, _ := b.Lease(); l != lease {
		t.Errorf("b registered again (lease %x, was %x): the cut was to stay within the TTL", l, lease)
	}
}
