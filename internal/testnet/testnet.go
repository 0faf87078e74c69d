// Package testnet hands tests loopback TCP ports that stay theirs
// between the moment a port is found free and the moment the server the
// test starts (an embedded etcd, a `hearth serve` process) binds it.
//
// The usual way, listening on port 0 and closing the listener, returns a
// port from the kernel's ephemeral range: the same range the kernel
// draws from for every outgoing connection's local port and for every
// other listener on port 0, so under a loaded parallel suite another
// test takes it in between ("bind: address already in use" in the
// cluster tests). FreePort draws from below that range, where neither
// can land, and never hands one port out twice in a process.
package testnet

import (
	"bufio"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lowest is the least port FreePort hands out: above the well-known and
// the commonly configured ones.
const lowest = 20000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// FreePort returns a loopback TCP port that is free now, below the
// kernel's ephemeral range, and not returned before by this process.
// Where the range leaves too little room below it, it falls back to a
// port the kernel picks.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, _ := ephemeralRange()
	mu.Lock()
	defer mu.Unlock()
	if span := lo - lowest; span >= 1000 {
		start := rand.IntN(span)
		for i := range span {
			p := lowest + (start+i)%span
			if given[p] || !free(p) {
				continue
			}
			given[p] = true
			return p
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[p] {
			given[p] = true
			return p
		}
	}
	t.Fatal("no free loopback port")
	return 0
}

// free reports whether port p can be bound on loopback now.
func free(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ephemeralRange is the kernel's range of ports for outgoing
// connections and port 0 (Linux); 32768-60999, its default, elsewhere.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return lo, hi
	}
	fs := strings.Fields(sc.Text())
	if len(fs) != 2 {
		return lo, hi
	}
	a, err1 := strconv.Atoi(fs[0])
	b, err2 := strconv.Atoi(fs[1])
	if err1 != nil || err2 != nil || a <= 0 || b < a {
		return lo, hi
	}
	return a, b
}
