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
		r.refused(fmt.Sprintf("[2001:db8::%x]:1", i), t0)
	}
	if len(r.ips) > refusalAddrs {
		t.Fatalf("%d addresses kept, bound %d", len(r.ips), refusalAddrs)
	}
}
