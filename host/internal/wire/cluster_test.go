package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
)

// TestClusterListingsRoundTrip: every field of a cluster's listings
// survives the wire, whichever it is. The values are filled by
// reflection, each field with a value of its own, so that a field added
// to hearth.Member, hearth.AgentLoad, hearth.HostRuns or the listings
// and not carried fails here. It is carried with no change to this
// package or peer.proto: the records cross as their JSON.
func TestClusterListingsRoundTrip(t *testing.T) {
	ms, cr := filledListings(t)
	if got, err := MembersOf(Members(ms)); err != nil || !reflect.DeepEqual(got, ms) {
		t.Errorf("members through the wire: %v\n got %+v\nwant %+v", err, got, ms)
	}
	if got, err := ClusterRunsOf(ClusterRuns(cr)); err != nil || !reflect.DeepEqual(got, cr) {
		t.Errorf("cluster runs through the wire: %v\n got %+v\nwant %+v", err, got, cr)
	}
}

// filledListings are listings with every field filled (fill).
func filledListings(t testing.TB) (hearth.Members, hearth.ClusterRuns) {
	var ms hearth.Members
	n := new(int)
	fill(t, reflect.ValueOf(&ms).Elem(), n)
	var cr hearth.ClusterRuns
	fill(t, reflect.ValueOf(&cr).Elem(), n)
	// A host in no cluster answers ListClusterRuns with an error: what
	// decodes is clustered.
	cr.Clustered = true
	return ms, cr
}

// The fields the typed fields of peer.proto carry, frozen when the
// records began to cross as JSON: a writer of a release before that
// sends these and nothing else, and a reader of one reads these alone.
// No field is ever added here (a new field goes by the JSON).
var typedFields = map[reflect.Type][]string{
	reflect.TypeFor[hearth.Members]():     {"Self", "Clustered", "EtcdErr", "Hosts"},
	reflect.TypeFor[hearth.Member]():      {"ID", "Self", "Addr", "Hostname", "Started", "ConfigHash", "Version", "Draining", "Unhealthy", "Sessions", "Agents"},
	reflect.TypeFor[hearth.AgentLoad]():   {"Name", "External", "Live", "Dormant", "Load", "Capacity", "MaxSessions"},
	reflect.TypeFor[hearth.ClusterRuns](): {"Self", "Clustered", "Hosts"},
	// Runs are RunInfo messages, the API's, and whole (TestRunRoundTrip).
	reflect.TypeFor[hearth.HostRuns](): {"Host", "State", "Runs", "Listed", "Error"},
}

// typedOnly is v with only the fields of typedFields set: what a reader
// of the typed fields can know of it.
func typedOnly[T any](t *testing.T, v T) T {
	t.Helper()
	out := reflect.New(reflect.TypeOf(v)).Elem()
	keepTyped(t, out, reflect.ValueOf(v))
	return out.Interface().(T)
}

