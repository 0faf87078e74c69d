package conformance

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
	// Call is the question, with its input decoded.
	Call sdk.ToolCall
	// Verdict is the Policy's answer.
	Verdict sdk.Verdict
}

// Entry is one question or report of a task, in the order the Recorder
// received them: exactly one of Call and Use is set.
type Entry struct {
	// Call is a pre-tool-use question and its answer.
	Call *Call
	// Use is a tool-use report.
	Use *sdk.ToolUse
}

// Recorder is a host that records everything agents report, per task, and
// answers pre-tool-use questions with its Policy. It is safe for concurrent
// use.
type Recorder struct {
	policy Policy

	mu       sync.Mutex
	log      map[string][]Entry
	progress map[string][]sdk.Progress
	syncs    map[string]int
	run      *Run
	// hold, when set, is called with each question before it is answered,
	// outside the lock: the cancellation check holds a question with it
	// until the agent gives it up.
	hold func(ctx context.Context, task string) error
}

// NewRecorder returns a Recorder that answers with p, or allows every tool
// use when p is nil.
func NewRecorder(p Policy) *Recorder {
	if p == nil {
		p = AllowAll
	}
	return &Recorder{
		policy:   p,
		log:      make(map[string][]Entry),
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

// For returns the Callbacks of one task outside a run, to pass to Agent.Run.
// It is not RunCallbacks.
func (r *Recorder) For(taskID string) sdk.Callbacks { return &taskCallbacks{r: r, task: taskID} }

// ForRun returns the RunCallbacks of one task of a run: the run set with
// SetRun, or an empty one the Recorder makes.
func (r *Recorder) ForRun(taskID string) sdk.RunCallbacks {
	return &runTaskCallbacks{&taskCallbacks{r: r, task: taskID}}
}

// ForTask returns ForRun(t.ID) for a task with a Run, else For(t.ID), as
// a hearth host does.
func (r *Recorder) ForTask(t sdk.Task) sdk.Callbacks {
	if t.Run != "" {
		return r.ForRun(t.ID)
	}
	return r.For(t.ID)
}

// Log returns a task's questions and reports in the order they arrived.
func (r *Recorder) Log(taskID string) []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log[taskID])
}

// ToolUses returns the tool uses reported for a task, in arrival order.
func (r *Recorder) ToolUses(taskID string) []sdk.ToolUse {
	var out []sdk.ToolUse
	for _, e := range r.Log(taskID) {
		if e.Use != nil {
			out = append(out, *e.Use)
		}
	}
	return out
}

// Calls returns the pre-tool-use questions of a task and their verdicts.
func (r *Recorder) Calls(taskID string) []Call {
	var out []Call
	for _, e := range r.Log(taskID) {
		if e.Call != nil {
			out = append(out, *e.Call)
		}
	}
	return out
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

type taskCallbacks struct {
	r    *Recorder
	task string
}

func (cb *taskCallbacks) ReportToolUse(_ context.Context, u sdk.ToolUse) error {
	cb.r.mu.Lock()
	cb.r.log[cb.task] = append(cb.r.log[cb.task], Entry{Use: &u})
	cb.r.mu.Unlock()
	return nil
}

func (cb *taskCallbacks) CheckToolUse(ctx context.Context, c sdk.ToolCall) (sdk.Verdict, error) {
	// Recorded calls carry their decoded input, for tests to inspect.
	if err := c.DecodeInput(); err != nil {
		return sdk.Verdict{}, err
	}
	cb.r.mu.Lock()
	hold := cb.r.hold
	cb.r.mu.Unlock()
	if hold != nil {
		if err := hold(ctx, cb.task); err != nil {
			return sdk.Verdict{}, err
		}
	}
	cb.r.mu.Lock()
	defer cb.r.mu.Unlock()
	v := cb.r.policy(cb.task, c)
	cb.r.log[cb.task] = append(cb.r.log[cb.task], Entry{Call: &Call{Call: c, Verdict: v}})
	return v, nil
}

func (cb *taskCallbacks) ReportProgress(_ context.Context, p sdk.Progress) error {
	cb.r.mu.Lock()
	cb.r.progress[cb.task] = append(cb.r.progress[cb.task], p)
	cb.r.mu.Unlock()
	return nil
}

func (cb *taskCallbacks) Sync(context.Context) error {
	cb.r.mu.Lock()
	cb.r.syncs[cb.task]++
	cb.r.mu.Unlock()
	return nil
}

func (cb *taskCallbacks) Logger() hclog.Logger { return hclog.NewNullLogger() }

// runTaskCallbacks are the Callbacks of a task of a run.
type runTaskCallbacks struct{ *taskCallbacks }

var (
	_ sdk.Callbacks    = (*taskCallbacks)(nil)
	_ sdk.Syncer       = (*taskCallbacks)(nil)
	_ sdk.RunCallbacks = (*runTaskCallbacks)(nil)
)
