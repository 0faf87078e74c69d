package wire

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
)

// BenchmarkMembersListing: what the records' JSON costs a `hearth hosts
// list` of a three-host cluster (two agents each), against the typed
// fields alone (the listing as a release before the JSON sent and read
// it), in the same run: what the daemon's client does with a reply,
// proto bytes to hearth.Members. B/listing is the reply's size.
func BenchmarkMembersListing(b *testing.B) {
	ms := hearth.Members{Self: "host-0", Clustered: true}
	for i := range 3 {
		ms.Hosts = append(ms.Hosts, hearth.Member{ID: fmt.Sprintf("host-%d", i), Addr: "10.0.0.7:7420", Hostname: "box",
			Started: time.Unix(1_700_000_000, 0), ConfigHash: "3f1c2a9e5d414b7e", Version: "v0.9.0", Sessions: 3,
			Agents: []hearth.AgentLoad{{Name: "coder", Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4},
				{Name: "claude-code", External: true, Live: 1}}})
	}
	for _, bc := range []struct {
		name  string
		strip bool
	}{{"json", false}, {"typed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			hl := Members(ms)
			if bc.strip {
				withoutJSON(hl, &peerpb.ClusterRunList{})
			}
			buf, err := proto.Marshal(hl)
			if err != nil {
				b.Fatal(err)
			}
			size := len(buf)
			for b.Loop() {
				var got peerpb.HostList
				if err := proto.Unmarshal(buf, &got); err != nil {
					b.Fatal(err)
				}
				if _, err := MembersOf(&got); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size), "B/listing")
		})
	}
}
