package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Agent is the contract every hearth agent implements. The same interface
// is seen on both sides of the plugin boundary: an author implements it and
// passes it to Serve; the host receives an Agent (a Remote) that forwards
// each call to the plugin process.
//
// One value serves one session. Run may be called concurrently up to the
// capacity the agent declares in Info; Describe may be called at any time.
type Agent interface {
	// Describe says who the agent is. The host calls it once per session,
	// right after the plugin starts.
	Describe(ctx context.Context) (Info, error)

	// Run carries out one task and returns its result, with what the task
	// learned (Result.Artifact) for the tasks that depend on it. While it
	// runs, the agent talks to the host through cb: a question before each
	// tool use, which a guard may deny; a report of each tool use it made;
	// progress. A task that belongs to a run is given RunCallbacks (check
	// with a type assertion). Run must return promptly once ctx is done.
	Run(ctx context.Context, t Task, cb Callbacks) (Result, error)
}

// StateExporter is implemented by agents whose session can be rehydrated:
// the host exports the state before it retires a session and imports it
// into a fresh process when the matcher picks the dormant session again.
// The bytes are opaque to hearth.
type StateExporter interface {
	// ExportState returns the session's state.
	ExportState(ctx context.Context) ([]byte, error)
	// ImportState restores state exported by an earlier session of the
	// same agent, before the session's first task. Malformed state is an
	// error, never a panic.
	ImportState(ctx context.Context, state []byte) error
}

// Callbacks are the agent's calls back to the host during one task, and
// nothing else: the host as an agent sees it. (Not to be confused with a
// host, the hearth process that runs the agent; the wire service that
// carries these calls is still named Host, see docs/protocol.md.) Every
// method is safe for concurrent use.
//
// The honest path is the easy one: Tools asks, does the work and reports
// in one call for the common tools. An agent that uses its own tools asks
// with CheckToolUse before each tool use and reports it with ReportToolUse
// after, with the same CallID.
type Callbacks interface {
	// CheckToolUse is the pre-tool-use hook: the agent asks before it uses
	// a tool, and must not make the call when the verdict denies it. The
	// host's guards answer; a host may also flag or refuse tool uses that
	// were reported without being asked about first.
	CheckToolUse(ctx context.Context, c ToolCall) (Verdict, error)

	// ReportToolUse records a tool use the agent made: the on-tool-use hook
	// that keeps the session's context current. Reports travel on one
	// stream per task; ReportToolUse returns once the report is sent, and
	// the task's result is not returned to the host until every report has
	// been acknowledged as durable. A report whose Outcome is OutcomeUnset
	// is refused with an error and never reaches the host.
	ReportToolUse(ctx context.Context, u ToolUse) error

	// ReportProgress tells the host how far the task has come and what it
	// has cost so far.
	ReportProgress(ctx context.Context, p Progress) error

	// Logger returns a logger whose lines reach the host's log, named by
	// agent and session.
	Logger() hclog.Logger
}

// RunCallbacks are the Callbacks of a task that belongs to a run (Task.Run
// is set): they also reach the run's state document, checkpoints, files
// and chunk progress. It is an optional upgrade, in the manner of io/fs:
// the Callbacks given to a task outside a run do not implement it.
//
//	if rcb, ok := cb.(sdk.RunCallbacks); ok {
//		in, err := rcb.State(ctx, "inputs")
//		...
//	}
type RunCallbacks interface {
	Callbacks

	// State returns one top-level section of the run's state document, as
	// JSON, or nil when the section is not set. Section "" returns the
	// whole document (the sections the agent may read) as one JSON object.
	// An agent reading a section it does not own for reading gets an
	// error wrapping ErrNotOwner.
	State(ctx context.Context, section string) (json.RawMessage, error)

	// SetState replaces one top-level section of the run's state document
	// with value, encoded as JSON (a json.RawMessage is taken as is; nil
	// deletes the section). It returns once the write is durable. A
	// section the agent does not own for writing is refused with an error
	// wrapping ErrNotOwner that names the agent and the section.
	SetState(ctx context.Context, section string, value any) error

	// Checkpoint asks for a checkpoint of the run now, labelled label, and
	// returns its number once it is durable. The host also checkpoints
	// after every task.
	Checkpoint(ctx context.Context, label string) (uint64, error)

	// Files lists the files attached to the run. They are immutable: an
	// agent reads them in place and never writes them.
	Files(ctx context.Context) ([]File, error)

	// DoneChunks returns the chunks of file already marked done in this
	// run, in increasing order: a resumed task skips them.
	DoneChunks(ctx context.Context, file string) ([]int, error)

	// MarkChunk records that chunk of file is done. It returns once the
	// mark is durable. Write the chunk's output (SetState) first, then
	// mark it: a crash in between only does the chunk again.
	MarkChunk(ctx context.Context, file string, chunk int) error
}

