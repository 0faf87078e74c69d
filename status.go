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
