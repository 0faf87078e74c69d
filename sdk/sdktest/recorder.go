package sdktest

import (
	"context"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/sdk"
)

// Policy decides a pre-tool-use question for the task taskID.
type Policy func(taskID string, c sdk.ToolCall) sdk.Verdict

// AllowAll is the Policy that allows every tool use.
func AllowAll(string, sdk.ToolCall) sdk.Verdict { return sdk.Verdict{Allow: true} }

// DenyAll is the Policy that denies every tool use, as a guard would.
func DenyAll(_ string, c sdk.ToolCall) sdk.Verdict {
	return sdk.Verdict{Allow: false, Guard: "sdktest-deny-all", Reason: "sdktest denies every tool use: " + c.Tool}
}

// Call is one pre-tool-use question and the answer it got.
type Call struct {
	Call    sdk.ToolCall
	Verdict sdk.Verdict
}

// Recorder is a host that records everything agents report, per task, and
// answers pre-tool-use questions with its Policy. It is safe for concurrent
// use.
type Recorder struct {
	policy Policy

	mu       sync.Mutex
	toolUses map[string][]sdk.ToolUse
	calls    map[string][]Call
	progress map[string][]sdk.Progress
	syncs    map[string]int
	run      *Run
}

// NewRecorder returns a Recorder that answers with p, or allows every tool
// use when p is nil.
func NewRecorder(p Policy) *Recorder {
	if p == nil {
		p = AllowAll
	}
	return &Recorder{
		policy:   p,
		toolUses: make(map[string][]sdk.ToolUse),
		calls:    make(map[string][]Call),
		progress: make(map[string][]sdk.Progress),
		syncs:    make(map[string]int),
	}
}

// SetPolicy changes how later questions are answered.
func (r *Recorder) SetPolicy(p Policy) {
	if p == nil {
		p = AllowAll
	}
	r.mu.Lock()
	r.policy = p
	r.mu.Unlock()
}

// For returns the Host of one task, to pass to Agent.Run.
func (r *Recorder) For(taskID string) sdk.Host { return &taskHost{r: r, task: taskID} }

// ToolUses returns the tool uses reported for a task, in arrival order.
func (r *Recorder) ToolUses(taskID string) []sdk.ToolUse {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.toolUses[taskID])
}

// Calls returns the pre-tool-use questions of a task and their verdicts.
func (r *Recorder) Calls(taskID string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls[taskID])
}

// Progress returns the progress reports of a task.
func (r *Recorder) Progress(taskID string) []sdk.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress[taskID])
}

// Syncs returns how many times a task's tool-use stream asked for its
// reports to be made durable: once per stream, if the agent reported any.
func (r *Recorder) Syncs(taskID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs[taskID]
}

type taskHost struct {
	r    *Recorder
	task string
}

func (h *taskHost) ReportToolUse(_ context.Context, u sdk.ToolUse) error {
	h.r.mu.Lock()
	h.r.toolUses[h.task] = append(h.r.toolUses[h.task], u)
	h.r.mu.Unlock()
	return nil
}

func (h *taskHost) CheckToolUse(_ context.Context, c sdk.ToolCall) (sdk.Verdict, error) {
	// Recorded calls carry their decoded input, for tests to inspect.
	if err := c.DecodeInput(); err != nil {
		return sdk.Verdict{}, err
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	v := h.r.policy(h.task, c)
	h.r.calls[h.task] = append(h.r.calls[h.task], Call{Call: c, Verdict: v})
	return v, nil
}

func (h *taskHost) ReportProgress(_ context.Context, p sdk.Progress) error {
	h.r.mu.Lock()
	h.r.progress[h.task] = append(h.r.progress[h.task], p)
	h.r.mu.Unlock()
	return nil
}

func (h *taskHost) Sync(context.Context) error {
	h.r.mu.Lock()
	h.r.syncs[h.task]++
	h.r.mu.Unlock()
	return nil
}

func (h *taskHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

var (
	_ sdk.Host   = (*taskHost)(nil)
	_ sdk.Syncer = (*taskHost)(nil)
)
