// Package record holds the records of one host's state as plain Go
// values: its sessions (Session), and its runs with their tasks, outputs
// and checkpoints (Run, Task, Output, Checkpoint), and RunWrite, the set
// of a run's records written together.
//
// The store keeps these records: it maps them to its encoding at its
// edge (package host/store, convert.go), and its encoding never leaves
// it. The pools work on sessions' records, the run engine on runs'; each
// declares the small interface of the store it needs in these terms
// (pool.SessionStore, runs.Store). None of store, pool and runs imports
// another for a type: this package is what they share, as the
// vocabulary (package hearth) is what every side speaks. It holds values
// and their plain conversions to the vocabulary's types, no behaviour:
// what may be done to a run is package runs' to decide.
package record

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// Each record is the counterpart of one protobuf message of the store's
// (storepb, which never leaves package store). Times are zero when unset.

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

// Session is a session as the store keeps it (key s/<id>): its
// status, counters and fingerprint.
type Session struct {
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

// Run is a run's head (key r/<run>): its status, stage, cost, state
// document, chunk progress and files.
type Run struct {
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
	Files      []File
	// GateLoops counts, per guard, the times a quality gate sent work
	// back.
	GateLoops map[string]int
	Revisions []hearth.Revision
	// Counts of the run's tasks by status.
	TasksTotal, TasksSucceeded, TasksFailed, TasksSkipped int
	// TraceID is the OpenTelemetry trace of the run's latest execution
	// (its hearth.run span), empty when it was not traced.
	TraceID string
}

// File is a file attached to a run, stored once by content.
type File struct {
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

// Task is where one task of a run stands (key rt/<run>/<task>).
type Task struct {
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
	// TraceID is the trace of the task's latest attempt: its run's then.
	TraceID string
}

// Checkpoint is an immutable snapshot of a run (key c/<run>/<seq>):
// its head, and the tasks changed since the checkpoint before it.
type Checkpoint struct {
	Seq    uint64
	Parent uint64
	Label  string
	Task   string
	Time   time.Time
	Run    *Run
	Tasks  []*Task
}

// Output is one version of a task's output (key
// o/<run>/<task>/<version>): its result, its context artifact, and how it
// was placed. Immutable.
type Output struct {
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
func (r *Run) Clone() *Run {
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
func (t *Task) Clone() *Task {
	c := *t
	c.Errors = slices.Clone(t.Errors)
	return &c
}

// RunWrite is one atomic write of a run's records: whatever it holds
// lands in one transaction or not at all. A task's outcome, the run's
// head and the checkpoint that follows them travel together this way.
type RunWrite struct {
	Run        *Run
	Graph      *Graph
	Tasks      []*Task
	Checkpoint *Checkpoint
	Outputs    []*Output
	// FileRefs are the SHA-256s of files the run now uses: a blob stays
	// while a run refers to it.
	FileRefs []string
	// Events are appended to their streams in the same transaction: the
	// events that say what the write records (a task succeeded, a
	// checkpoint) are on disk exactly when it is. They are numbered in
	// order, from one range reserved for the write.
	Events []hearth.Event
}
