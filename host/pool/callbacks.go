package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// Tool-use events reach the store in batches: one write per batch shares
// its commit with whatever else is waiting, where a write per event made
// groups of about 50 and halved throughput. A batch goes when it is full,
// when its oldest event has waited flushAge by the time another arrives,
// and always before the task's stream is acknowledged: only then does the
// agent learn that its reports are durable.
const (
	flushEvents = 256
	flushAge    = 50 * time.Millisecond
)

// Run is the run a task belongs to, as the task's calls reach it: the
// run engine (package host/runs) implements it. Each write is durable
// when its method returns.
type Run interface {
	// State returns a section of the run's state document, or the whole
	// of what agent may read when section is "".
	State(ctx context.Context, agent, section string) (json.RawMessage, error)
	// SetState replaces a section of the state document for agent, in
	// task.
	SetState(ctx context.Context, agent, task, section string, value any) error
	// Checkpoint writes a checkpoint asked for by task.
	Checkpoint(ctx context.Context, task, label string) (uint64, error)
	Files(ctx context.Context) ([]sdk.File, error)
	DoneChunks(ctx context.Context, file string) ([]int, error)
	MarkChunk(ctx context.Context, file string, chunk int) error
	// Progress notes the cost a running attempt (host task ID) reported.
	Progress(taskID string, cost float64)
	// Succeeded takes the task.succeeded event of an attempt of the
	// run's (e.Task is its host task ID), which the pool does not emit
	// itself: the run writes it with the record of the success, so that
	// the log never says a task succeeded that the run does not record.
	Succeeded(e hearth.Event)
	// Guard is the run as guards see it.
	Guard() guard.Run
}

// callbacks is the host side of one task: what the agent's reports and
// questions reach (the sdk.Callbacks a task is given).
type callbacks struct {
	s    *session
	task string
	// t is the task, as submitted: pre-tool-use guards see it.
	t hearth.Task
	// run is the run the task belongs to, nil for a task on its own: what
	// guards see of it.
	run Run
	// span is the task's span on the session (invoke_agent): the parent
	// of its tool uses' spans, and of its questions' when the agent sends
	// no span context of its own.
	span trace.SpanContext
	// spanCtx holds span, and taskAttr names the task: made once, not
	// for each of the task's tool calls.
	spanCtx  context.Context
	taskAttr attribute.KeyValue
	// reported counts the task's tool-use reports. It is read when Run
	// returns, which a plugin that died does without waiting for the
	// reports still on their way.
	reported atomic.Uint64
	// buf holds tool-use events not yet handed to the store.
	buf      []hearth.Event
	bufSince time.Time
	// pending are the batches handed to the store since the last Sync.
	// Each is waited for: a failed early batch must not hide behind a
	// later one that committed.
	pending []Pending

	// checked holds the calls the agent asked about (CheckToolUse runs
	// beside the report stream), by call ID and by tool and paths, so
	// that a report is matched to its question either way; unchecked is
	// the first guarded use reported without one, when checks are
	// required.
	mu        sync.Mutex
	checked   map[string]bool
	unchecked error
	// denied holds the calls the host denied, by call ID and by tool and
	// paths (see deniedKeys), with the guard's verdict; defied is the
	// first report of one as done.
	denied map[string]sdk.Verdict
	defied error
}

// deniedKeys are the keys a denied call and a later report of it are
// matched by: its call ID, and its tool with its paths cleaned and
// sorted. The kind, the order of the paths and their spelling
// ("app/./.env") are the agent's to choose, so they do not count: an
// agent that was told no cannot make its report look like another
// call by changing them.
func deniedKeys(id, tool string, paths []string) []string {
	ps := make([]string, len(paths))
	for i, p := range paths {
		ps[i] = path.Clean(p)
	}
	slices.Sort(ps)
	keys := []string{"t\x00" + tool + "\x00" + strings.Join(ps, "\x00")}
	if id != "" {
		keys = append(keys, "i\x00"+id)
	}
	return keys
}

