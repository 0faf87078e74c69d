package hearth

import (
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Task is work for one agent, as an orchestrator submits it.
type Task struct {
	// Agent is the configured agent to run the task.
	Agent string `json:"agent"`
	// ID identifies the task; one is generated when empty.
	ID       string            `json:"id,omitempty"`
	Name     string            `json:"name,omitempty"`
	Prompt   string            `json:"prompt"`
	Hints    sdk.Hints         `json:"hints"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Run, IdempotencyKey and Attempt are set by the host for the tasks
	// of a run; a task submitted on its own leaves them empty.
	Run            string `json:"run,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Attempt        int    `json:"attempt,omitempty"`
	// Upstream, Context and Feedback go to the agent beside the prompt
	// (sdk.Task): what the task's ancestors in its run learned, nearest
	// first, that rendered as text, and why the task was sent back. The
	// host sets them for the tasks of a run.
	Upstream []sdk.Upstream `json:"upstream,omitempty"`
	Context  string         `json:"context,omitempty"`
	Feedback string         `json:"feedback,omitempty"`
	// RequireChecks fails the task when its agent reports a tool use that
	// a pre_tool_use guard covers without having asked about it
	// (CheckToolUse); otherwise such a use is only flagged
	// (EventToolUnchecked). The host sets it for the tasks of a pipeline
	// that requires checks; an agent block's require_checks applies to
	// every task of the agent either way.
	RequireChecks bool `json:"require_checks,omitempty"`
}

// Outcome is what a task that ran came to: its result, the context
// artifact the agent left, where it was placed and why, and the quality
// gate that fired on it, if any.
type Outcome struct {
	TaskID   string              `json:"task_id"`
	Agent    string              `json:"agent"`
	Session  string              `json:"session"`
	Decision Decision            `json:"decision"`
	Result   sdk.Result          `json:"result"`
	Artifact sdk.ContextArtifact `json:"artifact"`
	// ToolUses is how many tool uses the agent reported for the task.
	ToolUses uint64 `json:"tool_uses"`
	// Gate is the task_result guard that fired on the result, if any: the
	// result stands, but the guard asks for a retry or for the work to go
	// back to an earlier task (runs act on it).
	Gate *Gate `json:"gate,omitempty"`
	// Duration is the wall time from submission to result.
	Duration time.Duration `json:"duration"`
	// TraceID is the OpenTelemetry trace the task's spans belong to (32
	// hex digits), empty when the host does not trace: where an operator
	// follows it in their trace backend.
	TraceID string `json:"trace_id,omitempty"`
}

// GateAction is what a quality gate asks for.
type GateAction string

// Gate actions; the same words as the task_result guards' actions.
const (
	// GateRetry runs the gated task again with the gate's feedback.
	GateRetry GateAction = "retry"
	// GateSendBack sends the work back to an earlier task (Gate.To), and
	// everything after it is done again.
	GateSendBack GateAction = "send_back"
)

// Gate is a task_result guard that fired on a task's result: the work
// should be retried, or sent back to an earlier task, with Feedback.
type Gate struct {
	Guard    string     `json:"guard"`
	Action   GateAction `json:"action"`
	Feedback string     `json:"feedback"`
	// To is the earlier task a send_back gate returns the work to.
	To       string `json:"to,omitempty"`
	MaxLoops int    `json:"max_loops"`
}