func keepTyped(t *testing.T, dst, src reflect.Value) {
	t.Helper()
	switch names, ok := typedFields[src.Type()]; {
	case ok:
		for _, name := range names {
			f, ok := src.Type().FieldByName(name)
			if !ok {
				t.Fatalf("typedFields names %s.%s, which is no more: the typed fields are frozen, a field of them cannot go while they are written", src.Type(), name)
			}
			keepTyped(t, dst.FieldByIndex(f.Index), src.FieldByIndex(f.Index))
		}
	case src.Kind() == reflect.Slice && !src.IsNil():
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			keepTyped(t, dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}

// withoutJSON is what a writer of a release before the JSON sends (its
// typed fields are written by the same lines as today's), and what a
// reader of one sees of a message of today's: proto readers skip the
// fields they do not know.
func withoutJSON(hl *peerpb.HostList, cl *peerpb.ClusterRunList) {
	hl.Members = nil
	for _, h := range hl.GetHosts() {
		h.Member = nil
	}
	cl.ClusterRuns = nil
	for _, h := range cl.GetHosts() {
		h.HostRuns = nil
	}
}

// TestClusterListingsFromAnOlderWriter: listings from a writer of a
// release before the JSON (typed fields only, as host/cluster/peer
// TestListingsAcrossTheWire still checks them) read, with every field
// the typed fields carry.
func TestClusterListingsFromAnOlderWriter(t *testing.T) {
	ms, cr := filledListings(t)
	hl, cl := Members(ms), ClusterRuns(cr)
	withoutJSON(hl, cl)
	got, err := MembersOf(hl)
	if want := typedOnly(t, ms); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("members from an older writer: %v\n got %+v\nwant %+v", err, got, want)
	}
	gotRuns, err := ClusterRunsOf(cl)
	if want := typedOnly(t, cr); err != nil || !reflect.DeepEqual(gotRuns, want) {
		t.Errorf("cluster runs from an older writer: %v\n got %+v\nwant %+v", err, gotRuns, want)
	}

	// The same, written by hand rather than by this package's encoder.
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	old := &peerpb.HostList{Self: "b", Clustered: true, EtcdErr: "down", Hosts: []*peerpb.Host{{Id: "b", Addr: "b:1", Hostname: "box",
		StartedUnixNano: started.UnixNano(), ConfigHash: "abc", Version: "dev", Sessions: 2, Self: true, Draining: "maintenance", Unhealthy: "no",
		Agents: []*peerpb.AgentLoad{{Name: "coder", External: true, Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4}}}}}
	want := hearth.Members{Self: "b", Clustered: true, EtcdErr: "down", Hosts: []hearth.Member{{ID: "b", Addr: "b:1", Hostname: "box",
		Started: started.Local(), ConfigHash: "abc", Version: "dev", Sessions: 2, Self: true, Draining: "maintenance", Unhealthy: "no",
		Agents: []hearth.AgentLoad{{Name: "coder", External: true, Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4}}}}}
	if got := mustMembersOf(t, old); !reflect.DeepEqual(got, want) {
		t.Errorf("a listing written by hand as before the JSON:\n got %+v\nwant %+v", got, want)
	}
	oldRuns := &peerpb.ClusterRunList{Self: "b", Hosts: []*peerpb.HostRuns{{Host: "c", State: "unreachable", ListedUnixNano: started.UnixNano(),
		Error: "no answer", Runs: []*apipb.RunInfo{{Id: "run-1"}}}}}
	gotRuns, err = ClusterRunsOf(oldRuns)
	if err != nil || gotRuns.Self != "b" || !gotRuns.Clustered || len(gotRuns.Hosts) != 1 {
		t.Fatalf("runs written by hand as before the JSON: %+v %v", gotRuns, err)
	}
	if h := gotRuns.Hosts[0]; h.Host != "c" || h.State != hearth.OwnerUnreachable || h.Error != "no answer" || !h.Listed.Equal(started) ||
		len(h.Runs) != 1 || h.Runs[0].ID != "run-1" {
		t.Errorf("c's runs written by hand as before the JSON: %+v", h)
	}
}

// TestClusterListingsToAnOlderReader: a reader of a release before the
// JSON, which reads the typed fields alone, still finds every one of
// them in today's listings, with today's values.
func TestClusterListingsToAnOlderReader(t *testing.T) {
	ms, cr := filledListings(t)
	hl, cl := Members(ms), ClusterRuns(cr)
	// Through proto bytes, as the reader receives them.
	for _, m := range []proto.Message{hl, cl} {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatal(err)
		}
	}
	withoutJSON(hl, cl)
	if got, want := mustMembersOf(t, hl), typedOnly(t, ms); !reflect.DeepEqual(got, want) {
		t.Errorf("members as an older reader reads them:\n got %+v\nwant %+v", got, want)
	}
	if got, err := ClusterRunsOf(cl); err != nil || !reflect.DeepEqual(got, typedOnly(t, cr)) {
		t.Errorf("cluster runs as an older reader reads them: %v\n got %+v\nwant %+v", err, got, typedOnly(t, cr))
	}
}

