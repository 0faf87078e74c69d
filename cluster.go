package hearth

import (
	"context"
	"time"
)

// A cluster is several hosts that share membership and a view of one
// another's sessions (host/cluster; docs/cluster.md). These are the
// words for it that orchestrators, the CLI and the daemon's client
// speak: a member as listings show it, and runs listed across the
// members with their owners. host/cluster publishes a Member in etcd as
// its record; host/cluster/member lists them in process, and the
// daemon's client over the API, both as a ClusterReader.

// ClusterReader lists a cluster as one of its hosts sees it. A host
// without a cluster block answers with Clustered false.
type ClusterReader interface {
	// Members lists the cluster's members, the host that answers among
	// them.
	Members(ctx context.Context) (Members, error)
	// ClusterRuns lists the runs of every member with their owners: a
	// member that did not answer in time as unreachable, one that left
	// as gone, each with the runs it listed last.
	ClusterRuns(ctx context.Context) (ClusterRuns, error)
}

// Members is a cluster's membership as one host sees it.
type Members struct {
	// Self is the ID of the host that answered.
	Self string `json:"self"`
	// Clustered is false for a host without a cluster block.
	Clustered bool `json:"clustered"`
	// EtcdErr says why the answering host cannot reach etcd now, empty
	// while it can. While it is set, Hosts is the last view the host
	// had, which may be stale: a listing must say so rather than show a
	// smaller cluster as if it were whole.
	EtcdErr string   `json:"etcd_err,omitempty"`
	Hosts   []Member `json:"hosts"`
}

// Member is one host of a cluster: where its API is, what it runs, how
// loaded it is.
type Member struct {
	// ID names the host in its cluster (the cluster block's host_id).
	ID string `json:"id"`
	// Self marks the host that answered the listing.
	Self bool `json:"self,omitempty"`
	// Addr is the host's API address (host:port) as the other hosts dial
	// it.
	Addr     string    `json:"addr"`
	Hostname string    `json:"hostname,omitempty"`
	Started  time.Time `json:"started"`
	// ConfigHash is a digest of what the host decides with (agents,
	// matcher, guards, pipelines): hosts whose hashes differ run
	// different guards or agents.
	ConfigHash string `json:"config_hash"`
	Version    string `json:"version,omitempty"`
	// Draining says why the host takes no new work from the others, empty
	// while it does: DrainMaintenance (hearth hosts drain) or
	// DrainShutdown (it is stopping, finishing what it runs).
	Draining string `json:"draining,omitempty"`
	// Unhealthy says why the answering host cannot work with this one
	// (its peer handshake fails, or it does not answer), empty while it
	// can. An unhealthy host is left out of placement until it answers
	// again.
	Unhealthy string `json:"unhealthy,omitempty"`
	// Sessions counts the sessions the host publishes for placement.
	Sessions int         `json:"sessions"`
	Agents   []AgentLoad `json:"agents"`
}

// State is how a listing shows m, in one phrase: "self" for the host
// that answered (with ", draining: ..." when it drains), else
// "unhealthy: why", "shutting down", "draining: maintenance", or "up".
// A host that fails the answering host's probes is unhealthy whatever
// its record says: that host cannot work with it.
func (m *Member) State() string {
	switch {
	case m.Self && m.Draining != "":
		return "self, draining: " + m.Draining
	case m.Self:
		return "self"
	case m.Unhealthy != "":
		return "unhealthy: " + m.Unhealthy
	case m.Draining == DrainShutdown:
		return DrainShutdown
	case m.Draining != "":
		return "draining: " + m.Draining
	}
	return "up"
}

// Why a host drains (Member.Draining).
const (
	DrainMaintenance = "maintenance"
	DrainShutdown    = "shutting down"
)

// Agent returns the load of the agent named name on m, and whether m
// runs it.
func (m *Member) Agent(name string) (AgentLoad, bool) {
	for _, a := range m.Agents {
		if a.Name == name {
			return a, true
		}
	}
	return AgentLoad{}, false
}

