package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// Errors of the run API.
var (
	// ErrUnknownRun is returned for a run ID the store does not have.
	ErrUnknownRun = errors.New("no such run")
	// ErrRunActive is returned for an operation that needs the run to be
	// stopped (revisit, delete) while this host is running it.
	ErrRunActive = errors.New("the run is running")
	// ErrRunInvalid is wrapped by the error of a resume that found the
	// run's records inconsistent; see InvalidRunError.
	ErrRunInvalid = errors.New("the run's records are inconsistent")
)

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

// RunError is the error of a run that did not complete: it failed, was
// paused or was cancelled. Reason is the run's report.
type RunError struct {
	Run    string
	Status RunStatus
	Reason string
}

func (e *RunError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("run %s %s", e.Run, e.Status)
	}
	return fmt.Sprintf("run %s %s: %s", e.Run, e.Status, e.Reason)
}

// Problem is one inconsistency validation found in a run's records.
type Problem struct {
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
	// Repair says what resuming with Repair does about it; empty when it
	// cannot be repaired.
	Repair string `json:"repair,omitempty"`
}

// InvalidRunError is a resume refused because the run's records are
// inconsistent: outputs or files that no longer exist, statuses that
// contradict each other.
type InvalidRunError struct {
	Run      string
	Problems []Problem
}

func (e *InvalidRunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s cannot be resumed as it is: %d problem(s) found", e.Run, len(e.Problems))
	repairable := true
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		if p.Task != "" {
			b.WriteString("task " + p.Task + ": ")
		}
		b.WriteString(p.Message)
		if p.Repair != "" {
			b.WriteString(" (repair: " + p.Repair + ")")
		} else {
			repairable = false
		}
	}
	if repairable {
		fmt.Fprintf(&b, "\nresume with repair (hearth runs resume %s --repair) to do what each problem says", e.Run)
	} else {
		b.WriteString("\nsome problems cannot be repaired: restore the data directory from a backup, or fork the run from an earlier checkpoint")
	}
	return b.String()
}

func (e *InvalidRunError) Unwrap() error { return ErrRunInvalid }

// RunHandle follows a run this host executes.
type RunHandle struct {
	// ID is the run's ID.
	ID   string
	done chan struct{}
	info RunInfo
	err  error
}

// Done is closed when the run stops: completed, failed, paused or
// cancelled.
func (r *RunHandle) Done() <-chan struct{} { return r.done }

// Wait returns the run as it stopped. The error is nil when the run
// completed, a *RunError when it failed, was paused or cancelled, and
// ctx's error when ctx ended first (the run goes on).
func (r *RunHandle) Wait(ctx context.Context) (RunInfo, error) {
	select {
	case <-r.done:
		return r.info, r.err
	case <-ctx.Done():
		return RunInfo{}, ctx.Err()
	}
}

// pipelineOf checks a pipeline submitted through the Go API against the
// host's agents, with its defaults applied.
func (h *Host) pipelineOf(p *config.Pipeline) (*config.Pipeline, error) {
	if p == nil {
		return nil, errors.New("run: nil pipeline")
	}
	cp := *p
	cp.Defaults()
	var errs []error
	if err := cp.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, t := range cp.Tasks {
		if t.Agent == "" {
			continue
		}
		if p, err := h.pool(t.Agent); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		} else if err := p.runnable(); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", t.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pipeline %q: %w", cp.Name, err)
	}
	return &cp, nil
}