func mustMembersOf(t *testing.T, hl *peerpb.HostList) hearth.Members {
	t.Helper()
	ms, err := MembersOf(hl)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestClusterListingsJSONAlone: the JSON is the record whole: a
// listing whose typed fields are all empty (as once they go) reads the
// same, and a reader takes the JSON over typed fields that disagree.
func TestClusterListingsJSONAlone(t *testing.T) {
	ms, cr := filledListings(t)
	hl, cl := Members(ms), ClusterRuns(cr)
	alone := &peerpb.HostList{Self: "not " + ms.Self, Members: hl.Members}
	for _, h := range hl.Hosts {
		alone.Hosts = append(alone.Hosts, &peerpb.Host{Member: h.Member})
	}
	if got := mustMembersOf(t, alone); !reflect.DeepEqual(got, ms) {
		t.Errorf("members as JSON alone:\n got %+v\nwant %+v", got, ms)
	}
	runsAlone := &peerpb.ClusterRunList{ClusterRuns: cl.ClusterRuns}
	for _, h := range cl.Hosts {
		// Runs are the API's RunInfo messages, not the record's JSON.
		runsAlone.Hosts = append(runsAlone.Hosts, &peerpb.HostRuns{HostRuns: h.HostRuns, Host: "not " + h.Host, Runs: h.Runs})
	}
	if got, err := ClusterRunsOf(runsAlone); err != nil || !reflect.DeepEqual(got, cr) {
		t.Errorf("cluster runs as JSON alone: %v\n got %+v\nwant %+v", err, got, cr)
	}
}

// TestClusterListingsEmpty: empty listings decode with empty lists, not
// nil ones (`--json` prints [] for them), and zero times stay zero,
// whether they came as JSON or typed fields.
func TestClusterListingsEmpty(t *testing.T) {
	for _, typed := range []bool{false, true} {
		hl := Members(hearth.Members{Hosts: []hearth.Member{{ID: "a"}}})
		cl := ClusterRuns(hearth.ClusterRuns{Hosts: []hearth.HostRuns{{Host: "a"}}})
		if typed {
			withoutJSON(hl, cl)
		}
		ms := mustMembersOf(t, hl)
		if ms.Hosts == nil || ms.Hosts[0].Agents == nil || !ms.Hosts[0].Started.IsZero() {
			t.Errorf("typed %v: got %+v, want empty lists and a zero start", typed, ms)
		}
		cr, err := ClusterRunsOf(cl)
		if err != nil || cr.Hosts == nil || cr.Hosts[0].Runs == nil || !cr.Hosts[0].Listed.IsZero() {
			t.Errorf("typed %v: got %+v %v, want empty lists and a zero listing time", typed, cr, err)
		}
	}
}

// TestRecordBoundFitsTheLargestMember: the largest record host/cluster
// publishes (EncodeHost refuses more), listed with the longest ID, a
// long reason it is unhealthy and its sessions, is within MaxRecordJSON,
// so that no member a host can publish is refused on the way to a
// listing.
func TestRecordBoundFitsTheLargestMember(t *testing.T) {
	if MaxRecordJSON < 2*cluster.MaxHostRecordBytes {
		t.Fatalf("MaxRecordJSON %d is less than twice cluster.MaxHostRecordBytes (%d)", MaxRecordJSON, cluster.MaxHostRecordBytes)
	}
	id := strings.Repeat("h", 63)
	rec := cluster.HostRecord{Member: hearth.Member{ID: id, Addr: strings.Repeat("a", 200) + ":1", Hostname: strings.Repeat("n", 200),
		Started: time.Now(), ConfigHash: strings.Repeat("c", 64), Version: strings.Repeat("v", 100), Draining: hearth.DrainMaintenance}}
	// Agents with names JSON escapes six times over, until one more is
	// refused.
	for i := 0; ; i++ {
		a := hearth.AgentLoad{Name: fmt.Sprintf("%03d", i) + strings.Repeat("\x01", 120), External: true,
			Live: 1 << 30, Dormant: 1 << 30, Load: 1 << 30, Capacity: 1 << 30, MaxSessions: 1 << 30}
		more := rec
		more.Agents = append(slices.Clone(rec.Agents), a)
		if _, err := cluster.EncodeHost(more); err != nil {
			break
		}
		rec = more
	}
	b, err := cluster.EncodeHost(rec)
	if err != nil || len(rec.Agents) == 0 {
		t.Fatalf("the largest record: %d agents, %v", len(rec.Agents), err)
	}
	m := rec.Member
	m.Sessions, m.Unhealthy = 1<<30, strings.Repeat("\x02", 1<<10)
	hl := Members(hearth.Members{Self: id, Clustered: true, EtcdErr: strings.Repeat("\x03", 1<<10), Hosts: []hearth.Member{m}})
	if _, err := MembersOf(hl); err != nil {
		t.Fatalf("a record of %d bytes in etcd (%d agents), %d bytes listed: %v", len(b), len(rec.Agents), len(hl.GetHosts()[0].GetMember()), err)
	}
}

// TestClusterListingsRefuseBadRecords sweeps every record a listing
// carries as JSON, each in every bad form: longer than MaxRecordJSON,
// cut at every byte, of the wrong shape. Each is refused with an error
// wrapping ErrBadRecord that names the host (or the listing's answering
// host) and the byte where the JSON stopped; none reads as a record with
// fields missing.
func TestClusterListingsRefuseBadRecords(t *testing.T) {
	ms, cr := filledListings(t)
	self, host := strconv.Quote(ms.Self), strconv.Quote(ms.Hosts[0].ID)
	records := []struct {
		name   string
		names  string
		field  func(*peerpb.HostList, *peerpb.ClusterRunList) *[]byte
		decode func(*peerpb.HostList, *peerpb.ClusterRunList) error
	}{
		{"member", "host " + host, func(hl *peerpb.HostList, _ *peerpb.ClusterRunList) *[]byte { return &hl.Hosts[0].Member }, decodeMembers},
		{"members", "the listing of host " + self, func(hl *peerpb.HostList, _ *peerpb.ClusterRunList) *[]byte { return &hl.Members }, decodeMembers},
		{"host runs", "the runs of host " + strconv.Quote(cr.Hosts[0].Host), func(_ *peerpb.HostList, cl *peerpb.ClusterRunList) *[]byte { return &cl.Hosts[0].HostRuns }, decodeRuns},
		{"cluster runs", "the run listing of host " + strconv.Quote(cr.Self), func(_ *peerpb.HostList, cl *peerpb.ClusterRunList) *[]byte { return &cl.ClusterRuns }, decodeRuns},
	}
	for _, r := range records {
		good := *r.field(Members(ms), ClusterRuns(cr))
		if len(good) == 0 {
			t.Fatalf("%s: no JSON written", r.name)
		}
		var bad [][]byte
		for cut := 1; cut < len(good); cut++ {
			bad = append(bad, good[:cut])
		}
		bad = append(bad,
			append(slices.Clone(good), '}'),
			[]byte(`[]`), []byte(`"x"`), []byte(`{"self":1,"host":2,"id":3}`), []byte("\x00"),
			// Not objects: JSON's null would read as the zero record.
			[]byte(`null`), []byte(` null `), []byte(`0`), []byte(`true`), []byte(" "),
			append(append([]byte(`{"x":"`), bytes.Repeat([]byte("y"), MaxRecordJSON)...), `"}`...))
		for _, b := range bad {
			hl, cl := Members(ms), ClusterRuns(cr)
			*r.field(hl, cl) = b
			err := r.decode(hl, cl)
			if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), r.names) {
				t.Fatalf("%s as %q: %v, want ErrBadRecord naming %s", r.name, trim(b), err, r.names)
			}
			if len(b) <= MaxRecordJSON && !strings.Contains(err.Error(), fmt.Sprintf(" of %d:", len(b))) {
				t.Fatalf("%s as %q: %v, want the byte where it stopped", r.name, trim(b), err)
			}
		}
	}
	// The earliest time JSON writes, read into a zone west of +14:00,
	// is one it cannot write again.
	if _, off := time.Now().Zone(); off < 14*3600 {
		early := []byte(`{"id":"h","host":"h","started":"0000-01-01T00:00:00+14:00","listed":"0000-01-01T00:00:00+14:00"}`)
		for _, r := range records {
			if r.name == "members" || r.name == "cluster runs" {
				continue // no times
			}
			hl, cl := Members(ms), ClusterRuns(cr)
			*r.field(hl, cl) = early
			if err := r.decode(hl, cl); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "cannot be written again") {
				t.Errorf("%s with a time before the year 0 here: %v, want ErrBadRecord", r.name, err)
			}
		}
	}
	// A host without an ID is named by its place in the listing.
	hl := Members(ms)
	hl.Hosts[0].Id, hl.Hosts[0].Member = "", []byte("{")
	if _, err := MembersOf(hl); err == nil || !strings.Contains(err.Error(), "host #1 of the listing") {
		t.Fatalf("a host without an ID: %v, want it named by its place", err)
	}
}