// AgentLoad is one agent's sessions and load on a host.
type AgentLoad struct {
	Name string `json:"name"`
	// External agents' sessions report through hooks; nothing is spawned
	// for them.
	External bool `json:"external,omitempty"`
	Live     int  `json:"live"`
	Dormant  int  `json:"dormant"`
	// Load is the tasks running on the agent's sessions; Capacity the
	// slots of its live sessions; MaxSessions its pool's bound.
	Load        int `json:"load"`
	Capacity    int `json:"capacity"`
	MaxSessions int `json:"max_sessions"`
}

// ForwardInFlight is a task forwarded from one host to another that has
// not finished, as one of the two sees it: the host that forwards it
// (From is that host) or the host that runs it (To is). A host knows
// only the forwards it sends and runs: a forward between two other hosts
// shows on theirs.
type ForwardInFlight struct {
	// Task is the task's ID, the forward's idempotency key.
	Task  string `json:"task"`
	Agent string `json:"agent"`
	From  string `json:"from"`
	// To is the host the task was last sent to; empty while the sending
	// host places it (again).
	To string `json:"to,omitempty"`
	// Session is the session on To that placement chose, empty for a
	// new one (or as the receiving host does not tell).
	Session string `json:"session,omitempty"`
	// Since is when the task was sent to To (accepted there, on To's
	// side); Started when its first placement began.
	Since   time.Time `json:"since"`
	Started time.Time `json:"started"`
	// Attempt counts the hosts the task was sent to, this one included
	// (1 on the receiving side, which cannot tell).
	Attempt int `json:"attempt"`
	// State is what the forward does now: one of the Forward* states.
	State string `json:"state"`
}

// The states of a forward in flight (ForwardInFlight.State).
const (
	// ForwardPlacing: the sending host places the task (again).
	ForwardPlacing = "placing"
	// ForwardSent: the call that runs the task on To is open.
	ForwardSent = "sent"
	// ForwardAsking: the call's outcome is unknown; To is asked about
	// the task.
	ForwardAsking = "asking"
	// ForwardWaiting: To runs the task, or did not answer while it is a
	// member; the sending host waits and asks again.
	ForwardWaiting = "waiting"
	// ForwardChecking: To stopped the task or left; the sending host
	// reads whether it completed before placing it elsewhere.
	ForwardChecking = "checking completion"
	// ForwardRunning: the receiving host runs the task.
	ForwardRunning = "running"
)

// ClusterRuns is every member's runs, with their owners.
type ClusterRuns struct {
	// Self is the ID of the host that answered.
	Self string `json:"self"`
	// Clustered is false for a host without a cluster block; Hosts is
	// then empty.
	Clustered bool       `json:"clustered"`
	Hosts     []HostRuns `json:"hosts"`
}

// HostRuns is one host's part of a cluster's run listing. A run stays
// with the host that started it: its state is in that host's store.
type HostRuns struct {
	Host  string     `json:"host"`
	State OwnerState `json:"state"`
	// Runs are the host's runs: current for OwnerUp, else as of Listed.
	Runs []RunInfo `json:"runs"`
	// Listed is when Runs were listed; zero if never.
	Listed time.Time `json:"listed,omitzero"`
	// Error says why the host did not answer, for OwnerUnreachable.
	Error string `json:"error,omitempty"`
}

// OwnerState says how current a host's part of a cluster's run listing
// is.
type OwnerState string

// The states of a run's owner.
const (
	// OwnerUp: the owner answered; its runs are current.
	OwnerUp OwnerState = "up"
	// OwnerUnreachable: the owner is a member but did not answer in time;
	// its runs are the last ones it listed, if any.
	OwnerUnreachable OwnerState = "unreachable"
	// OwnerGone: the owner is no member (it died or left); its runs are
	// the last ones it listed. They resume when it returns: a run's state
	// is in its owner's store.
	OwnerGone OwnerState = "gone"
)
