package hearth

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// RunStatus is where a run stands.
type RunStatus string

// Run statuses. The allowed transitions are documented, and enforced, in
// the run engine (package host/runs).
const (
	RunCreated   RunStatus = "created"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// TaskStatus is where one task of a run stands.
type TaskStatus string

// Task statuses. The allowed transitions are documented, and enforced, in
// the run engine (package host/runs).
const (
	TaskPending   TaskStatus = "pending"
	TaskRunning   TaskStatus = "running"
	TaskSucceeded TaskStatus = "succeeded"
	TaskFailed    TaskStatus = "failed"
	TaskRetrying  TaskStatus = "retrying"
	TaskSkipped   TaskStatus = "skipped"
)

// Final reports whether a task status ends the task's part in its run,
// as things stand: succeeded, failed or skipped.
func (s TaskStatus) Final() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskSkipped
}

// Finished reports whether a run status is one the run stays in until a
// person acts: completed, failed or cancelled.
func (s RunStatus) Finished() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}

// RunOptions adjust a new run.
type RunOptions struct {
	// ID is the run's ID, from NewRunID; one is made when empty. A caller
	// that picks it can subscribe to the run's events before it starts.
	ID string
	// State sets sections of the state document over the pipeline's
	// initial state.
	State map[string]json.RawMessage
	// Files are attached to the run besides the pipeline's own: paths of
	// files to copy into the data directory's file store.
	Files []string
	// Budget, when positive, replaces the pipeline's budget.
	Budget float64
	// Config is the file the pipeline came from, shown with the run.
	Config string
}

// ResumeOptions adjust a resume.
type ResumeOptions struct {
	// Budget, when positive, replaces the run's budget: resume a run that
	// was stopped at its budget with a larger one.
	Budget float64
	// Repair resumes a run whose records validation found inconsistent,
	// running again the tasks whose outputs are missing or whose status
	// contradicts their dependencies'. Without it, such a run is not
	// resumed and the error lists what is wrong.
	Repair bool
	// State sets sections of the state document before the run resumes:
	// the fix for what a transition guard objected to. A JSON null
	// deletes a section.
	State map[string]json.RawMessage
}

// ForkOptions adjust a fork.
type ForkOptions struct {
	// ID is the new run's ID, from NewRunID; one is made when empty.
	ID string
	// State replaces sections of the state document of the checkpoint the
	// fork starts from: the branch's new direction.
	State map[string]json.RawMessage
	// Budget, when positive, replaces the budget.
	Budget float64
}

// Impact is how much a revisited task's new output changes what came
// after it (the essay seed's change impact assessment).
type Impact string

// Impacts.
const (
	// ImpactMinor flags the tasks downstream "needs review", keeping their
	// outputs.
	ImpactMinor Impact = "minor"
	// ImpactModerate archives the outputs of the affected tasks
	// (RevisitOptions.Affects, by default the revisited task's direct
	// dependents) and runs them again; the rest of downstream is flagged
	// "needs review".
	ImpactModerate Impact = "moderate"
	// ImpactMajor archives every output downstream and runs it all again.
	ImpactMajor Impact = "major"
)

// ParseImpact reads an impact level.
func ParseImpact(s string) (Impact, error) {
	switch i := Impact(strings.ToLower(strings.TrimSpace(s))); i {
	case ImpactMinor, ImpactModerate, ImpactMajor:
		return i, nil
	}
	return "", fmt.Errorf("impact %q: want minor (downstream needs review), moderate (the affected tasks run again) or major (everything downstream runs again)", s)
}

// RevisitOptions adjust a revisit.
type RevisitOptions struct {
	// Reason is why the task is revisited; it goes into the task's prompt
	// as feedback and into the run's revision history.
	Reason string
	// Affects names the downstream tasks a moderate revisit runs again;
	// empty means the revisited task's direct dependents.
	Affects []string
}

