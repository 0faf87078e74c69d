package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSummaryRoundTrip(t *testing.T) {
	s := Summary{
		Session: "coder-1a2b3c4d", Agent: "coder",
		Dirs: []string{"pkg/a", "pkg"}, Files: []string{"pkg/a/x.go", "pkg/a/y.go"}, Techs: []string{"go"},
		LastActivity: t0, Load: 1, Capacity: 2, Dormant: true,
	}
	b, err := EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSummary(s.Session, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("got %+v, want %+v", got, s)
	}
	if strings.Contains(string(b), s.Session) {
		t.Errorf("the value %s repeats the session ID, which is the key's", b)
	}
}

func TestSummaryBounds(t *testing.T) {
	var files []string
	for i := range 100 {
		files = append(files, fmt.Sprintf("d/f%03d.go", i)) // most recent first
	}
	files = slices.Insert(files, 1, "", strings.Repeat("x", MaxPathBytes+1), "d/f000.go", "bad\xff")
	s := Summary{Session: "s", Agent: "a", Files: files, LastActivity: t0, Load: -3}
	b, err := EncodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSummary("s", b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) != MaxSummaryFiles || got.Files[0] != "d/f000.go" || got.Files[1] != "d/f001.go" || got.Files[MaxSummaryFiles-1] != fmt.Sprintf("d/f%03d.go", MaxSummaryFiles-1) {
		t.Errorf("got files %q, want the %d most recent, without empty, overlong, invalid or repeated ones", got.Files, MaxSummaryFiles)
	}
	if got.Load != 0 {
		t.Errorf("got load %d, want a negative load published as 0", got.Load)
	}

	// Paths JSON escapes six-fold: the summary loses its oldest entries
	// until it fits.
	long := strings.Repeat("<", MaxPathBytes-4)
	var fat []string
	for i := range MaxSummaryFiles {
		fat = append(fat, fmt.Sprintf("%s%03d", long, i))
	}
	b, err = EncodeSummary(Summary{Session: "s", Agent: "a", Files: fat, Dirs: fat})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxSummaryBytes {
		t.Fatalf("encoded %d bytes, more than %d", len(b), MaxSummaryBytes)
	}
	got, err = DecodeSummary("s", b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Files) == 0 || got.Files[0] != fat[0] || len(got.Files) == MaxSummaryFiles {
		t.Errorf("kept %d files starting %q, want the most recent ones, fewer than %d", len(got.Files), got.Files[:1], MaxSummaryFiles)
	}
}

func TestEncodeRefuses(t *testing.T) {
	if _, err := EncodeSummary(Summary{Session: "", Agent: "a"}); err == nil {
		t.Error("a summary without a session ID encoded")
	}
	if _, err := EncodeSummary(Summary{Session: "s", Agent: "a/b"}); err == nil {
		t.Error("an agent with '/' encoded")
	}
	if _, err := EncodeHost(HostRecord{Member: hearth.Member{ID: "a/b", Addr: "x:1"}}); err == nil {
		t.Error("a host ID with '/' encoded")
	}
}

func TestDecodeSummaryRejects(t *testing.T) {
	rec := func(edit func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "agent": "a", "last_activity": t0, "load": 0, "capacity": 1}
		edit(m)
		b, _ := json.Marshal(m)
		return b
	}
	many := make([]string, MaxSummaryFiles+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, tc := range []struct {
		name, session string
		value         []byte
		want          string
	}{
		{"not json", "s", []byte("{"), "unexpected end"},
		{"trailing data", "s", append(rec(func(map[string]any) {}), " {}"...), "invalid character"},
		{"other version", "s", rec(func(m map[string]any) { m["v"] = 2 }), "version 2"},
		{"no version", "s", rec(func(m map[string]any) { delete(m, "v") }), "version 0"},
		{"too large", "s", make([]byte, MaxSummaryBytes+1), "more than"},
		{"no agent", "s", rec(func(m map[string]any) { delete(m, "agent") }), "agent"},
		{"too many files", "s", rec(func(m map[string]any) { m["files"] = many }), "33 files"},
		{"empty dir", "s", rec(func(m map[string]any) { m["dirs"] = []string{""} }), "dirs entry of 0 bytes"},
		{"negative load", "s", rec(func(m map[string]any) { m["load"] = -1 }), "load -1"},
		{"empty session", "", rec(func(map[string]any) {}), "session ID"},
		{"wrong type", "s", rec(func(m map[string]any) { m["capacity"] = "four" }), "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeSummary(tc.session, tc.value)
			if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrBadRecord saying %q", err, tc.want)
			}
		})
	}
	// Fields a later version adds within version 1 are ignored.
	if _, err := DecodeSummary("s", rec(func(m map[string]any) { m["new_field"] = 1 })); err != nil {
		t.Errorf("an unknown field: %v", err)
	}
}

