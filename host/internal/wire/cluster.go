package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/internal/protoconv"
)

// A cluster's listings (peer.proto's HostList and ClusterRunList), both
// ways: the peer service (host/cluster/peer) encodes what the member
// answers, the daemon's client decodes it.
//
// Each record crosses whole, as its JSON (the vocabulary's: what `hearth
// hosts list --json` prints), so that a field added to hearth.Member,
// hearth.AgentLoad, hearth.HostRuns or the listings themselves is
// carried with no line here or in peer.proto; TestClusterListingsRoundTrip
// fails if one is not. The typed fields the messages had before are
// still written, for readers of an older release, and read only from a
// message without the JSON, from a writer of one (peer.proto says when
// they may go). They are frozen: a new field goes by the JSON alone.
//
// A run's own fields are not the cluster's: a HostRuns' runs stay the
// API's RunInfo messages (RunInfo, RunInfoOf), as ListRuns carries them.

// MaxRecordJSON bounds the JSON of one record of a cluster listing; a
// larger one is refused. It is twice host/cluster's MaxHostRecordBytes:
// a member's record in etcd is at most that, and a listing adds to it
// the member's ID, its sessions and why it is unhealthy
// (TestRecordBoundFitsTheLargestMember holds the two together).
const MaxRecordJSON = 32 << 10

// Members encodes a cluster's membership.
func Members(ms hearth.Members) *peerpb.HostList {
	head := ms
	head.Hosts = nil
	out := &peerpb.HostList{Self: ms.Self, Clustered: ms.Clustered, EtcdErr: ms.EtcdErr, Members: recordJSON(head)}
	for _, m := range ms.Hosts {
		out.Hosts = append(out.Hosts, member(m))
	}
	return out
}

// member encodes one member: its typed fields and its JSON, which holds
// them all and whatever fields the typed ones lack.
func member(m hearth.Member) *peerpb.Host {
	hm := &peerpb.Host{Id: m.ID, Addr: m.Addr, Hostname: m.Hostname, StartedUnixNano: protoconv.UnixNano(m.Started),
		ConfigHash: m.ConfigHash, Version: m.Version, Sessions: int32(m.Sessions), Self: m.Self, Draining: m.Draining, Unhealthy: m.Unhealthy,
		Member: recordJSON(m)}
	for _, a := range m.Agents {
		hm.Agents = append(hm.Agents, &peerpb.AgentLoad{Name: a.Name, External: a.External, Live: int32(a.Live),
			Dormant: int32(a.Dormant), Load: int32(a.Load), Capacity: int32(a.Capacity), MaxSessions: int32(a.MaxSessions)})
	}
	return hm
}