func decodeMembers(hl *peerpb.HostList, _ *peerpb.ClusterRunList) error {
	_, err := MembersOf(hl)
	return err
}

func decodeRuns(_ *peerpb.HostList, cl *peerpb.ClusterRunList) error {
	_, err := ClusterRunsOf(cl)
	return err
}

func trim(b []byte) []byte { return b[:min(len(b), 80)] }

// FuzzClusterListings decodes a cluster listing from arbitrary bytes, as
// the daemon's client does a daemon's reply: the first byte picks the
// message. Nothing panics; an error wraps ErrBadRecord and names whose
// record it is; what decodes has non-nil lists and reads the same again
// after it is encoded.
func FuzzClusterListings(f *testing.F) {
	seed := func(kind byte, m proto.Message) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{kind}, b...))
	}
	ms, cr := filledListings(f)
	seed(0, Members(ms))
	seed(1, ClusterRuns(cr))
	old, oldRuns := Members(ms), ClusterRuns(cr)
	withoutJSON(old, oldRuns)
	seed(0, old)
	seed(1, oldRuns)
	for _, b := range [][]byte{[]byte(`{"id":"a","sessions":"many"}`), []byte(`{"id":`), bytes.Repeat([]byte(" "), MaxRecordJSON+1),
		[]byte(`{"id":"b","zone":"eu-1","agents":null,"started":"2026-01-01T00:00:00+05:00"}`)} {
		hl := Members(ms)
		hl.Hosts[0].Member = b
		seed(0, hl)
		cl := ClusterRuns(cr)
		cl.Hosts[0].HostRuns = b
		seed(1, cl)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		if b[0]%2 == 0 {
			readsAgain(t, b[1:], &peerpb.HostList{}, MembersOf, Members, func(ms hearth.Members) bool {
				return !slices.ContainsFunc(ms.Hosts, func(m hearth.Member) bool { return m.Agents == nil })
			})
			return
		}
		readsAgain(t, b[1:], &peerpb.ClusterRunList{}, ClusterRunsOf, ClusterRuns, func(cr hearth.ClusterRuns) bool {
			return !slices.ContainsFunc(cr.Hosts, func(h hearth.HostRuns) bool { return h.Runs == nil })
		})
	})
}

