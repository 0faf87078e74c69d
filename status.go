package hearth

import "time"

// HostStatus says what a host is (its version, data directory, process,
// config and agents) and how it is doing (its sessions and the size of
// its store): what `hearth serve` reports, the dashboard shows and
// /metrics exports.
type HostStatus struct {
	// Version is the hearth that runs the host; empty when the host was
	// not told.
	Version string    `json:"version"`
	DataDir string    `json:"data_dir"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Config is the config file in force; empty for the defaults.
	Config string `json:"config,omitempty"`
	// ProtocolVersion is the agent protocol the host speaks
	// (docs/protocol.md).
	ProtocolVersion int           `json:"protocol_version"`
	Agents          []AgentStatus `json:"agents"`
	// Sessions counts the sessions by agent and status (live, starting,
	// retiring, dormant, lost), every pair listed.
	Sessions []SessionCount `json:"sessions"`
	// Store is the size of the store's files.
	Store StoreSize `json:"store"`
	// Cluster is what the host did as a member of its cluster; nil
	// without a cluster block. It is read in the daemon (/metrics, the
	// dashboard), not carried over the API.
	Cluster *ClusterStats `json:"cluster,omitempty"`
}

// ClusterStats is what a host did as a member of its cluster since it
// started, and how it sees the cluster now: /metrics' cluster series.
// Counts by outcome hold only the outcomes that happened.
type ClusterStats struct {
	// Self is the host's ID; EtcdErr says why it cannot reach etcd now,
	// empty while it can.
	Self    string `json:"self"`
	EtcdErr string `json:"etcd_err,omitempty"`
	// Members are the hosts it sees, itself included once registered;
	// Unhealthy and Draining, those of them it cannot work with and
	// those that take no new work.
	Members   int `json:"members"`
	Unhealthy int `json:"unhealthy"`
	Draining  int `json:"draining"`
	// Decisions counts the tasks submitted to this host, by where they
	// ran: "local" (here) or "forwarded" (on another host). A forwarded
	// task's placement decision (hearth_decisions_total) counts on the
	// host that ran it, whose pool chose the session.
	Decisions map[string]int64 `json:"decisions"`
	// ForwardsSent counts the attempts to run a task on another host, by
	// what each came to: completed, refused, unreachable, interrupted,
	// left (the host left the cluster while it ran), unknown (the
	// connection broke; the host was asked). ForwardsReceived counts the
	// forwards other hosts sent here, by outcome: completed, failed (the
	// task's own failure), refused, interrupted, repeated (a key already
	// accepted: its kept result, or its run in flight, answered).
	ForwardsSent     map[string]int64 `json:"forwards_sent"`
	ForwardsReceived map[string]int64 `json:"forwards_received"`
	// InFlightSent are the forwards sent and not answered yet;
	// InFlightReceived, the forwarded tasks running here.
	InFlightSent     int `json:"in_flight_sent"`
	InFlightReceived int `json:"in_flight_received"`
	// Replacements counts the placements of a forwarded task after its
	// first (another host, after a refusal, an unreachable host, a host
	// lost mid-task).
	Replacements int64 `json:"replacements"`
	// LeaseLosses counts the leases the host lost; EtcdTxns its write
	// transactions to etcd (registrations and publishing batches: its
	// rate is the publish rate), EtcdKeys the keys written in them.
	LeaseLosses int64 `json:"lease_losses"`
	EtcdTxns    int64 `json:"etcd_txns"`
	EtcdKeys    int64 `json:"etcd_keys"`
}

// StoreSize is the size in bytes of a store's files: its LSM tree and its
// value log.
type StoreSize struct {
	LSM  int64 `json:"lsm"`
	VLog int64 `json:"vlog"`
}

// BackupStats says what a backup holds.
type BackupStats struct {
	Records int   `json:"records"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
}