// MembersOf decodes a cluster's membership. Its lists are never nil, so
// that they print as [] in JSON. A record it cannot read fails the
// whole listing with an error wrapping [ErrBadRecord] that names the
// host and why, rather than showing the host with fields missing.
func MembersOf(r *peerpb.HostList) (hearth.Members, error) {
	out, err := fromJSON(r.GetMembers(), "the listing of host "+strconv.Quote(r.GetSelf()), func() hearth.Members {
		return hearth.Members{Self: r.GetSelf(), Clustered: r.GetClustered(), EtcdErr: r.GetEtcdErr()}
	}, nil)
	if err != nil {
		return hearth.Members{}, err
	}
	out.Hosts = make([]hearth.Member, 0, len(r.GetHosts()))
	for i, h := range r.GetHosts() {
		m, err := fromJSON(h.GetMember(), "host "+name(h.GetId(), i), func() hearth.Member { return memberOfTyped(h) }, func(m *hearth.Member) {
			m.Started = local(m.Started)
			if m.Agents == nil {
				m.Agents = []hearth.AgentLoad{}
			}
		})
		if err != nil {
			return hearth.Members{}, err
		}
		if err := named(m.ID, "host "+name(h.GetId(), i)); err != nil {
			return hearth.Members{}, err
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out, nil
}

// memberOfTyped reads h as a reader before the JSON did: a writer of
// that release sends nothing else.
func memberOfTyped(h *peerpb.Host) hearth.Member {
	m := hearth.Member{ID: h.GetId(), Self: h.GetSelf(), Addr: h.GetAddr(), Hostname: h.GetHostname(),
		Started: protoconv.Time(h.GetStartedUnixNano()), ConfigHash: h.GetConfigHash(), Version: h.GetVersion(), Draining: h.GetDraining(), Unhealthy: h.GetUnhealthy(),
		Sessions: int(h.GetSessions())}
	for _, a := range h.GetAgents() {
		m.Agents = append(m.Agents, hearth.AgentLoad{Name: a.GetName(), External: a.GetExternal(), Live: int(a.GetLive()),
			Dormant: int(a.GetDormant()), Load: int(a.GetLoad()), Capacity: int(a.GetCapacity()), MaxSessions: int(a.GetMaxSessions())})
	}
	return m
}

// ClusterRuns encodes the runs of a cluster's members. The message has
// no Clustered: a host that is in no cluster answers with an error
// instead.
func ClusterRuns(cr hearth.ClusterRuns) *peerpb.ClusterRunList {
	head := cr
	head.Hosts = nil
	out := &peerpb.ClusterRunList{Self: cr.Self, ClusterRuns: recordJSON(head)}
	for _, hr := range cr.Hosts {
		own := hr
		own.Runs = nil
		m := &peerpb.HostRuns{Host: hr.Host, State: string(hr.State), ListedUnixNano: protoconv.UnixNano(hr.Listed), Error: hr.Error,
			HostRuns: recordJSON(own)}
		for _, r := range hr.Runs {
			m.Runs = append(m.Runs, RunInfo(r))
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out
}

// ClusterRunsOf decodes the runs of a cluster's members, which only a
// host in a cluster lists. Its lists are never nil. Like [MembersOf], it
// fails on a record it cannot read.
func ClusterRunsOf(r *peerpb.ClusterRunList) (hearth.ClusterRuns, error) {
	out, err := fromJSON(r.GetClusterRuns(), "the run listing of host "+strconv.Quote(r.GetSelf()), func() hearth.ClusterRuns {
		return hearth.ClusterRuns{Self: r.GetSelf()}
	}, nil)
	if err != nil {
		return hearth.ClusterRuns{}, err
	}
	out.Clustered = true
	out.Hosts = make([]hearth.HostRuns, 0, len(r.GetHosts()))
	for i, h := range r.GetHosts() {
		hr, err := fromJSON(h.GetHostRuns(), "the runs of host "+name(h.GetHost(), i), func() hearth.HostRuns {
			return hearth.HostRuns{Host: h.GetHost(), State: hearth.OwnerState(h.GetState()), Error: h.GetError(),
				Listed: protoconv.Time(h.GetListedUnixNano())}
		}, func(hr *hearth.HostRuns) { hr.Listed = local(hr.Listed) })
		if err == nil {
			err = named(hr.Host, "the runs of host "+name(h.GetHost(), i))
		}
		if err != nil {
			return hearth.ClusterRuns{}, err
		}
		hr.Runs = make([]hearth.RunInfo, 0, len(h.GetRuns()))
		for _, ri := range h.GetRuns() {
			hr.Runs = append(hr.Runs, RunInfoOf(ri))
		}
		out.Hosts = append(out.Hosts, hr)
	}
	return out, nil
}

// recordJSON is v's JSON, or nil when it has none (a time past the year
// 9999): the reader then reads the typed fields.
func recordJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// fromJSON decodes b, the JSON of what's record, or returns typed() when
// there is none: a writer before the JSON. Fields b does not name are
// zero, and those it names that T lacks (a newer writer's) are ignored.
// norm, if set, makes either into what this package decodes (times in
// the local zone, lists not nil). A record read from JSON must encode
// again (a time near the year 0 may not, once in the local zone): one
// that cannot would reach the next reader as its typed fields alone.
func fromJSON[T any](b []byte, what string, typed func() T, norm func(*T)) (T, error) {
	var v T
	if norm == nil {
		norm = func(*T) {}
	}
	if len(b) == 0 {
		v = typed()
		norm(&v)
		return v, nil
	}
	if len(b) > MaxRecordJSON {
		return v, fmt.Errorf("%w: %s: %d bytes of JSON, more than %d; the daemon runs a hearth this client cannot read, run the same release on both", ErrBadRecord, what, len(b), MaxRecordJSON)
	}
	// A record is an object: JSON's null (or a bare value) would read as
	// the zero record, a host with no ID, without an error.
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return v, fmt.Errorf("%w: %s: its JSON does not read at byte %d of %d: not an object; the daemon runs a hearth this client cannot read, run the same release on both", ErrBadRecord, what, len(b)-len(t), len(b))
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: %s: its JSON does not read at byte %d of %d: %v; the daemon runs a hearth this client cannot read, run the same release on both", ErrBadRecord, what, offset(err), len(b), err)
	}
	norm(&v)
	if _, err := json.Marshal(&v); err != nil {
		return v, fmt.Errorf("%w: %s: its JSON reads as a record that cannot be written again: %v", ErrBadRecord, what, err)
	}
	return v, nil
}

// named fails a record of a listing's host that names no host, however
// it came to (an object without the field, an empty one, a typed
// message without it): it would be listed as a host without a name.
func named(host, what string) error {
	if host == "" {
		return fmt.Errorf("%w: %s: its record names no host ID; the daemon runs a hearth this client cannot read, run the same release on both", ErrBadRecord, what)
	}
	return nil
}

// offset is where in its input err, a JSON decoding error, stopped.
func offset(err error) int64 {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return syntax.Offset
	case errors.As(err, &typ):
		return typ.Offset
	}
	return 0
}

// name is how an error names a listing's host: by its ID, or, when the
// message has none, by its place in the listing.
func name(id string, i int) string {
	if id == "" {
		return fmt.Sprintf("#%d of the listing", i+1)
	}
	return strconv.Quote(id)
}

// local is t in the local time zone, as protoconv.Time reads a typed
// field: whichever way a time came, it decodes the same. The zero time
// stays zero.
func local(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Local()
}