// File is a file attached to a run: content-addressed, identified by its
// SHA-256 and size, stored once however many runs use it.
type File struct {
	// Name is the file's name in the run ("syllabus.md").
	Name string `json:"name"`
	// Path is where the agent reads it: an absolute path in the host's
	// data directory, on the same machine.
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string `json:"sha256"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
}

// Syncer is an optional upgrade of the Callbacks that the host side implements:
// when a task's tool-use stream ends, the SDK calls Sync before it
// acknowledges the stream, so an acknowledged report is durable.
type Syncer interface {
	// Sync returns once every tool use reported so far is durable.
	Sync(ctx context.Context) error
}

// Info describes an agent. Whether the agent exports its session's state
// is not said here: the SDK tells the host when the agent implements
// StateExporter.
type Info struct {
	// Name names the agent: one word, such as "coder".
	Name string `json:"name"`
	// Version is the agent's own version, such as "0.1.0".
	Version string `json:"version"`
	// Description says in a sentence what the agent does.
	Description string `json:"description,omitempty"`
	// Technologies the agent handles ("go", "python"); informational.
	Technologies []string `json:"technologies,omitempty"`
	// Capacity is how many tasks one session runs at once. Zero means 1.
	Capacity int `json:"capacity"`
}

// Hints tell the host, and the matcher, what a task will touch. Paths are
// relative to the session's workspace.
type Hints struct {
	// Files the task will read or change.
	Files []string `json:"files,omitempty"`
	// Directories the task will work in.
	Directories []string `json:"directories,omitempty"`
	// Technologies the task involves ("go", "sql").
	Technologies []string `json:"technologies,omitempty"`
}

// Task is one unit of work.
type Task struct {
	// ID is unique per task; the host sets it.
	ID string `json:"id"`
	// Run is the ID of the run the task belongs to, empty for a task
	// submitted on its own. The Callbacks of a task with a Run are RunCallbacks.
	Run string `json:"run,omitempty"`
	// Name is the task's name in its pipeline ("research", "script").
	Name string `json:"name,omitempty"`
	// Session is the ID of the session the task runs on.
	Session string `json:"session,omitempty"`
	// Prompt is the task's prompt exactly as written in the pipeline or
	// submitted: the host never rewrites it. What upstream tasks learned
	// is in Upstream and Context, why the task was sent back in Feedback.
	Prompt string `json:"prompt"`
	// Hints say what the task will touch.
	Hints Hints `json:"hints"`
	// Upstream is what the tasks this one depends on (directly or not)
	// learned, nearest first, then newest first; empty for a task with no
	// upstream artifacts.
	Upstream []Upstream `json:"upstream,omitempty"`
	// Context is Upstream rendered as one Markdown block for agents that
	// want text (the run's context template and size budget apply), or ""
	// when there is none. Put it where the agent's prompt needs it.
	Context string `json:"context,omitempty"`
	// Feedback says why the task was sent back or revisited (a quality
	// gate's report, a revisit's reason); "" normally.
	Feedback string `json:"feedback,omitempty"`
	// IdempotencyKey is the same on every attempt of the task: delivery is
	// at least once, so an agent with side effects outside hearth uses it
	// to do them once.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Attempt is 1 on the first try and grows with each retry.
	Attempt int `json:"attempt"`
	// Metadata is the task's free-form key-value metadata from its
	// pipeline or submission.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Upstream is what one upstream task learned, and where and when.
type Upstream struct {
	// Task is the upstream task's name in its pipeline.
	Task string `json:"task"`
	// Version counts the upstream task's outputs: 1 for its first, more
	// once it was sent back and ran again. Upstream holds the current one.
	Version int `json:"version"`
	// Session is the session that ran it.
	Session string `json:"session,omitempty"`
	// CreatedAt is when it finished.
	CreatedAt time.Time `json:"created_at"`
	// Artifact is what it learned.
	Artifact ContextArtifact `json:"artifact"`
}

// Result is what a task produced.
type Result struct {
	// Output is the task's answer, as text.
	Output string `json:"output"`
	// Metrics are numbers the host's quality gates can check, such as
	// "quality" (0..1) or "word_count".
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Cost of the task, in the unit the run's budget uses.
	Cost float64 `json:"cost"`
	// Artifact is what the task learned, chained to the tasks that depend
	// on it (their Task.Upstream and Task.Context). Leave it zero when
	// there is nothing to pass on.
	Artifact ContextArtifact `json:"artifact"`
}

// ContextArtifact is what a finished task learned, chained to the tasks
// that depend on it. Where and when it was learned is the host's to know
// (Upstream).
type ContextArtifact struct {
	// KeyDecisions are choices the task made that later tasks must keep.
	KeyDecisions []string `json:"key_decisions,omitempty"`
	// ModifiedFiles are the files the task changed.
	ModifiedFiles []string `json:"modified_files,omitempty"`
	// NewPatterns are conventions the task introduced.
	NewPatterns []string `json:"new_patterns,omitempty"`
	// PotentialGotchas are traps the task found for those who come after.
	PotentialGotchas []string `json:"potential_gotchas,omitempty"`
}

// Empty reports whether the artifact carries no knowledge.
func (a ContextArtifact) Empty() bool {
	return len(a.KeyDecisions) == 0 && len(a.ModifiedFiles) == 0 &&
		len(a.NewPatterns) == 0 && len(a.PotentialGotchas) == 0
}

// ToolOutcome is how a tool use ended. Its zero value, OutcomeUnset, is not an
// outcome: a report must say how its tool use ended.
type ToolOutcome int

// Outcomes of a tool use.
const (
	// OutcomeUnset is the zero value: a ToolUse reported with it is
	// refused by ReportToolUse, so that a report that forgot its outcome
	// never counts as a success.
	OutcomeUnset ToolOutcome = iota
	// OutcomeOK: the tool use happened and worked.
	OutcomeOK
	// OutcomeError: the tool use was made and failed.
	OutcomeError
	// OutcomeDenied: the host denied it (CheckToolUse), and it was not
	// made.
	OutcomeDenied
)

// String returns "ok", "error", "denied" or "unset".
func (o ToolOutcome) String() string {
	switch o {
	case OutcomeUnset:
		return "unset"
	case OutcomeOK:
		return "ok"
	case OutcomeError:
		return "error"
	case OutcomeDenied:
		return "denied"
	}
	return "unknown"
}

// ToolKind says what a tool did, and so what the paths of its ToolCall and
// ToolUse mean for the session's fingerprint (the files, directories and
// technologies the matcher places tasks by). Any kind takes a path that
// ends in "/" as a directory.
type ToolKind string

// Kinds of tool.
const (
	// KindRead: the tool read files. Its paths are files.
	KindRead ToolKind = "read"
	// KindWrite: the tool wrote or edited files. Its paths are files.
	KindWrite ToolKind = "write"
	// KindList: the tool listed directories. Its paths are directories.
	KindList ToolKind = "list"
	// KindSearch: the tool searched directories or files (a grep, a
	// glob). Its paths are the directories it searched. A search may also
	// name files (those it searched or matched): then every directory in
	// its paths ends in "/", and a path without the slash is a file. A
	// use none of whose paths ends in "/" names directories only.
	KindSearch ToolKind = "search"
	// KindExec: the tool ran a command. Its paths are the files the
	// command named (its arguments that are files), not the program. A
	// command that ran and failed (OutcomeError) still worked where it
	// names, and counts for the fingerprint as one that worked.
	KindExec ToolKind = "exec"
	// KindOther: a tool that is none of the above. Its paths are files.
	KindOther ToolKind = "other"
)

// Valid reports whether k is one of the kinds above or empty.
func (k ToolKind) Valid() bool {
	switch k {
	case "", KindRead, KindWrite, KindList, KindSearch, KindExec, KindOther:
		return true
	}
	return false
}

// ToolUse is one tool use an agent made. Reads, searches and listings
// count as much as writes: they are what makes a session warm.
type ToolUse struct {
	// CallID ties the report to the CheckToolUse that preceded it.
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool's name: "Read", "Edit", "Grep", "LS", "parse".
	Tool string `json:"tool"`
	// Kind says what the tool did and so what Paths are (see ToolKind).
	// Empty means unknown: the host then infers it from the tool's name
	// (LS, List, Glob, CD and Tree list directories; any other tool's
	// paths are files), which is kept for external sessions and agents
	// built before kinds existed.
	Kind ToolKind `json:"kind,omitempty"`
	// Paths the tool touched, relative to the session's workspace or
	// absolute.
	Paths []string `json:"paths,omitempty"`
	// Technologies the tool use involved, beyond those the host infers
	// from the extensions of the files in Paths (see TechnologyOf).
	Technologies []string `json:"technologies,omitempty"`
	// Outcome is how the tool use ended; it must be set.
	Outcome ToolOutcome `json:"outcome"`
	// Error says why a tool use failed or was denied.
	Error string `json:"error,omitempty"`
	// Duration is how long the tool use took.
	Duration time.Duration `json:"duration"`
	// Cost of the tool use, in the unit the run's budget uses.
	Cost float64 `json:"cost,omitempty"`
	// At is when the tool use happened; the SDK sets it when zero.
	At time.Time `json:"at"`
}

// ToolCall is a tool use the agent is about to make.
type ToolCall struct {
	// CallID identifies the call; the ToolUse that reports it carries the
	// same one. NewID("call") makes one.
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool's name, as in ToolUse.
	Tool string `json:"tool"`
	// Kind is as in ToolUse.
	Kind ToolKind `json:"kind,omitempty"`
	// Paths the tool will touch, as in ToolUse.
	Paths []string `json:"paths,omitempty"`
	// Input is the tool's input, as a JSON object. An agent sets Input,
	// or RawInput if it has the JSON already.
	Input map[string]any `json:"input,omitempty"`
	// RawInput is the input as JSON. A host receives only RawInput, and
	// decodes it with DecodeInput when it needs it: most questions are
	// answered without looking at the input.
	RawInput json.RawMessage `json:"-"`
}

// DecodeInput fills Input from RawInput, unless Input is set already.
func (c *ToolCall) DecodeInput() error {
	if c.Input != nil || len(c.RawInput) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.RawInput, &c.Input); err != nil {
		return fmt.Errorf("tool call %q: input is not a JSON object: %w", c.Tool, err)
	}
	return nil
}

// Verdict answers a ToolCall. When Allow is false, Reason says why and
// Guard names the rule that denied it.
type Verdict struct {
	// Allow is true when the agent may make the call.
	Allow bool `json:"allow"`
	// Reason says why the call was denied.
	Reason string `json:"reason,omitempty"`
	// Guard names the guard that denied it.
	Guard string `json:"guard,omitempty"`
}

// Progress is a progress report.
type Progress struct {
	// Fraction of the task done, in [0, 1].
	Fraction float64 `json:"fraction"`
	// Message says what the task is doing.
	Message string `json:"message,omitempty"`
	// Cost is the task's cost so far.
	Cost float64 `json:"cost,omitempty"`
}

// Errors callers can test for with errors.Is.
var (
	// ErrStateNotSupported is returned by ExportState and ImportState of a
	// remote agent that does not implement StateExporter.
	ErrStateNotSupported = errors.New("agent does not export session state")

	// ErrPermanent marks a task failure that retrying will not fix (bad
	// input, a refused request). Wrap an error with Permanent to return it.
	ErrPermanent = errors.New("permanent failure")

	// ErrConnectionLost is returned by a remote agent's methods when the
	// plugin process went away in the middle of a call.
	ErrConnectionLost = errors.New("lost the connection to the agent plugin")

	// ErrAgentPanicked is returned by a remote agent's methods when the
	// author's code panicked. The plugin survives, but the session's state
	// may be broken, so hosts retire it.
	ErrAgentPanicked = errors.New("agent panicked")

	// ErrNotAttached is returned by Callbacks methods of a plugin that no host
	// has attached to. It indicates a host that does not follow the
	// protocol.
	ErrNotAttached = errors.New("no host attached to this agent")

	// ErrDenied is wrapped by the DeniedError a Tools method returns when
	// the host denied the tool use.
	ErrDenied = errors.New("tool use denied")

	// ErrNotOwner is wrapped by the error of a state read or write outside
	// the sections the run's config lets the agent read or write. Hosts
	// treat a task that fails with it as failed for good: retrying the
	// same code writes the same section again.
	ErrNotOwner = errors.New("section not owned by the agent")
)

// Permanent marks err as a failure that should not be retried.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }
