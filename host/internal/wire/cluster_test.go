package wire

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

// TestClusterListingsRoundTrip: every field of a cluster's listings
// survives the wire, whichever it is. The values are filled by
// reflection, each field with a value of its own, so that a field added
// to hearth.Member, hearth.AgentLoad or hearth.HostRuns and not carried
// by peer.proto and this package fails here, not in a listing.
func TestClusterListingsRoundTrip(t *testing.T) {
	var ms hearth.Members
	fill(t, reflect.ValueOf(&ms).Elem(), new(int))
	if got := MembersOf(Members(ms)); !reflect.DeepEqual(got, ms) {
		t.Errorf("members through the wire:\n got %+v\nwant %+v", got, ms)
	}

	var cr hearth.ClusterRuns
	fill(t, reflect.ValueOf(&cr).Elem(), new(int))
	// A host in no cluster answers ListClusterRuns with an error: the
	// message has no Clustered, and what decodes is clustered.
	cr.Clustered = true
	if got := ClusterRunsOf(ClusterRuns(cr)); !reflect.DeepEqual(got, cr) {
		t.Errorf("cluster runs through the wire:\n got %+v\nwant %+v", got, cr)
	}
}

// TestClusterListingsEmpty: empty listings decode with empty lists, not
// nil ones (`--json` prints [] for them), and zero times stay zero.
func TestClusterListingsEmpty(t *testing.T) {
	ms := MembersOf(Members(hearth.Members{Hosts: []hearth.Member{{ID: "a"}}}))
	if ms.Hosts == nil || ms.Hosts[0].Agents == nil || !ms.Hosts[0].Started.IsZero() {
		t.Errorf("got %+v, want empty lists and a zero start", ms)
	}
	cr := ClusterRunsOf(ClusterRuns(hearth.ClusterRuns{Hosts: []hearth.HostRuns{{Host: "a"}}}))
	if cr.Hosts == nil || cr.Hosts[0].Runs == nil || !cr.Hosts[0].Listed.IsZero() {
		t.Errorf("got %+v, want empty lists and a zero listing time", cr)
	}
}

// fill sets every field of v, and one element of every slice, to a value
// no other field has: strings and numbers from the counter n, booleans
// true, times n seconds after an epoch (as the wire decodes them, in
// local time).
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), int64(*n))))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), n)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	default:
		t.Fatalf("fill: a field of kind %s (%s): teach fill, and the wire, about it", v.Kind(), v.Type())
	}
}
