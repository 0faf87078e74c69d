package api

import (
	"fmt"
	"testing"
	"time"
)

// TestRefusalsWarnOncePerAddress: refused handshakes from one IP (any
// port: each dial has its own) are one warning per refusalQuiet, the
// next one carrying the count of those in between; another IP is warned
// about on its own; the addresses kept stay bounded.
func TestRefusalsWarnOncePerAddress(t *testing.T) {
	var r refusals
	t0 := time.Unix(1e9, 0)
	if n, warn := r.refused("10.0.0.1:4000", t0); !warn || n != 0 {
		t.Fatalf("first refusal: warn %v, n %d", warn, n)
	}
	for i := range 100 { // a peer redialing every 1.5 s for 150 s
		if _, warn := r.refused(fmt.Sprintf("10.0.0.1:%d", 4001+i), t0.Add(time.Duration(i)*1500*time.Millisecond)); warn {
			t.Fatalf("refusal %d within %s was warned about again", i+2, refusalQuiet)
		}
	}
	if _, warn := r.refused("10.0.0.2:4000", t0.Add(time.Second)); !warn {
		t.Fatal("another address's first refusal was not warned about")
	}
	if n, warn := r.refused("10.0.0.1:5000", t0.Add(refusalQuiet)); !warn || n != 100 {
		t.Fatalf("after %s: warn %v, n %d; want a warning counting the 100 in between", refusalQuiet, warn, n)
	}
	for i := range 3 * refusalAddrs {
		r.refused(fmt.Sprintf("[2001:db8:%x::1]:1", i), t0) // each its own /64
	}
	if len(r.ips) > refusalAddrs {
		t.Fatalf("%d addresses kept, bound %d", len(r.ips), refusalAddrs)
	}
}

// TestRefusalsCountAClientOnce: every address one client may send from
// is one count, one warning per refusalQuiet: the ports of its dials,
// the addresses of its IPv6 /64 (a host may use any of them, and privacy
// addresses change), its IPv4 address written as IPv6, an IPv6 address
// with a zone. Another /64, another IPv4 address, is another client.
func TestRefusalsCountAClientOnce(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	for _, c := range []struct {
		first string
		same  func(i int) string
		other string
	}{
		{"10.0.0.1:4000", func(i int) string { return fmt.Sprintf("10.0.0.1:%d", 4001+i) }, "10.0.0.2:4000"},
		{"[2001:db8:0:1::1]:4000", func(i int) string { return fmt.Sprintf("[2001:db8:0:1:%x:%x::]:4000", i, i*7) }, "[2001:db8:0:2::1]:4000"},
		{"10.0.0.1:4000", func(i int) string { return fmt.Sprintf("[::ffff:10.0.0.1]:%d", 4001+i) }, "[::ffff:10.0.0.2]:4000"},
		{"[fe80::1%eth0]:4000", func(i int) string { return fmt.Sprintf("[fe80::%x%%eth%d]:4000", i+2, i%3) }, "[fe80:0:0:1::1]:4000"},
	} {
		var r refusals
		if _, warn := r.refused(c.first, t0); !warn {
			t.Fatalf("%s: the first refusal was not warned about", c.first)
		}
		for i := range 2 * refusalAddrs {
			if _, warn := r.refused(c.same(i), t0.Add(time.Second)); warn {
				t.Fatalf("%s, then %s: warned about again within %s", c.first, c.same(i), refusalQuiet)
			}
		}
		if _, warn := r.refused(c.other, t0.Add(time.Second)); !warn {
			t.Errorf("%s, another client than %s: not warned about", c.other, c.first)
		}
		if n, warn := r.refused(c.first, t0.Add(refusalQuiet)); !warn || n != 2*refusalAddrs {
			t.Errorf("%s after %s: warn %v, n %d; want a warning counting the %d in between", c.first, refusalQuiet, warn, n, 2*refusalAddrs)
		}
	}
}
