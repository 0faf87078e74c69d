package host

import (
	"fmt"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/matcher"
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
)

// Decision says where a task was placed and why: every candidate's
// per-factor scores, the matcher's outcome, and what the host did.
type Decision struct {
	Task     string `json:"task"`
	TaskName string `json:"task_name,omitempty"`
	Agent    string `json:"agent"`
	Action   Action `json:"action"`
	Session  string `json:"session"`
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

func candidatesOf(d matcher.Decision) []Candidate {
	out := make([]Candidate, 0, len(d.Ranked))
	for _, r := range d.Ranked {
		c := Candidate{
			Session: r.ID, Dormant: r.Dormant, Eligible: r.Eligible, Load: r.Load, Capacity: r.Capacity,
			Directory: r.Scores.Directory, File: r.Scores.File, Tech: r.Scores.Tech,
			Freshness: r.Scores.Freshness, LoadScore: r.Scores.Load, Total: r.Total,
		}
		for _, f := range []struct {
			on   bool
			name string
		}{
			{r.Applied.Directory, "directory"}, {r.Applied.File, "file"}, {r.Applied.Tech, "tech"},
			{r.Applied.Freshness, "freshness"}, {r.Applied.Load, "load"},
		} {
			if f.on {
				c.Applied = append(c.Applied, f.name)
			}
		}
		out = append(out, c)
	}
	return out
}

// Explain renders a candidate's scores on one line, with "-" for factors
// that did not apply. Its total has the digits it takes to show on which
// side of threshold, its decision's, it lies (matcher.FormatScore).
func (c Candidate) Explain(threshold float64) string {
	applied := make(map[string]bool, len(c.Applied))
	for _, a := range c.Applied {
		applied[a] = true
	}
	parts := make([]string, 0, 5)
	for _, f := range []struct {
		label, name string
		v           float64
	}{
		{"dir", "directory", c.Directory}, {"file", "file", c.File}, {"tech", "tech", c.Tech},
		{"fresh", "freshness", c.Freshness}, {"load", "load", c.LoadScore},
	} {
		if applied[f.name] {
			parts = append(parts, fmt.Sprintf("%s %.2f", f.label, f.v))
		} else {
			parts = append(parts, f.label+" -")
		}
	}
	total, _ := matcher.FormatScore(c.Total, threshold)
	s := fmt.Sprintf("%s %s = %s", c.Session, total, strings.Join(parts, " "))
	if c.Dormant {
		s += " (dormant)"
	}
	if !c.Eligible {
		s += fmt.Sprintf(" (busy %d/%d)", c.Load, c.Capacity)
	}
	return s
}

// toRecord converts a decision for the event log.
func (d *Decision) toRecord() *storepb.Decision {
	r := &storepb.Decision{
		Task: d.Task, TaskName: d.TaskName, Agent: d.Agent, Outcome: d.Outcome, Threshold: d.Threshold,
		Considered: int32(d.Considered), Eligible: int32(d.Eligible), Action: string(d.Action),
		Session: d.Session, WaitedNanos: int64(d.Waited), Retired: d.Retired, Reason: d.Reason,
		HintFiles: d.Hints.Files, HintDirs: d.Hints.Directories, HintTechs: d.Hints.Technologies,
		Vetoed: d.Vetoed,
	}
	if d.Action != ActionSpawned {
		r.Winner = d.Session
		r.Dormant = d.Action == ActionRehydrated
	}
	for _, c := range d.Candidates {
		var applied uint32
		for _, a := range c.Applied {
			applied |= factorBits[a]
		}
		r.Ranked = append(r.Ranked, &storepb.Candidate{
			Id: c.Session, Directory: c.Directory, File: c.File, Tech: c.Tech, Freshness: c.Freshness,
			Load: c.LoadScore, Applied: applied, Total: c.Total, Eligible: c.Eligible, Dormant: c.Dormant,
			LoadCount: int32(c.Load), Capacity: int32(c.Capacity),
		})
	}
	return r
}

var factorBits = map[string]uint32{"directory": 1, "file": 2, "tech": 4, "freshness": 8, "load": 16}

// decisionFromRecord is the inverse of toRecord.
func decisionFromRecord(r *storepb.Decision) Decision {
	d := Decision{
		Task: r.GetTask(), TaskName: r.GetTaskName(), Agent: r.GetAgent(), Action: Action(r.GetAction()), Session: r.GetSession(),
		Outcome: r.GetOutcome(), Threshold: r.GetThreshold(), Considered: int(r.GetConsidered()),
		Eligible: int(r.GetEligible()), Waited: time.Duration(r.GetWaitedNanos()), Retired: r.GetRetired(),
		Reason: r.GetReason(), Vetoed: r.GetVetoed(),
		Hints: sdk.Hints{Files: r.GetHintFiles(), Directories: r.GetHintDirs(), Technologies: r.GetHintTechs()},
	}
	for _, c := range r.GetRanked() {
		cand := Candidate{
			Session: c.GetId(), Dormant: c.GetDormant(), Eligible: c.GetEligible(), Load: int(c.GetLoadCount()),
			Capacity: int(c.GetCapacity()), Directory: c.GetDirectory(), File: c.GetFile(), Tech: c.GetTech(),
			Freshness: c.GetFreshness(), LoadScore: c.GetLoad(), Total: c.GetTotal(),
		}
		for _, name := range []string{"directory", "file", "tech", "freshness", "load"} {
			if c.GetApplied()&factorBits[name] != 0 {
				cand.Applied = append(cand.Applied, name)
			}
		}
		d.Candidates = append(d.Candidates, cand)
		if cand.Session == d.Session && d.Action != ActionSpawned {
			d.Score = cand.Total
		}
	}
	if d.Action == ActionSpawned && len(d.Candidates) > 0 {
		d.Score = d.Candidates[0].Total
	}
	return d
}