func TestHostRecordRoundTrip(t *testing.T) {
	h := HostRecord{Member: hearth.Member{
		ID: "box-1", Addr: "10.0.0.7:7420", Hostname: "box", Started: t0, ConfigHash: "abc", Version: "dev",
		Agents: []hearth.AgentLoad{{Name: "coder", Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4}, {Name: "claude-code", External: true}},
	}, Identity: Identity("box", "/d"), Incarnation: "i1"}
	b, err := EncodeHost(h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHost("box-1", b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("got %+v, want %+v", got, h)
	}
	if a, ok := got.Agent("coder"); !ok || a.Live != 2 {
		t.Errorf("Agent(coder) = %+v, %v", a, ok)
	}
	for _, bad := range [][]byte{[]byte(`{"v":1}`), []byte(`{"v":1,"addr":"a:1","agents":[{"name":""}]}`), []byte(`[]`)} {
		if _, err := DecodeHost("box-1", bad); !errors.Is(err, ErrBadRecord) {
			t.Errorf("DecodeHost(%s) = %v, want ErrBadRecord", bad, err)
		}
	}
	if _, err := DecodeHost("a/b", b); !errors.Is(err, ErrBadRecord) {
		t.Errorf("a bad host ID decoded: %v", err)
	}
}

// TestHostRecordFormat pins the bytes of a host's record: version 1, the
// record's own fields, then hearth.Member's as the vocabulary writes
// them, without the listing's (id, self, unhealthy, sessions). Records
// written before the member was embedded (the second column) named the
// same fields one by one in another order, omitting an empty config
// hash and agents; they still read the same.
func TestHostRecordFormat(t *testing.T) {
	for _, tc := range []struct {
		h         HostRecord
		want, old string
	}{
		{HostRecord{Member: hearth.Member{ID: "box-1", Addr: "10.0.0.7:7420", Hostname: "box", Started: t0, ConfigHash: "abc", Version: "dev", Draining: hearth.DrainMaintenance,
			Agents: []hearth.AgentLoad{{Name: "coder", Live: 2, Dormant: 1, Load: 1, Capacity: 2, MaxSessions: 4}, {Name: "claude-code", External: true}},
			// Not part of the record: the reader counts and knows these.
			Sessions: 3, Self: true, Unhealthy: "no answer"}, Identity: "id", Incarnation: "i1"},
			`{"v":1,"identity":"id","incarnation":"i1","addr":"10.0.0.7:7420","hostname":"box","started":"2026-03-01T12:00:00Z","config_hash":"abc","version":"dev","draining":"maintenance",` +
				`"agents":[{"name":"coder","live":2,"dormant":1,"load":1,"capacity":2,"max_sessions":4},{"name":"claude-code","external":true,"live":0,"dormant":0,"load":0,"capacity":0,"max_sessions":0}]}`,
			`{"v":1,"addr":"10.0.0.7:7420","hostname":"box","identity":"id","incarnation":"i1","started":"2026-03-01T12:00:00Z","config_hash":"abc","draining":"maintenance","version":"dev",` +
				`"agents":[{"name":"coder","live":2,"dormant":1,"load":1,"capacity":2,"max_sessions":4},{"name":"claude-code","external":true,"live":0,"dormant":0,"load":0,"capacity":0,"max_sessions":0}]}`},
		{HostRecord{Member: hearth.Member{ID: "h", Addr: "a:1"}, Identity: "x", Incarnation: "y"},
			`{"v":1,"identity":"x","incarnation":"y","addr":"a:1","started":"0001-01-01T00:00:00Z","config_hash":"","agents":null}`,
			`{"v":1,"addr":"a:1","identity":"x","incarnation":"y","started":"0001-01-01T00:00:00Z"}`},
	} {
		b, err := EncodeHost(tc.h)
		if err != nil || string(b) != tc.want {
			t.Errorf("EncodeHost(%+v) =\n%s %v, want\n%s", tc.h, b, err, tc.want)
		}
		want := tc.h
		want.Sessions, want.Self, want.Unhealthy = 0, false, ""
		for _, rec := range []string{tc.want, tc.old} {
			if got, err := DecodeHost(tc.h.ID, []byte(rec)); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("DecodeHost(%s) =\n%+v %v, want\n%+v", rec, got, err, want)
			}
		}
	}
}

