package store

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// The records below are what the engine keeps and this package stores:
// plain Go values, each the counterpart of one protobuf message of
// storepb, which never leaves this package (convert.go translates).
// Times are zero when unset.

// SessionStatus is a session's status as its record keeps it.
type SessionStatus int

// Session statuses in the store. A session starting or being retired is
// recorded live: what matters after a crash is that it had a process.
const (
	SessionLive SessionStatus = iota + 1
	SessionDormant
	SessionLost
)

func (s SessionStatus) String() string {
	switch s {
	case SessionLive:
		return "live"
	case SessionDormant:
		return "dormant"
	case SessionLost:
		return "lost"
	}
	return "unknown"
}

// SessionRecord is a session as the store keeps it (key s/<id>): its
// status, counters and fingerprint.
type SessionRecord struct {
	ID           string
	Agent        string
	Status       SessionStatus
	Created      time.Time
	LastActivity time.Time
	Capacity     int
	// Files, Dirs and Techs are the fingerprint, least recently used
	// first.
	Files, Dirs, Techs []string
	// FingerprintSeq is the last tool-use event the fingerprint covers:
	// later ones are replayed into it on restart.
	FingerprintSeq uint64
	Tasks          uint64
	TasksFailed    uint64
	ToolUses       uint64
	// Unchecked counts the guarded tool uses reported without a check.
	Unchecked    uint64
	HasState     bool
	PID          int
	AgentVersion string
	Reason       string
	External     string
	Workspace    string
	Busy         bool
}

// RunRecord is a run's head (key r/<run>): its status, stage, cost, state
// document, chunk progress and files.
type RunRecord struct {
	ID           string
	Pipeline     string
	Status       hearth.RunStatus
	Reason       string
	Created      time.Time
	Updated      time.Time
	LastActivity time.Time
	Started      time.Time
	Finished     time.Time
	Budget       float64
	Cost         float64
	Stage        string
	// State is the state document, a JSON object of sections.
	State json.RawMessage
	// Chunks lists, per file, the chunks marked done, in increasing
	// order.
	Chunks     map[string][]int
	Checkpoint uint64
	ForkedFrom string
	ForkedAt   uint64
	Abandoned  bool
	Files      []RunFile
	// GateLoops counts, per guard, the times a quality gate sent work
	// back.
	GateLoops map[string]int
	Revisions []hearth.Revision
	// Counts of the run's tasks by status.
	TasksTotal, TasksSucceeded, TasksFailed, TasksSkipped int
}

// RunFile is a file attached to a run, stored once by content.
type RunFile struct {
	Name   string
	SHA256 string
	Size   int64
	Added  time.Time
}

// Graph is a run's pipeline as it was when the run was made (key
// g/<run>), and the config file it came from.
type Graph struct {
	Pipeline *hearth.Pipeline
	Config   string
}

// TaskRecord is where one task of a run stands (key rt/<run>/<task>).
type TaskRecord struct {
	Name     string
	Status   hearth.TaskStatus
	Round    int
	Attempts int
	Failures int
	Error    string
	Errors   []string
	Cost     float64
	Session  string
	// TaskID is the host task ID of the current attempt.
	TaskID   string
	Started  time.Time
	Finished time.Time
	RetryAt  time.Time
	// Version is the current output's version, 0 when there is none.
	Version     int
	NeedsReview bool
	Feedback    string
	Reason      string
}

// CheckpointRecord is an immutable snapshot of a run (key c/<run>/<seq>):
// its head, and the tasks changed since the checkpoint before it.
type CheckpointRecord struct {
	Seq    uint64
	Parent uint64
	Label  string
	Task   string
	Time   time.Time
	Run    *RunRecord
	Tasks  []*TaskRecord
}

// OutputRecord is one version of a task's output (key
// o/<run>/<task>/<version>): its result, its context artifact, and how it
// was placed. Immutable.
type OutputRecord struct {
	Task     string
	Version  int
	Output   string
	Metrics  map[string]float64
	Cost     float64
	Session  string
	Attempt  int
	Round    int
	Time     time.Time
	Duration time.Duration
	Artifact sdk.ContextArtifact
	// Action and Score are how the task was placed.
	Action string
	Score  float64
}

// Clone returns a deep copy of r.
func (r *RunRecord) Clone() *RunRecord {
	c := *r
	c.State = slices.Clone(r.State)
	c.Chunks = make(map[string][]int, len(r.Chunks))
	for f, cs := range r.Chunks {
		c.Chunks[f] = slices.Clone(cs)
	}
	if r.Chunks == nil {
		c.Chunks = nil
	}
	c.Files = slices.Clone(r.Files)
	c.GateLoops = maps.Clone(r.GateLoops)
	c.Revisions = make([]hearth.Revision, len(r.Revisions))
	for i, rv := range r.Revisions {
		rv.Archived, rv.Review, rv.Reset = slices.Clone(rv.Archived), slices.Clone(rv.Review), slices.Clone(rv.Reset)
		c.Revisions[i] = rv
	}
	if r.Revisions == nil {
		c.Revisions = nil
	}
	return &c
}

// Clone returns a deep copy of t.
func (t *TaskRecord) Clone() *TaskRecord {
	c := *t
	c.Errors = slices.Clone(t.Errors)
	return &c
}
