package hearth

import (
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Action is what the host did to place a task.
type Action string

// Actions.
const (
	// ActionReused: the task ran on a live, warm session.
	ActionReused Action = "reused"
	// ActionRehydrated: a dormant session won; a new process was started
	// for it and given the session's exported state.
	ActionRehydrated Action = "rehydrated"
	// ActionSpawned: the task got a new session.
	ActionSpawned Action = "spawned"
	// ActionResume: Place points at an external session, which its own
	// program resumes (Decision.Resume says how); hearth runs nothing.
	ActionResume Action = "resume"
	// ActionWait: Place found the pool full, and the task would wait for
	// room: for Session, a busy session that would win it, or for any
	// session to free a slot. Submit waits, then decides again.
	ActionWait Action = "wait"
)

// Decision says where a task was placed and why: every candidate's
// per-factor scores, the matcher's outcome, and what the host did.
type Decision struct {
	Task     string `json:"task"`
	TaskName string `json:"task_name,omitempty"`
	Agent    string `json:"agent"`
	Action   Action `json:"action"`
	Session  string `json:"session"`
	// Host is the cluster member the task ran on (or would run on) when
	// that is another host than the one that decided; empty otherwise,
	// and always without a cluster block.
	Host string `json:"host,omitempty"`
	// Outcome is the matcher's: reuse, spawn-no-candidates,
	// spawn-all-busy, spawn-below-threshold.
	Outcome   string  `json:"outcome"`
	Threshold float64 `json:"threshold"`
	// Score is the chosen session's total; for a spawn, the best
	// candidate's.
	Score      float64     `json:"score"`
	Candidates []Candidate `json:"candidates"`
	Considered int         `json:"considered"`
	Eligible   int         `json:"eligible"`
	// Waited is how long the task waited for room in a full pool.
	Waited time.Duration `json:"waited"`
	// Retired is the idle session retired to make room, if any.
	Retired string `json:"retired,omitempty"`
	// Vetoed lists the sessions session_reuse guards refused, as
	// "session:guard".
	Vetoed []string `json:"vetoed,omitempty"`
	// Rehydration says which dormant session won but could not be
	// rehydrated, and why, when the task then went elsewhere.
	Rehydration string `json:"rehydration,omitempty"`
	// Attempts are the hosts a task placed across a cluster went to,
	// in order, and what each attempt met; the last one is where it
	// ran. Empty for a task that ran where it was submitted at once.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Reason explains the decision in one line.
	Reason string    `json:"reason"`
	Hints  sdk.Hints `json:"hints"`
	// External is the kind of the agent's sessions when they are external
	// (Place only); Resume is then the command line that resumes the
	// chosen one, run in Workspace.
	External  string `json:"external,omitempty"`
	Resume    string `json:"resume,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// Candidate is one ranked session of a decision.
type Candidate struct {
	Session  string `json:"session"`
	Dormant  bool   `json:"dormant"`
	Eligible bool   `json:"eligible"`
	Load     int    `json:"load"`
	Capacity int    `json:"capacity"`
	// Factor scores, in [0, 1]; a factor the task gave no hints for did
	// not apply and is left out (NaN is not used: see Applied).
	Directory float64 `json:"directory"`
	File      float64 `json:"file"`
	Tech      float64 `json:"tech"`
	Freshness float64 `json:"freshness"`
	LoadScore float64 `json:"load_score"`
	// Applied lists the factors that counted: directory, file, tech,
	// freshness, load.
	Applied []string `json:"applied"`
	Total   float64  `json:"total"`
}

// Attempt is one host a task placed across a cluster went to, and what
// became of it there (Decision.Attempts).
type Attempt struct {
	Host string `json:"host"`
	// Session is the session placement chose there; empty for a new one.
	Session string `json:"session,omitempty"`
	// Result is what the attempt met: "completed", or why the task went
	// on elsewhere ("unreachable", "refused", "interrupted", "left the
	// cluster", ...), with the host's answer.
	Result string `json:"result"`
}
