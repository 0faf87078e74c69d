package api

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// The HTTP side's connection budget (docs/daemon.md, "Connections").
//
// Any local user can open connections to the HTTP side; only those with
// the token may use it. A cap on all connections counted before
// authentication let 1,500 slow connections without a token hold every
// slot, and a tokened PreToolUse waited 13 to 28 s behind them, past
// the hook's timeout (issue 25, finding 3). So a connection is
// unauthenticated until a request on it presents the token (or the
// dashboard's cookie), and unauthenticated connections have a budget of
// their own: when one more arrives than the budget holds, the oldest
// unauthenticated connection is closed. A client with the token
// connects, sends its request at once and leaves the budget with it;
// slow connections without one take nothing from it but each other's
// places, and each is closed anyway when its headers take longer than
// httpReadHeader. All connections together are capped by what the file
// limit leaves after what the rest of the daemon needs (the unix
// socket, Badger, plugins): past the cap, connections wait in the
// kernel's backlog, and the unix socket goes on answering.

// Limits of the HTTP side's connections.
type connLimits struct {
	// Max is how many connections may be open; Unauth how many of them
	// may be unauthenticated.
	Max, Unauth int
}

// Bounds of the budget.
const (
	// fdReserveMin is the least the budget leaves of the file limit for
	// the rest of the daemon, and fdReserveShare the share it leaves when
	// that is more.
	fdReserveMin   = 128
	fdReserveShare = 4
	maxHTTPConns   = 8192
	minHTTPConns   = 16
	minUnauth      = 8
)

// limitsFor sizes the budget for a file limit of nofile descriptors: a
// quarter of it (at least fdReserveMin) stays for the unix socket and
// the rest of the daemon, and a quarter of the connections may be
// unauthenticated.
func limitsFor(nofile uint64) connLimits {
	reserve := max(nofile/fdReserveShare, fdReserveMin)
	n := minHTTPConns
	if nofile > reserve {
		n = int(min(max(nofile-reserve, minHTTPConns), maxHTTPConns))
	}
	return connLimits{Max: n, Unauth: max(n/4, minUnauth)}
}

// httpLimits sizes the budget for this process's file limit.
func httpLimits() connLimits {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return limitsFor(1024)
	}
	return limitsFor(rl.Cur)
}

// budget is a listener that keeps to a connLimits.
type budget struct {
	net.Listener
	lim   connLimits
	slots chan struct{} // one per open connection

	mu     sync.Mutex
	unauth *list.List // of *budgetConn, oldest first
}

func newBudget(l net.Listener, lim connLimits) *budget {
	return &budget{Listener: l, lim: lim, slots: make(chan struct{}, lim.Max), unauth: list.New()}
}

// Accept waits for a slot, accepts a connection, and closes the oldest
// unauthenticated connection when the new one is one too many.
func (b *budget) Accept() (net.Conn, error) {
	b.slots <- struct{}{}
	c, err := b.Listener.Accept()
	if err != nil {
		<-b.slots
		return nil, err
	}
	bc := &budgetConn{Conn: c, b: b}
	var evict *budgetConn
	b.mu.Lock()
	bc.elem = b.unauth.PushBack(bc)
	if b.unauth.Len() > b.lim.Unauth {
		evict = b.unauth.Remove(b.unauth.Front()).(*budgetConn)
		evict.elem = nil
	}
	b.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
	return bc, nil
}

// budgetConn is a connection the budget counts.
type budgetConn struct {
	net.Conn
	b    *budget
	once sync.Once
	// elem is its place among the unauthenticated, nil once it is not
	// (b.mu).
	elem *list.Element
}

// authenticated takes the connection out of the unauthenticated budget:
// a request on it presented the token.
func (c *budgetConn) authenticated() {
	c.b.mu.Lock()
	if c.elem != nil {
		c.b.unauth.Remove(c.elem)
		c.elem = nil
	}
	c.b.mu.Unlock()
}

func (c *budgetConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.authenticated()
		<-c.b.slots
	})
	return err
}

// connKey carries a request's connection in its context.
type connKey struct{}

// connContext puts the connection in its requests' contexts, for
// markAuthenticated.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// markAuthenticated takes r's connection out of the unauthenticated
// budget.
func markAuthenticated(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*budgetConn); ok {
		c.authenticated()
	}
}
