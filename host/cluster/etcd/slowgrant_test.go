package etcd

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
)

// holdingProxy forwards connections to etcd, except while it holds:
// then it accepts them and says nothing (as a network that drops the
// packets of a new connection, or an etcd still starting), until release,
// which forwards them with what they sent meanwhile.
type holdingProxy struct {
	l      net.Listener
	target string
	arrive chan struct{} // one per connection accepted while holding

	mu      sync.Mutex
	holding bool
	held    []net.Conn
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{l: l, target: target, arrive: make(chan struct{}, 64)}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range append(p.conns, p.held...) {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *holdingProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.holding {
			p.held = append(p.held, c)
			p.mu.Unlock()
			p.arrive <- struct{}{}
			continue
		}
		p.mu.Unlock()
		p.forward(c)
	}
}

func (p *holdingProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	p.wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(c, up)
	go pipe(up, c)
}

// hold drops the connections there are, and holds new ones.
func (p *holdingProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// release forwards the held connections and the ones to come.
func (p *holdingProxy) release() {
	p.mu.Lock()
	held := p.held
	p.held, p.holding = nil, false
	p.mu.Unlock()
	for _, c := range held {
		p.forward(c)
	}
}

// TestRegisterAfterASlowGrant: a host registers again through a
// connection that answers only after longer than the lease TTL (its
// Grant waited on it all that time, as after an outage, when etcd comes
// back). The lease etcd grants is new, and held: the host keeps it
// rather than taking it for lost at birth (the Grant's send time, the
// only moment known to precede etcd's grant, is a TTL ago) and
// registering a third time, which emptied its view and refused forwarded
// tasks meanwhile (the flakes of TestPartition and
// TestClusterEtcdDownAndBack under load).
func TestRegisterAfterASlowGrant(t *testing.T) {
	etcd := clustertest.StartEtcd(t)
	p := newHoldingProxy(t, etcd.ClientURL.Host)
	b := startNode(t, etcd, "b", func(o *Options) { o.Config.Endpoints = []string{"http://" + p.l.Addr().String()} })

	p.hold()
	waitState(t, b.Node, false, 3*testTTL)
	// The host's next attempt connects and waits, its Grant queued;
	// hold it for longer than the TTL, within the attempt's bound
	// (dial_timeout, 5 s).
	select {
	case <-p.arrive:
	case <-time.After(10 * time.Second):
		t.Fatal("the host did not try to connect again within 10s")
	}
	time.Sleep(testTTL + testTTL/4) // the fault's length, not a wait for a signal
	p.release()

	waitState(t, b.Node, true, 5*testTTL)
	if _, err := cluster.Held(b.Fence(), time.Now()); err != nil {
		t.Errorf("the lease granted after a slow Grant is not held: %v", err)
	}
	if r := b.Stats().Registrations; r != 2 {
		t.Errorf("b registered %d times, want 2: its new lease was taken for lost", r)
	}
}