// defiance is the verdict of the denied call that u reports as done, if
// it does: a use reported with any outcome but denied.
func (c *callbacks) defiance(u sdk.ToolUse) (sdk.Verdict, bool) {
	if u.Outcome == sdk.OutcomeDenied {
		return sdk.Verdict{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range deniedKeys(u.CallID, u.Tool, u.Paths) {
		if v, ok := c.denied[k]; ok {
			return v, true
		}
	}
	return sdk.Verdict{}, false
}

// defiedErr is the error that fails the task for a denied use reported
// done, or nil.
func (c *callbacks) defiedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.defied
}

// callKeys are the keys a call or a use is matched by: its call ID, if it
// has one, and its tool and paths.
func callKeys(id, tool string, kind sdk.ToolKind, paths []string) []string {
	keys := []string{"t\x00" + tool + "\x00" + string(kind) + "\x00" + strings.Join(paths, "\x00")}
	if id != "" {
		keys = append(keys, "i\x00"+id)
	}
	return keys
}

// wasChecked reports whether the agent asked about a tool use before
// reporting it. A denied use was asked about by definition.
func (c *callbacks) wasChecked(u sdk.ToolUse) bool {
	if u.Outcome == sdk.OutcomeDenied {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range callKeys(u.CallID, u.Tool, u.Kind, u.Paths) {
		if c.checked[k] {
			return true
		}
	}
	return false
}

// uncheckedErr is the error that fails the task for an unchecked guarded
// tool use, or nil.
func (c *callbacks) uncheckedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unchecked
}

// reportToolUse updates the session's fingerprint and the matcher's index
// at once, and logs the tool use (ReportToolUse is it, traced). The SDK
// calls it from the task's one stream, so calls for a task never overlap.
func (c *callbacks) reportToolUse(u sdk.ToolUse) error {
	s, p := c.s, c.s.pool
	now := p.now()
	u.Cost = reportedCost(u.Cost)
	if u.At.IsZero() {
		u.At = now
	}
	c.reported.Add(1)
	if v, ok := c.defiance(u); ok {
		err := s.defiedUse(u, v, c.t)
		c.mu.Lock()
		if c.defied == nil {
			c.defied = err
		}
		c.mu.Unlock()
	} else if s.covered(c.t) && !c.wasChecked(u) {
		if err := s.uncheckedUse(u, c.t, c.run); err != nil {
			c.mu.Lock()
			if c.unchecked == nil {
				c.unchecked = err
			}
			c.mu.Unlock()
		}
	}
	p.mu.Lock()
	p.observeLocked(s, u)
	p.mu.Unlock()
	if len(c.buf) == 0 {
		c.bufSince = now
	}
	c.buf = append(c.buf, hearth.Event{Time: u.At, Kind: hearth.EventToolUsed, Agent: p.cfg().Agent, Session: s.id, Task: c.task, ToolUse: &u})
	p.d.Events.ToolUse(&c.buf[len(c.buf)-1])
	if len(c.buf) >= flushEvents || now.Sub(c.bufSince) >= flushAge {
		c.flush()
	}
	return nil
}

// flush hands the buffered events to the store.
func (c *callbacks) flush() {
	if len(c.buf) == 0 {
		return
	}
	p := c.s.pool
	last, pend := p.d.Store.AppendBatch(c.buf)
	c.pending = append(c.pending, pend)
	// Sequence numbers are assigned by now. A snapshot that includes
	// these events in its fingerprint covers them; one taken a moment
	// earlier replays them on restart, which only touches what is there.
	p.mu.Lock()
	c.s.lastSeq = max(c.s.lastSeq, last)
	p.mu.Unlock()
	// AppendBatch encoded the events: the buffer is free to refill.
	clear(c.buf)
	c.buf = c.buf[:0]
}

// Sync returns once every tool use of the task is durable: the SDK calls
// it before it acknowledges the task's stream.
func (c *callbacks) Sync(ctx context.Context) error {
	c.flush()
	pending := c.pending
	c.pending = nil
	for _, pd := range pending {
		if err := pd.Wait(ctx); err != nil {
			return fmt.Errorf("record tool uses of task %s: %w", c.task, err)
		}
	}
	return nil
}

// checkToolUse runs the pre_tool_use guards, and notes that the call was
// asked about (CheckToolUse is it, traced).
func (c *callbacks) checkToolUse(call sdk.ToolCall) (sdk.Verdict, error) {
	c.mu.Lock()
	if c.checked == nil {
		c.checked = make(map[string]bool)
	}
	for _, k := range callKeys(call.CallID, call.Tool, call.Kind, call.Paths) {
		c.checked[k] = true
	}
	c.mu.Unlock()
	v, err := c.s.checkToolUse(call, c.t, c.run)
	if err == nil {
		c.mu.Lock()
		if c.denied == nil {
			c.denied = make(map[string]sdk.Verdict)
		}
		for i, k := range deniedKeys(call.CallID, call.Tool, call.Paths) {
			switch {
			case !v.Allow:
				c.denied[k] = v
			case i == 0:
				// Asked again and allowed now (a guard that reads the
				// time, the session, the run): the same tool and paths
				// may be reported done.
				delete(c.denied, k)
			}
		}
		c.mu.Unlock()
	}
	return v, err
}

func (c *callbacks) ReportProgress(_ context.Context, pr sdk.Progress) error {
	pr.Fraction, pr.Cost = reportedFraction(pr.Fraction), reportedCost(pr.Cost)
	c.s.logger.Debug("progress", "task", c.task, "fraction", pr.Fraction, "message", pr.Message)
	if c.run != nil {
		c.run.Progress(c.task, pr.Cost)
	}
	c.s.pool.emit(hearth.Event{Kind: hearth.EventTaskProgress, Agent: c.agent(), Session: c.s.id, Task: c.task, Run: c.t.Run,
		Fraction: pr.Fraction, Message: pr.Message, Cost: pr.Cost})
	return nil
}

func (c *callbacks) Logger() hclog.Logger { return c.s.logger.With("task", c.task) }

func (c *callbacks) agent() string { return c.s.pool.cfg().Agent }

// runCallbacks are the calls of a task of a run: with the run's methods
// (sdk.RunCallbacks), which reach the run.
type runCallbacks struct {
	*callbacks
	r Run
}

func (c runCallbacks) State(ctx context.Context, section string) (json.RawMessage, error) {
	return c.r.State(ctx, c.agent(), section)
}

func (c runCallbacks) SetState(ctx context.Context, section string, value any) error {
	return c.r.SetState(ctx, c.agent(), c.t.Name, section, value)
}

func (c runCallbacks) Checkpoint(ctx context.Context, label string) (uint64, error) {
	return c.r.Checkpoint(ctx, c.t.Name, label)
}

func (c runCallbacks) Files(ctx context.Context) ([]sdk.File, error) { return c.r.Files(ctx) }

func (c runCallbacks) DoneChunks(ctx context.Context, file string) ([]int, error) {
	return c.r.DoneChunks(ctx, file)
}

func (c runCallbacks) MarkChunk(ctx context.Context, file string, chunk int) error {
	return c.r.MarkChunk(ctx, file, chunk)
}

var (
	_ sdk.Callbacks    = (*callbacks)(nil)
	_ sdk.Syncer       = (*callbacks)(nil)
	_ sdk.RunCallbacks = runCallbacks{}
	_ sdk.Syncer       = runCallbacks{}
)

// The numbers an agent reports are kept as a host can carry them: a
// cost is a finite number of at least 0 (NaN, ±Inf and a negative are
// 0), a fraction is in [0, 1] (NaN is 0), a metric is finite (else 0).
// JSON has no NaN nor Inf: an event holding one was dropped from every
// dashboard's stream without a word (a task's progress, its end), and
// a NaN cost added to a run's made its budget never run out.

func reportedCost(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 1) {
		return 0
	}
	return v
}

func reportedFraction(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, 1)
}

// reportedResult is res with its cost and metrics as above.
func reportedResult(res sdk.Result) sdk.Result {
	res.Cost = reportedCost(res.Cost)
	for k, v := range res.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			res.Metrics[k] = 0
		}
	}
	return res
}
