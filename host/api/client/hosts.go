package client

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/host/cluster"
)

// Hosts is a cluster's membership as the daemon sees it.
type Hosts struct {
	// Self is the daemon's host ID.
	Self string `json:"self"`
	// Clustered is false for a daemon without a cluster block.
	Clustered bool     `json:"clustered"`
	Hosts     []Member `json:"hosts"`
}

// Member is one host of a cluster.
type Member struct {
	ID         string      `json:"id"`
	Self       bool        `json:"self,omitempty"`
	Addr       string      `json:"addr"`
	Hostname   string      `json:"hostname,omitempty"`
	Started    time.Time   `json:"started"`
	ConfigHash string      `json:"config_hash"`
	Version    string      `json:"version,omitempty"`
	Sessions   int         `json:"sessions"`
	Agents     []AgentLoad `json:"agents"`
}

// AgentLoad is one agent's sessions and load on a host, as the host
// publishes it.
type AgentLoad = cluster.AgentLoad

// Hosts lists the cluster's members.
func (c *Client) Hosts(ctx context.Context) (Hosts, error) {
	r, err := peerpb.NewPeerClient(c.conn).ListHosts(ctx, &peerpb.ListHostsRequest{})
	if err != nil {
		return Hosts{}, wire.ErrorOf(ctx, err)
	}
	out := Hosts{Self: r.GetSelf(), Clustered: r.GetClustered(), Hosts: []Member{}}
	for _, h := range r.GetHosts() {
		m := Member{ID: h.GetId(), Self: h.GetSelf(), Addr: h.GetAddr(), Hostname: h.GetHostname(),
			Started: time.Unix(0, h.GetStartedUnixNano()), ConfigHash: h.GetConfigHash(), Version: h.GetVersion(),
			Sessions: int(h.GetSessions()), Agents: []AgentLoad{}}
		for _, a := range h.GetAgents() {
			m.Agents = append(m.Agents, AgentLoad{Name: a.GetName(), External: a.GetExternal(), Live: int(a.GetLive()),
				Dormant: int(a.GetDormant()), Load: int(a.GetLoad()), Capacity: int(a.GetCapacity()), MaxSessions: int(a.GetMaxSessions())})
		}
		out.Hosts = append(out.Hosts, m)
	}
	return out, nil
}

// HostRuns is one host's part of a cluster's run listing.
type HostRuns struct {
	Host string `json:"host"`
	// State is up (current), unreachable (a member that did not answer
	// in time) or gone (no member: its runs, as last listed, are in its
	// store, to resume when it is back).
	State  string           `json:"state"`
	Runs   []hearth.RunInfo `json:"runs"`
	Listed time.Time        `json:"listed,omitzero"`
	Error  string           `json:"error,omitempty"`
}

// ClusterRuns lists the runs of every host of the daemon's cluster, with
// their owners; ok is false for a daemon without a cluster block.
func (c *Client) ClusterRuns(ctx context.Context) (self string, hosts []HostRuns, ok bool, err error) {
	r, err := peerpb.NewPeerClient(c.conn).ListClusterRuns(ctx, &apipb.ListRunsRequest{})
	if err != nil {
		if st, _ := status.FromError(err); st.Code() == codes.FailedPrecondition || st.Code() == codes.Unimplemented {
			return "", nil, false, nil
		}
		return "", nil, false, wire.ErrorOf(ctx, err)
	}
	for _, h := range r.GetHosts() {
		hr := HostRuns{Host: h.GetHost(), State: h.GetState(), Error: h.GetError(), Runs: []hearth.RunInfo{}}
		if n := h.GetListedUnixNano(); n != 0 {
			hr.Listed = time.Unix(0, n)
		}
		for _, ri := range h.GetRuns() {
			hr.Runs = append(hr.Runs, wire.RunInfoOf(ri))
		}
		hosts = append(hosts, hr)
	}
	return r.GetSelf(), hosts, true, nil
}
