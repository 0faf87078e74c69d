package testnet

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: ports are distinct, bindable, and outside the range the
// kernel hands to port 0 and to outgoing connections.
func TestFreePort(t *testing.T) {
	lo, hi := ephemeralRange()
	seen := map[int]bool{}
	for range 200 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if lo-lowest >= 1000 && p >= lo && p <= hi {
			t.Fatalf("port %d is in the ephemeral range %d-%d", p, lo, hi)
		}
	}
	for p := range seen {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		l.Close()
		break
	}
	// A port taken since is not handed out: listen on 0 many times and
	// check none of them comes back (they are in the ephemeral range).
	var ls []net.Listener
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range 50 {
		p := FreePort(t)
		for _, l := range ls {
			if l.Addr().(*net.TCPAddr).Port == p {
				t.Fatalf("port %d, held by a listener, was handed out", p)
			}
		}
	}
}