// RunInfo describes a run.
type RunInfo struct {
	ID       string    `json:"id"`
	Pipeline string    `json:"pipeline"`
	Status   RunStatus `json:"status"`
	// Reason says why the run is in its status: for a failed or paused
	// run, what failed and why.
	Reason       string    `json:"reason,omitempty"`
	Stage        string    `json:"stage,omitempty"`
	Created      time.Time `json:"created"`
	Started      time.Time `json:"started,omitzero"`
	Updated      time.Time `json:"updated"`
	LastActivity time.Time `json:"last_activity"`
	Finished     time.Time `json:"finished,omitzero"`
	Budget       float64   `json:"budget,omitempty"`
	Cost         float64   `json:"cost"`
	// Tasks counts the run's tasks; Succeeded, Failed, Skipped and
	// Running those in each status.
	Tasks     int `json:"tasks"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Progress is the share of tasks succeeded, 0 to 1.
	Progress   float64 `json:"progress"`
	Checkpoint uint64  `json:"checkpoint"`
	ForkedFrom string  `json:"forked_from,omitempty"`
	ForkedAt   uint64  `json:"forked_at,omitempty"`
	// Abandoned is set by retention on a run paused and idle past its
	// abandon_after.
	Abandoned bool `json:"abandoned,omitempty"`
	// Interrupted is set on a run whose record says running while no host
	// runs it: its host stopped without pausing it (kill -9). Resume it.
	Interrupted bool `json:"interrupted,omitempty"`
	// TraceID is the OpenTelemetry trace of the run's latest execution
	// (32 hex digits), empty when tracing was off.
	TraceID string `json:"trace_id,omitempty"`
}

// RunDetail is a run with its tasks, files, state and history.
type RunDetail struct {
	RunInfo
	Config      string          `json:"config,omitempty"`
	Description string          `json:"description,omitempty"`
	Parallel    int             `json:"parallel"`
	TaskList    []RunTaskInfo   `json:"task_list"`
	Files       []sdk.File      `json:"files,omitempty"`
	State       json.RawMessage `json:"state,omitempty"`
	Revisions   []Revision      `json:"revisions,omitempty"`
	// GateLoops counts, per guard, the times a quality gate sent work
	// back in this run.
	GateLoops map[string]int `json:"gate_loops,omitempty"`
	// Chunks lists, per file, the chunks marked done.
	Chunks map[string][]int `json:"chunks,omitempty"`
	// Owner is the host of a cluster that owns the run, when the host
	// asked read it from there (hearth runs show through any host); empty
	// for the asked host's own runs. A run's writes (pause, resume,
	// cancel, fork, delete) go to its owner.
	Owner string `json:"owner,omitempty"`
}

// RunTaskInfo describes one task of a run.
type RunTaskInfo struct {
	Name      string     `json:"name"`
	Agent     string     `json:"agent"`
	Stage     string     `json:"stage,omitempty"`
	DependsOn []string   `json:"depends_on,omitempty"`
	Status    TaskStatus `json:"status"`
	// Round counts the times the task's work was sent back or revisited;
	// Attempt is the attempts delivered in this round; Failures, those
	// that failed.
	Round    int       `json:"round"`
	Attempt  int       `json:"attempt"`
	Failures int       `json:"failures"`
	Error    string    `json:"error,omitempty"`
	Errors   []string  `json:"errors,omitempty"`
	Cost     float64   `json:"cost"`
	Session  string    `json:"session,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
	// Version is the current output's version, 0 when there is none.
	Version     int    `json:"version"`
	NeedsReview bool   `json:"needs_review,omitempty"`
	Feedback    string `json:"feedback,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// TraceID is the trace of the task's latest attempt.
	TraceID string `json:"trace_id,omitempty"`
}

// Revision is one revisit in a run's history.
type Revision struct {
	Task     string    `json:"task"`
	Impact   Impact    `json:"impact"`
	Reason   string    `json:"reason,omitempty"`
	Archived []string  `json:"archived,omitempty"`
	Review   []string  `json:"review,omitempty"`
	Reset    []string  `json:"reset,omitempty"`
	Time     time.Time `json:"time"`
}

// TaskOutput is one version of what a task of a run produced: its result
// and its context artifact. Only the current version of each task is
// chained into its dependents' prompts; the others are archived.
type TaskOutput struct {
	Task     string              `json:"task"`
	Version  int                 `json:"version"`
	Current  bool                `json:"current"`
	Output   string              `json:"output"`
	Metrics  map[string]float64  `json:"metrics,omitempty"`
	Cost     float64             `json:"cost"`
	Session  string              `json:"session"`
	Round    int                 `json:"round"`
	Attempt  int                 `json:"attempt"`
	Time     time.Time           `json:"time"`
	Duration time.Duration       `json:"duration"`
	Artifact sdk.ContextArtifact `json:"artifact"`
	// Action is how the task was placed: reused, rehydrated, spawned.
	Action string  `json:"action,omitempty"`
	Score  float64 `json:"score,omitempty"`
}

// CheckpointInfo describes a checkpoint of a run.
type CheckpointInfo struct {
	Seq    uint64    `json:"seq"`
	Parent uint64    `json:"parent,omitempty"`
	Label  string    `json:"label"`
	Task   string    `json:"task,omitempty"`
	Time   time.Time `json:"time"`
	Status RunStatus `json:"status"`
	Stage  string    `json:"stage,omitempty"`
	Cost   float64   `json:"cost"`
	// Succeeded is how many tasks had succeeded at the checkpoint.
	Succeeded int `json:"succeeded"`
}

// ValidRunID reports whether s can be a run's ID: 1 to 128 letters,
// digits, '-', '_' and '.'.
func ValidRunID(s string) bool { return validID(s, 128, "") }

// validID reports whether s is 1 to max letters, digits, '-', '_', '.'
// and the runes of extra: IDs that are part of store keys and of command
// lines hearth prints.
func validID(s string, max int, extra string) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || strings.ContainsRune(extra, c)) {
			return false
		}
	}
	return true
}

// NewRunID names a run after its pipeline and the time it was made, with
// a random suffix: readable in a list, unique in practice.
func NewRunID(pipeline string, now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			return c
		}
		return '-'
	}, pipeline)
	return fmt.Sprintf("%s-%s-%s", name, now.UTC().Format("20060102-150405"), hex.EncodeToString(b[:]))
}
