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
// passes it to Serve; the host receives an Agent that forwards each call to
// the plugin process.
//
// One value serves one session. Run may be called concurrently up to the
// capacity the agent declares in Info; Describe and Summarize may be called
// at any time.
type Agent interface {
	// Describe says who the agent is. The host calls it once per session,
	// right after the plugin starts.
	Describe(ctx context.Context) (Info, error)

	// Run carries out one task. While it runs, the agent reports through h:
	// each tool use it made, a question before each tool use that a guard
	// may deny, and progress. Run must return promptly once ctx is done.
	Run(ctx context.Context, t Task, h Host) (Result, error)

	// Summarize returns what the task taskID taught the agent, for the
	// prompts of the tasks that depend on it. The host calls it after Run
	// returned successfully. An agent with nothing to pass on returns a
	// zero ContextArtifact.
	Summarize(ctx context.Context, taskID string) (ContextArtifact, error)
}

// StateExporter is implemented by agents whose session can be rehydrated:
// the host exports the state before it retires a session and imports it
// into a fresh process when the matcher picks the dormant session again.
// The bytes are opaque to hearth.
type StateExporter interface {
	ExportState(ctx context.Context) ([]byte, error)
	ImportState(ctx context.Context, state []byte) error
}

// Host is the host as an agent sees it during one task. Every method is
// safe for concurrent use.
type Host interface {
	// ReportToolUse records a tool use the agent made: the on-tool-use hook
	// that keeps the session's context current. Reports travel on one
	// stream per task; ReportToolUse returns once the report is sent, and
	// the task's result is not returned to the host until every report has
	// been acknowledged as durable.
	ReportToolUse(ctx context.Context, u ToolUse) error

	// CheckToolUse is the pre-tool-use hook: the agent asks before it uses
	// a tool, and must not make the call when the verdict denies it.
	CheckToolUse(ctx context.Context, c ToolCall) (Verdict, error)

	// ReportProgress tells the host how far the task has come and what it
	// has cost so far.
	ReportProgress(ctx context.Context, p Progress) error

	// Logger returns a logger whose lines reach the host's log, named by
	// agent and session.
	Logger() hclog.Logger

	// The methods below reach the run the task belongs to (Task.Run). A
	// task outside a run gets ErrNoRun from each.

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
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Syncer is an optional upgrade of a Host that the host side implements:
// when a task's tool-use stream ends, the SDK calls Sync before it
// acknowledges the stream, so an acknowledged report is durable.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Info describes an agent.
type Info struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Technologies the agent handles ("go", "python"); informational.
	Technologies []string `json:"technologies,omitempty"`
	// Capacity is how many tasks one session runs at once. Zero means 1.
	Capacity int `json:"capacity"`
	// ExportsState is set by the SDK when the agent implements
	// StateExporter; authors leave it alone.
	ExportsState bool `json:"exports_state"`
}

// Hints tell the host, and the matcher, what a task will touch. Paths are
// relative to the session's workspace.
type Hints struct {
	Files        []string `json:"files,omitempty"`
	Directories  []string `json:"directories,omitempty"`
	Technologies []string `json:"technologies,omitempty"`
}

// Task is one unit of work.
type Task struct {
	// ID is unique per task; the host sets it.
	ID string `json:"id"`
	// Run is the ID of the run the task belongs to, empty for a task
	// submitted on its own.
	Run string `json:"run,omitempty"`
	// Name is the task's name in its pipeline ("research", "script").
	Name    string `json:"name,omitempty"`
	Session string `json:"session,omitempty"`
	Prompt  string `json:"prompt"`
	Hints   Hints  `json:"hints"`
	// IdempotencyKey is the same on every attempt of the task: delivery is
	// at least once, so an agent with side effects outside hearth uses it
	// to do them once.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Attempt is 1 on the first try and grows with each retry.
	Attempt  int               `json:"attempt"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Result is what a task produced.
type Result struct {
	Output string `json:"output"`
	// Metrics are numbers the host's quality gates can check, such as
	// "quality" (0..1) or "word_count".
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Cost of the task, in the unit the run's budget uses.
	Cost float64 `json:"cost"`
	// ToolUses is the number of tool-use reports the host acknowledged.
	// The SDK fills it in.
	ToolUses uint64 `json:"tool_uses"`
}

// ContextArtifact is what a finished task learned, chained into the
// prompts of the tasks that depend on it.
type ContextArtifact struct {
	KeyDecisions     []string `json:"key_decisions,omitempty"`
	ModifiedFiles    []string `json:"modified_files,omitempty"`
	NewPatterns      []string `json:"new_patterns,omitempty"`
	PotentialGotchas []string `json:"potential_gotchas,omitempty"`
	// SourceSession and CreatedAt are filled in by the SDK when left zero.
	SourceSession string    `json:"source_session,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
}

// Empty reports whether the artifact carries no knowledge.
func (a ContextArtifact) Empty() bool {
	return len(a.KeyDecisions) == 0 && len(a.ModifiedFiles) == 0 &&
		len(a.NewPatterns) == 0 && len(a.PotentialGotchas) == 0
}

// Outcome is how a tool use ended.
type Outcome int

// Outcomes of a tool use.
const (
	OutcomeOK Outcome = iota
	OutcomeError
	OutcomeDenied
)

func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeError:
		return "error"
	case OutcomeDenied:
		return "denied"
	}
	return "unknown"
}

// ToolUse is one tool use an agent made. Reads, searches and listings
// count as much as writes: they are what makes a session warm.
type ToolUse struct {
	// CallID ties the report to the CheckToolUse that preceded it, if any.
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool's name: "Read", "Edit", "Grep", "LS", "parse".
	Tool         string        `json:"tool"`
	Paths        []string      `json:"paths,omitempty"`
	Technologies []string      `json:"technologies,omitempty"`
	Outcome      Outcome       `json:"outcome"`
	Error        string        `json:"error,omitempty"`
	Duration     time.Duration `json:"duration"`
	Cost         float64       `json:"cost,omitempty"`
	// At is when the tool use happened; the SDK sets it when zero.
	At time.Time `json:"at"`
}

// ToolCall is a tool use the agent is about to make.
type ToolCall struct {
	CallID string   `json:"call_id,omitempty"`
	Tool   string   `json:"tool"`
	Paths  []string `json:"paths,omitempty"`
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
	Allow  bool   `json:"allow"`
	Reason string `json:"reason,omitempty"`
	Guard  string `json:"guard,omitempty"`
}

// Progress is a progress report: Fraction in [0, 1], a message, and the
// task's cost so far.
type Progress struct {
	Fraction float64 `json:"fraction"`
	Message  string  `json:"message,omitempty"`
	Cost     float64 `json:"cost,omitempty"`
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

	// ErrNotAttached is returned by Host methods of a plugin that no host
	// has attached to. It indicates a host that does not follow the
	// protocol.
	ErrNotAttached = errors.New("no host attached to this agent")

	// ErrNoRun is returned by the run methods of a Host (State, SetState,
	// Checkpoint, Files, DoneChunks, MarkChunk) for a task that is not
	// part of a run.
	ErrNoRun = errors.New("the task is not part of a run")

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
