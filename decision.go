package hearth

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	// Factors are the matcher's factors for this session, every one, in
	// the matcher's order (directory, file, tech, freshness, load, and
	// any added since): the matcher produces them, so a new factor shows
	// here, in the store, over the API and in the CLI without a change
	// to any of them.
	Factors []Factor `json:"factors"`
	Total   float64  `json:"total"`
}

// Factor is one factor of a candidate's total: Total is the sum of
// Weight·Score over the applied factors (freshness and load scaled by
// the context agreement: package matcher's doc) over the sum of their
// weights.
type Factor struct {
	// Name is the factor's, as the config file's weights block names
	// it: "directory", "file", "tech", "freshness", "load".
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
	// Score is in [0, 1].
	Score float64 `json:"score"`
	// Applied is false for a factor the task gave no hints for: it did
	// not count in the total.
	Applied bool `json:"applied"`
	// Share is the factor's part of the candidate's Total, as the
	// matcher computed it when it decided: the shares of a candidate's
	// factors add up to its Total (0 for a factor that did not apply),
	// so a reader draws or explains a total without the matcher's
	// formula, for factors it never heard of too. A decision recorded
	// before hearth kept shares reads with every share 0: shares that
	// add up to 0 under a total that is not 0 were never recorded.
	Share float64 `json:"share"`
}

// Factor returns the candidate's factor named name, and whether it has
// one.
func (c Candidate) Factor(name string) (Factor, bool) {
	for _, f := range c.Factors {
		if f.Name == name {
			return f, true
		}
	}
	return Factor{}, false
}

// Score is the score of the factor named name, 0 when it has none.
func (c Candidate) Score(name string) float64 {
	f, _ := c.Factor(name)
	return f.Score
}

// MarshalJSON writes the candidate with its factors, and, for readers
// of the JSON written before factors were a list (the dashboard, scripts
// over `hearth decisions --json`), each factor's score at the top level
// under its name ("directory": 0.5; load's as "load_score", since "load"
// is the session's running tasks) and "applied", the names of the
// applied factors. Decoding reads "factors" and ignores those keys.
func (c Candidate) MarshalJSON() ([]byte, error) {
	type plain Candidate // without this method
	b, err := json.Marshal(plain(c))
	if err != nil || len(c.Factors) == 0 {
		return b, err
	}
	var flat bytes.Buffer
	applied := make([]string, 0, len(c.Factors))
	for _, f := range c.Factors {
		key := f.Name
		if reservedCandidateKeys[key] {
			key += "_score"
		}
		k, _ := json.Marshal(key)
		v, err := json.Marshal(f.Score)
		if err != nil {
			return nil, fmt.Errorf("candidate %s: factor %s: %w", c.Session, f.Name, err)
		}
		flat.WriteByte(',')
		flat.Write(k)
		flat.WriteByte(':')
		flat.Write(v)
		if f.Applied {
			applied = append(applied, f.Name)
		}
	}
	a, _ := json.Marshal(applied)
	flat.WriteString(`,"applied":`)
	flat.Write(a)
	return append(append(b[:len(b)-1:len(b)-1], flat.Bytes()...), '}'), nil
}

// reservedCandidateKeys are the JSON keys of a Candidate's own fields,
// which a factor's flat key must not shadow.
var reservedCandidateKeys = map[string]bool{"session": true, "dormant": true, "eligible": true, "load": true, "capacity": true, "factors": true, "total": true, "applied": true}

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
