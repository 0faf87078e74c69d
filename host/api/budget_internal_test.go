package api

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestLimitsFor: the budget leaves a quarter of the file limit (at least
// 128) to the rest of the daemon, and a quarter of its connections to
// clients without the token.
func TestLimitsFor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		nofile uint64
		want   connLimits
	}{
		{64, connLimits{16, 8}},
		{256, connLimits{128, 32}},
		{1024, connLimits{768, 192}},
		{20000, connLimits{8192, 2048}},
		{1 << 20, connLimits{8192, 2048}},
	} {
		if got := limitsFor(tt.nofile); got != tt.want {
			t.Errorf("limitsFor(%d) = %+v, want %+v", tt.nofile, got, tt.want)
		}
	}
}

// TestBudgetEvictsTheOldestUnauthenticated: past its budget of
// unauthenticated connections, the listener closes the oldest of them;
// a connection that authenticated is never closed to make room.
func TestBudgetEvictsTheOldestUnauthenticated(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := newBudget(inner, connLimits{Max: 16, Unauth: 4})
	defer b.Close()
	accepted := make(chan *budgetConn)
	go func() {
		for {
			c, err := b.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c.(*budgetConn)
		}
	}()
	dial := func() (net.Conn, *budgetConn) {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// The test holds the server's side until it ends, as the HTTP
		// server does: a connection nothing references is closed by its
		// finalizer at the next GC, which CI saw close the authenticated
		// one mid-test once the test ran beside others.
		s := <-accepted
		t.Cleanup(func() { s.Close() })
		return c, s
	}
	closed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	authed, server := dial()
	server.authenticated()
	var slow []net.Conn
	for range 10 {
		c, _ := dial()
		slow = append(slow, c)
	}
	// The first six slow ones made room for the last four.
	for i, c := range slow[:6] {
		if !closed(c) {
			t.Errorf("slow connection %d is open; want the oldest closed", i)
		}
	}
	for _, c := range slow[6:] {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			t.Error("one of the newest slow connections was closed")
		}
	}
	authed.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := authed.Read(make([]byte, 1)); err == io.EOF {
		t.Error("the authenticated connection was closed to make room")
	}
	// And one more for the Accept that waits for the next connection.
	if n := len(b.slots); n != 6 {
		t.Errorf("%d slots are taken, want 6 (one authenticated, four not, one waiting)", n)
	}
}
