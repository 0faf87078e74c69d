package hearth

import (
	"slices"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// EventKind names what happened.
type EventKind string

// Kinds of events.
const (
	EventSessionSpawned    EventKind = "session.spawned"
	EventSessionRehydrated EventKind = "session.rehydrated"
	EventSessionRetired    EventKind = "session.retired"
	EventSessionLost       EventKind = "session.lost"
	// EventSessionAttached: an external session reported for the first
	// time, or again after it went dormant.
	EventSessionAttached EventKind = "session.attached"
	EventTaskStarted     EventKind = "task.started"
	EventTaskProgress    EventKind = "task.progress"
	EventTaskSucceeded   EventKind = "task.succeeded"
	EventTaskFailed      EventKind = "task.failed"
	EventToolUsed        EventKind = "tool.used"
	// EventWriteFailed: the write of another event failed, so that event
	// did not happen as far as the store knows. Subscribers get this in
	// its place; its message names the event that was lost and why.
	EventWriteFailed EventKind = "write.failed"
	// EventToolUnchecked: an agent reported a tool use that a
	// pre_tool_use guard covers without asking the host first; the
	// message names the use and the guard.
	EventToolUnchecked EventKind = "tool.unchecked"
	// EventToolDefied: an agent reported a tool use the host had denied
	// with an outcome other than denied; the message names the use and
	// the guard. Its task fails.
	EventToolDefied EventKind = "tool.defied"
	EventDecision   EventKind = "decision"
	// EventGuardFired: a guard denied, blocked, vetoed or gated something;
	// Guard, Hook, Action and Message say which and why.
	EventGuardFired EventKind = "guard.fired"
	// EventConfigReloaded: a new config is in force.
	EventConfigReloaded EventKind = "config.reloaded"

	// Events of runs, in the run's own stream. Task names a task of the
	// run; From and To are the two sides of a transition.
	EventRunCreated EventKind = "run.created"
	// EventRunStatus: the run's status changed (From, To); Message says
	// why.
	EventRunStatus EventKind = "run.status"
	// EventRunTask: one of its tasks changed status (From, To).
	EventRunTask EventKind = "run.task"
	// EventRunStage: the run entered a stage (From, To).
	EventRunStage EventKind = "run.stage"
	// EventRunCheckpoint: a checkpoint was written; Message has its number
	// and label.
	EventRunCheckpoint EventKind = "run.checkpoint"
	// EventRunGate: a quality gate fired on a task's result; Guard and
	// Action say which and what it did.
	EventRunGate EventKind = "run.gate"
	// EventRunState: an agent wrote a section of the state document.
	EventRunState EventKind = "run.state"
	// EventRunContext: a task's prompt was given its ancestors' context.
	EventRunContext EventKind = "run.context"
	// EventRunRevisit: a task was revisited, and what came after it
	// treated by impact.
	EventRunRevisit EventKind = "run.revisit"
	// EventRunForked: the run was forked from another run's checkpoint.
	EventRunForked EventKind = "run.forked"
	// EventRunRepaired: resume repaired what validation found.
	EventRunRepaired EventKind = "run.repaired"
	// EventRunAbandoned: retention flagged the idle run abandoned.
	EventRunAbandoned EventKind = "run.abandoned"
	// EventRunDeleted: retention deleted the run; its final event.
	EventRunDeleted EventKind = "run.deleted"
)

// Event is a record of something that happened in the host.
type Event struct {
	// Seq orders events; 0 until the event is stored.
	Seq     uint64    `json:"seq,omitempty"`
	Time    time.Time `json:"time"`
	Kind    EventKind `json:"kind"`
	Agent   string    `json:"agent,omitempty"`
	Session string    `json:"session,omitempty"`
	Task    string    `json:"task,omitempty"`
	// Run is the run the event belongs to, if any.
	Run string `json:"run,omitempty"`
	// Message is a one-line human description.
	Message string `json:"message,omitempty"`
	// Err is the error text of failures.
	Err string `json:"error,omitempty"`
	// PID is the plugin process of session events.
	PID int `json:"pid,omitempty"`
	// Fraction is the progress of task.progress events.
	Fraction float64 `json:"fraction,omitempty"`
	// ToolUse is the tool use of tool.used events.
	ToolUse *sdk.ToolUse `json:"tool_use,omitempty"`
	// Decision is the placement of decision events.
	Decision *Decision `json:"decision,omitempty"`
	// Guard, Hook and Action describe guard.fired events.
	Guard  string `json:"guard,omitempty"`
	Hook   string `json:"hook,omitempty"`
	Action string `json:"action,omitempty"`
	// From and To are the two sides of a transition.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Cost is what a run task's attempt, or a task, cost.
	Cost float64 `json:"cost,omitempty"`
	// Tokens are what a finished task's model calls used, when its
	// result reports them (task.succeeded, task.failed).
	Tokens *Tokens `json:"tokens,omitempty"`
	// Duration is how long a finished task took (task.succeeded,
	// task.failed).
	Duration time.Duration `json:"duration,omitempty"`
}

// EventFilter says which events a subscription receives. Empty fields
// match everything, but for tool uses: they outnumber every other kind
// (a busy host reports thousands a second), so they come only to a
// subscriber that asks for them, with ToolUses or by naming
// EventToolUsed in Kinds.
type EventFilter struct {
	// Run keeps the events of one run: its transitions, checkpoints and
	// gates, and its tasks' placements, progress and results.
	Run string
	// Session keeps the events of one session.
	Session string
	// Kinds keeps the events of these kinds.
	Kinds []EventKind
	// ToolUses adds tool-use events to what the other fields let through.
	ToolUses bool
	// Buffer is how many events may wait for the reader before it misses
	// some; 0 is the implementation's default.
	Buffer int
}

// Match reports whether e passes f.
func (f EventFilter) Match(e Event) bool {
	if f.Run != "" && e.Run != f.Run {
		return false
	}
	if f.Session != "" && e.Session != f.Session {
		return false
	}
	if e.Kind == EventToolUsed && f.ToolUses {
		return true
	}
	if len(f.Kinds) > 0 {
		return slices.Contains(f.Kinds, e.Kind)
	}
	return e.Kind != EventToolUsed
}

// WantsToolUses reports whether f lets any tool-use event through: a
// host need not even build tool-use events for subscribers that would
// drop them.
func (f EventFilter) WantsToolUses() bool {
	return f.ToolUses || slices.Contains(f.Kinds, EventToolUsed)
}
