package hearth

import "time"

// SocketName is the daemon's unix socket in a data directory, unless its
// config puts it elsewhere (server.socket).
const SocketName = "hearth.sock"

// ExternalClaudeCode is the kind of external agent whose sessions are
// Claude Code's, reported through its hooks.
const ExternalClaudeCode = "claude-code"

// SessionInfo describes a session, live or dormant.
type SessionInfo struct {
	ID           string    `json:"id"`
	Agent        string    `json:"agent"`
	Status       string    `json:"status"`
	Reason       string    `json:"reason,omitempty"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"last_activity"`
	Capacity     int       `json:"capacity"`
	Load         int       `json:"load"`
	PID          int       `json:"pid,omitempty"`
	AgentVersion string    `json:"agent_version,omitempty"`
	Tasks        uint64    `json:"tasks"`
	TasksFailed  uint64    `json:"tasks_failed"`
	ToolUses     uint64    `json:"tool_uses"`
	// Unchecked counts the tool uses the agent reported without asking
	// the host first, under pre_tool_use guards that cover them: each is
	// a tool.unchecked event.
	Unchecked uint64 `json:"unchecked,omitempty"`
	// HasState says the session's agent state is stored, so that it can be
	// rehydrated.
	HasState bool `json:"has_state"`
	// External is the kind of an external session (its program reports
	// through hooks; hearth did not start it); Workspace is where it
	// works, and Resume the command line that resumes it there.
	External  string `json:"external,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Resume    string `json:"resume,omitempty"`
	// The fingerprint, most recently used first.
	Files        []string `json:"files"`
	Directories  []string `json:"directories"`
	Technologies []string `json:"technologies"`
}

// SessionDetail is a session with its recent history.
type SessionDetail struct {
	SessionInfo
	// Events are the session's latest events, oldest first.
	Events []Event `json:"events"`
	// Decisions are the latest placements that involved the session, as
	// the chosen one or as a candidate, newest first.
	Decisions []Decision `json:"decisions"`
}

// AgentStatus describes one configured agent.
type AgentStatus struct {
	Name    string   `json:"name"`
	Bundled string   `json:"bundled,omitempty"`
	Command []string `json:"command,omitempty"`
	// External is the kind of an external agent's sessions.
	External string `json:"external,omitempty"`
	// Live and Dormant count the agent's sessions.
	Live    int `json:"live"`
	Dormant int `json:"dormant"`
}

// SessionCount is how many sessions of an agent are in a status.
type SessionCount struct {
	Agent  string `json:"agent"`
	Status string `json:"status"`
	N      int    `json:"n"`
}

// MaxExternalID bounds an external session's ID.
const MaxExternalID = 128

// ExternalRef names an external session in a hook report.
type ExternalRef struct {
	// Agent is an external agent of the config; empty means the config's
	// hooks.agent (by default the claude-code agent).
	Agent string
	// Session is the program's own session ID: letters, digits, '-', '_',
	// '.' and ':', at most MaxExternalID of them.
	Session string
	// Workspace is the directory the session works in (Claude Code's
	// cwd); the latest one reported is kept.
	Workspace string
}

// ValidExternalID reports whether id can be an external session's ID:
// Claude Code's are UUIDs; ':' is allowed for programs that namespace
// theirs.
func ValidExternalID(id string) bool { return validID(id, MaxExternalID, ":") }

// ResumeCommand is the command line that resumes an external session of
// kind, run in its workspace; "" for kinds hearth knows no command of.
func ResumeCommand(kind, session string) string {
	if kind == ExternalClaudeCode {
		return "claude --resume " + session
	}
	return ""
}
