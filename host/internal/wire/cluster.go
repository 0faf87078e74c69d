package wire

import (
	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/internal/protoconv"
)

// A cluster's listings (peer.proto's HostList and ClusterRunList), both
// ways: the peer service (host/cluster/peer) encodes what the member
// answers, the daemon's client decodes it. One pair per listing, so that
// a field added to hearth.Member or hearth.HostRuns is carried in one
// place (TestClusterListingsRoundTrip fails until it is).

// Members encodes a cluster's membership.
func Members(ms hearth.Members) *peerpb.HostList {
	out := &peerpb.HostList{Self: ms.Self, Clustered: ms.Clustered, EtcdErr: ms.EtcdErr}
	for _, m := range ms.Hosts {
		hm := &peerpb.Host{Id: m.ID, Addr: m.Addr, Hostname: m.Hostname, StartedUnixNano: protoconv.UnixNano(m.Started),
			ConfigHash: m.ConfigHash, Version: m.Version, Sessions: int32(m.Sessions), Self: m.Self, Draining: m.Draining, Unhealthy: m.Unhealthy}
		for _, a := range m.Agents {
			hm.Agents = append(hm.Agents, &peerpb.AgentLoad{Name: a.Name, External: a.External, Live: int32(a.Live),
				Dormant: int32(a.Dormant), Load: int32(a.Load), Capacity: int32(a.Capacity), MaxSessions: int32(a.MaxSessions)})
		}
		out.Hosts = append(out.Hosts, hm)
	}
	return out
}

// MembersOf decodes a cluster's membership. Its lists are never nil, so
// that they print as [] in JSON.
func MembersOf(r *peerpb.HostList) hearth.Members {
	out := hearth.Members{Self: r.GetSelf(), Clustered: r.GetClustered(), EtcdErr: r.GetEtcdErr(), Hosts: []hearth.Member{}}
	for _, h := range r.GetHosts() {
		m := hearth.Member{ID: h.GetId(), Self: h.GetSelf(), Addr: h.GetAddr(), Hostname: h.GetHostname(),
			Started: protoconv.Time(h.GetStartedUnixNano()), ConfigHash: h.GetConfigHash(), Version: h.GetVersion(), Draining: h.GetDraining(), Unhealthy: h.GetUnhealthy(),
			Sessions: int(h.GetSessions()), Agents: []hearth.AgentLoad{}}
		for _, a := range h.GetAgents() {
			m.Agents = append(m.Agents, hearth.AgentLoad{Name: a.GetName(), External: a.GetExternal(), Live: int(a.GetLive()),
				Dormant: int(a.GetDormant()), Load: int(a.GetLoad()), Capacity: int(a.GetCapacity()), MaxSessions: int(a.GetMaxSessions())})
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out
}

// ClusterRuns encodes the runs of a cluster's members. The message has
// no Clustered: a host that is in no cluster answers with an error
// instead.
func ClusterRuns(cr hearth.ClusterRuns) *peerpb.ClusterRunList {
	out := &peerpb.ClusterRunList{Self: cr.Self}
	for _, hr := range cr.Hosts {
		m := &peerpb.HostRuns{Host: hr.Host, State: string(hr.State), ListedUnixNano: protoconv.UnixNano(hr.Listed), Error: hr.Error}
		for _, r := range hr.Runs {
			m.Runs = append(m.Runs, RunInfo(r))
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out
}

// ClusterRunsOf decodes the runs of a cluster's members, which only a
// host in a cluster lists. Its lists are never nil.
func ClusterRunsOf(r *peerpb.ClusterRunList) hearth.ClusterRuns {
	out := hearth.ClusterRuns{Self: r.GetSelf(), Clustered: true, Hosts: []hearth.HostRuns{}}
	for _, h := range r.GetHosts() {
		hr := hearth.HostRuns{Host: h.GetHost(), State: hearth.OwnerState(h.GetState()), Error: h.GetError(),
			Listed: protoconv.Time(h.GetListedUnixNano()), Runs: []hearth.RunInfo{}}
		for _, ri := range h.GetRuns() {
			hr.Runs = append(hr.Runs, RunInfoOf(ri))
		}
		out.Hosts = append(out.Hosts, hr)
	}
	return out
}