// lastReleaseHostRecord and lastReleaseDecodeHost are the host record and
// its decoder as hearth read them before the record embedded
// hearth.Member (checks left out: they are DecodeHost's still). Hosts of
// that release share a cluster with this one's during a rolling upgrade.
type lastReleaseHostRecord struct {
	V           int                `json:"v"`
	Addr        string             `json:"addr"`
	Hostname    string             `json:"hostname,omitempty"`
	Identity    string             `json:"identity"`
	Incarnation string             `json:"incarnation"`
	Started     time.Time          `json:"started"`
	ConfigHash  string             `json:"config_hash,omitempty"`
	Draining    string             `json:"draining,omitempty"`
	Version     string             `json:"version,omitempty"`
	Agents      []hearth.AgentLoad `json:"agents,omitempty"`
}

func lastReleaseDecodeHost(id string, b []byte) (HostRecord, error) {
	var rec lastReleaseHostRecord
	if err := decodeRecord(b, MaxHostRecordBytes, &rec, &rec.V); err != nil {
		return HostRecord{}, err
	}
	return HostRecord{Member: hearth.Member{ID: id, Addr: rec.Addr, Hostname: rec.Hostname, Started: rec.Started,
		ConfigHash: rec.ConfigHash, Version: rec.Version, Agents: rec.Agents, Draining: rec.Draining}, Identity: rec.Identity, Incarnation: rec.Incarnation}, nil
}

// listingOnly are the fields of hearth.Member a host record does not hold
// (see hostRecord): the ID is the key's, the rest the lister's.
var listingOnly = []string{"ID", "Self", "Unhealthy", "Sessions"}

// filledHost is a host record whose member has every field set by
// reflection, each to a value of its own, so that a field added to
// hearth.Member is filled with no line here.
func filledHost(t *testing.T) HostRecord {
	t.Helper()
	h := HostRecord{Identity: Identity("box", "/d"), Incarnation: "i1"}
	n := 0
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		n++
		switch {
		case v.Type() == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(t0.Add(time.Duration(n) * time.Second)))
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			fill(v.Index(0))
			fill(v.Index(1))
		case v.Kind() == reflect.String:
			v.SetString(fmt.Sprintf("s%d", n))
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.CanInt():
			v.SetInt(int64(n))
		default:
			t.Fatalf("filledHost cannot fill a %s: teach it", v.Type())
		}
	}
	fill(reflect.ValueOf(&h.Member).Elem())
	h.ID = "box-1"
	return h
}

// TestHostRecordCarriesTheMember: every field of hearth.Member but the
// listing's survives etcd's JSON, with no line in EncodeHost or DecodeHost
// for it; the listing's fields are neither written nor read, whatever a
// record holds under their names; and a record this hearth writes reads
// the same in the last release's decoder, for the fields that release
// knew.
func TestHostRecordCarriesTheMember(t *testing.T) {
	h := filledHost(t)
	b, err := EncodeHost(h)
	if err != nil {
		t.Fatal(err)
	}
	want := h
	for _, f := range listingOnly {
		v := reflect.ValueOf(&want.Member).Elem().FieldByName(f)
		if !v.IsValid() {
			t.Fatalf("hearth.Member has no field %s: change listingOnly and hostRecord", f)
		}
		if f != "ID" {
			v.SetZero()
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		field, _ := reflect.TypeFor[hearth.Member]().FieldByName(f)
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if _, ok := m[name]; ok {
			t.Errorf("the record %s holds the listing's %s", b, name)
		}
	}
	got, err := DecodeHost(h.ID, b)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeHost =\n%+v %v, want\n%+v", got, err, want)
	}

	// What another writer put under the listing's names stays out of the
	// member, and the key, not the value, names the host.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["id"], m["self"], m["unhealthy"], m["sessions"] = "other", true, "forged", 99
	forged, _ := json.Marshal(m)
	if got, err := DecodeHost(h.ID, forged); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeHost(%s) =\n%+v %v, want the listing's fields ignored:\n%+v", forged, got, err, want)
	}

	old, err := lastReleaseDecodeHost(h.ID, b)
	if err != nil {
		t.Fatal(err)
	}
	known := want
	known.Member = hearth.Member{ID: want.ID, Addr: want.Addr, Hostname: want.Hostname, Started: want.Started,
		ConfigHash: want.ConfigHash, Version: want.Version, Agents: want.Agents, Draining: want.Draining}
	if !reflect.DeepEqual(old, known) {
		t.Errorf("the last release reads\n%+v, want\n%+v", old, known)
	}
}