// readsAgain decodes body into m and m with decode, as a client does a
// reply: an error must wrap ErrBadRecord and name the host; what decodes
// must have its lists (lists says whether it does) and read the same
// after encode.
func readsAgain[M proto.Message, V any](t *testing.T, body []byte, m M, decode func(M) (V, error), encode func(V) M, lists func(V) bool) {
	if proto.Unmarshal(body, m) != nil {
		return
	}
	v, err := decode(m)
	if err != nil {
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "host ") {
			t.Fatalf("%v: want ErrBadRecord naming the host", err)
		}
		return
	}
	if !lists(v) {
		t.Fatalf("a nil list in %+v", v)
	}
	if again, err := decode(encode(v)); err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("read differently again: %v\n got %+v\nwant %+v", err, again, v)
	}
}

// fill sets every field of v, and one element of every slice, to a value
// no other field has: strings and numbers from the counter n, booleans
// true, times n seconds after an epoch (as the wire decodes them, in
// local time).
func fill(t testing.TB, v reflect.Value, n *int) {
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

// A member or a host's runs whose record names no host (an object
// without the field, an empty one) is refused, naming its place in the
// listing, not listed as a host without a name.
func TestClusterListingsRefuseARecordWithoutHost(t *testing.T) {
	ms, _ := filledListings(t)
	for _, b := range []string{`{"addr":"10.0.0.9:7420"}`, `{}`, `{"id":""}`} {
		hl := Members(ms)
		hl.Hosts[0].Member = []byte(b)
		hl.Hosts[0].Id = ""
		_, err := MembersOf(hl)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "#1 of the listing") || !strings.Contains(err.Error(), "no host ID") {
			t.Fatalf("member %s: got %v, want ErrBadRecord naming #1 of the listing and the missing ID", b, err)
		}
	}
	// A host's runs, the same, and a typed message without the JSON.
	_, cr := filledListings(t)
	for _, b := range []string{`{}`, `{"host":""}`, ``} {
		cl := ClusterRuns(cr)
		cl.Hosts[0].HostRuns = []byte(b)
		cl.Hosts[0].Host = ""
		_, err := ClusterRunsOf(cl)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "#1 of the listing") || !strings.Contains(err.Error(), "no host ID") {
			t.Fatalf("host runs %q: got %v, want ErrBadRecord naming #1 of the listing and the missing host", b, err)
		}
	}
}