// TestHostRecordBound: the largest record a host publishes in practice
// fits MaxHostRecordBytes: the most agents a reader accepts, each with
// the longest name it accepts and counts up to 9,999, an address and a
// host name of DNS's longest, a long version, draining. A record past
// the bound is refused by EncodeHost (and by every reader): the bound is
// the readers' of version 1, so it cannot grow without them.
func TestHostRecordBound(t *testing.T) {
	h := filledHost(t)
	h.ID, h.Addr, h.Hostname, h.Version = strings.Repeat("i", maxHostIDLen), strings.Repeat("a", 253)+":65535", strings.Repeat("h", 253), strings.Repeat("v", 128)
	h.ConfigHash, h.Draining = strings.Repeat("c", 64), hearth.DrainShutdown
	h.Agents = make([]hearth.AgentLoad, MaxAgents)
	for i := range h.Agents {
		h.Agents[i] = hearth.AgentLoad{Name: strings.Repeat("n", maxNameBytes), External: true, Live: 9999, Dormant: 9999, Load: 9999, Capacity: 9999, MaxSessions: 9999}
	}
	b, err := EncodeHost(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeHost(h.ID, b); err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest record: %d of %d bytes", len(b), MaxHostRecordBytes)
}

func TestIdentity(t *testing.T) {
	if Identity("a", "/d") == Identity("a", "/e") || Identity("a", "/d") == Identity("b", "/d") || Identity("a", "/d") != Identity("a", "/d") {
		t.Error("Identity does not tell hosts apart, or is not stable")
	}
}

func TestCandidate(t *testing.T) {
	s := Summary{Session: "s", Agent: "a", Dirs: []string{"x"}, Files: []string{"p/q/r.go", "top.go"}, Capacity: 2, Load: 1, LastActivity: t0}
	c := s.Candidate("h")
	if c.ID != "h/s" || c.Owner != "h" || c.Capacity != 2 || c.Load != 1 || !c.LastActivity.Equal(t0) {
		t.Errorf("got %+v", c)
	}
	want := []string{"x", "p/q", "p"}
	if !reflect.DeepEqual(c.Dirs, want) {
		t.Errorf("got dirs %q, want %q: the summary's and its files' parents", c.Dirs, want)
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		key           string
		kind          KeyKind
		host, session string
	}{
		{HostKey("box-1"), KeyHost, "box-1", ""},
		{SessionKey("box-1", "coder-1"), KeySession, "box-1", "coder-1"},
		{SessionKey("box-1", "odd/session"), KeySession, "box-1", "odd/session"},
		{DrainKey("box-1"), KeyDrain, "box-1", ""},
	} {
		kind, host, session, err := ParseKey(tc.key)
		if err != nil || kind != tc.kind || host != tc.host || session != tc.session {
			t.Errorf("ParseKey(%q) = %v %q %q %v, want %v %q %q", tc.key, kind, host, session, err, tc.kind, tc.host, tc.session)
		}
	}
	for _, key := range []string{"/hearth/v1/other/x", HostsPrefix, HostsPrefix + "a/b", SessionsPrefix + "box", SessionsPrefix + "box/", SessionsPrefix + "/s", DrainPrefix, DrainPrefix + "a/b", "/elsewhere"} {
		if _, _, _, err := ParseKey(key); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadRecord quoting the key", key, err)
		}
	}
	if h, s, ok := SplitRemoteID(RemoteID("box-1", "a/b")); !ok || h != "box-1" || s != "a/b" {
		t.Errorf("SplitRemoteID(RemoteID) = %q %q %v", h, s, ok)
	}
	if _, _, ok := SplitRemoteID("coder-1a2b3c4d"); ok {
		t.Error("a local session ID split as a remote one")
	}
}

// The fuzz targets read what other hosts (or anyone with access to etcd)
// wrote: they must never panic, and what they accept must encode again
// within bounds.
func FuzzDecodeSummary(f *testing.F) {
	b, _ := EncodeSummary(Summary{Session: "s", Agent: "a", Files: []string{"a/b.go"}, Dirs: []string{"a"}, Techs: []string{"go"}, LastActivity: t0, Capacity: 1})
	f.Add("s", b)
	f.Add("s", []byte(`{"v":1,"agent":"a","files":["x"],"load":1e400}`))
	f.Fuzz(func(t *testing.T, session string, value []byte) {
		s, err := DecodeSummary(session, value)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		out, err := EncodeSummary(s)
		if err != nil {
			t.Fatalf("accepted %q but cannot publish it again: %v", value, err)
		}
		if len(out) > MaxSummaryBytes {
			t.Fatalf("re-encoded to %d bytes", len(out))
		}
		_ = s.Candidate("h")
	})
}

func FuzzDecodeHost(f *testing.F) {
	b, _ := EncodeHost(HostRecord{Member: hearth.Member{ID: "h", Addr: "a:1", Agents: []hearth.AgentLoad{{Name: "coder", MaxSessions: 4}}, Started: t0}})
	f.Add("h", b)
	f.Add("h", []byte(`{"v":1,"addr":"a:1","identity":"x","incarnation":"y","started":"0001-01-01T00:00:00Z"}`))
	f.Add("h", []byte(`{"v":1,"addr":"a:1","id":"g","self":true,"unhealthy":"u","sessions":3,"agents":null,"config_hash":""}`))
	f.Add("h", []byte(`{"v":1,"addr":"a:1","ID":"g","SELF":true,"Unhealthy":"u","Sessions":3}`)) // encoding/json matches names in any case
	f.Fuzz(func(t *testing.T, id string, value []byte) {
		h, err := DecodeHost(id, value)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if h.ID != id || h.Self || h.Unhealthy != "" || h.Sessions != 0 {
			t.Fatalf("%q read as %+v: the ID is the key's, and the listing's fields are no record's", value, h.Member)
		}
		if _, err := EncodeHost(h); err != nil && !strings.Contains(err.Error(), "bytes, more than") {
			t.Fatalf("accepted %q but cannot publish it again: %v", value, err)
		}
	})
}

func FuzzParseKey(f *testing.F) {
	f.Add(SessionKey("h", "s"))
	f.Add(HostKey("h"))
	f.Fuzz(func(t *testing.T, key string) {
		kind, host, session, err := ParseKey(key)
		switch {
		case err != nil:
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
		case kind == KeyHost && HostKey(host) != key, kind == KeySession && SessionKey(host, session) != key:
			t.Fatalf("ParseKey(%q) = %v %q %q, which is another key", key, kind, host, session)
		}
	})
}

// BenchmarkHostRecord: a host's record of 4 agents, encoded and decoded
// as etcd holds it, against the record that named the member's fields
// one by one (the last release's), in the same run. A host writes its
// record when it changes (at most once a publish interval) and every
// other host reads it then.
func BenchmarkHostRecord(b *testing.B) {
	h := HostRecord{Member: hearth.Member{ID: "box-1", Addr: "10.0.0.7:7420", Hostname: "box", Started: t0, ConfigHash: strings.Repeat("c", 64), Version: "v1.4.0"},
		Identity: Identity("box", "/d"), Incarnation: "4c2a9e01d7b3f6a8"}
	for i := range 4 {
		h.Agents = append(h.Agents, hearth.AgentLoad{Name: fmt.Sprintf("agent-%d", i), Live: 3, Dormant: 1, Load: 2, Capacity: 3, MaxSessions: 8})
	}
	b.Run("embedded", func(b *testing.B) {
		for b.Loop() {
			v, err := EncodeHost(h)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeHost(h.ID, v); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(v)), "B/record")
		}
	})
	b.Run("named", func(b *testing.B) {
		for b.Loop() {
			v, err := json.Marshal(&lastReleaseHostRecord{V: recordVersion, Addr: h.Addr, Hostname: h.Hostname, Identity: h.Identity,
				Incarnation: h.Incarnation, Started: h.Started.Round(0).UTC(), ConfigHash: h.ConfigHash, Version: h.Version, Agents: h.Agents, Draining: h.Draining})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := lastReleaseDecodeHost(h.ID, v); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(v)), "B/record")
		}
	})
}
