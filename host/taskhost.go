package host

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
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

// taskHost is the host side of one task: what the agent's reports and
// questions reach.
type taskHost struct {
	s    *session
	task string
	// t is the task, as submitted: pre-tool-use guards see it.
	t Task
	// run is the run the task belongs to, nil for a task on its own.
	run *runExec
	// buf holds tool-use events not yet handed to the store; spare holds
	// the records of the last batch, encoded and free to refill.
	buf      []*storepb.Event
	spare    []*storepb.Event
	bufSince time.Time
	// pending are the batches handed to the store since the last Sync.
	// Each is waited for: a failed early batch must not hide behind a
	// later one that committed.
	pending []*store.Pending
}

// ReportToolUse updates the session's fingerprint and the matcher's index
// at once, and logs the tool use. The SDK calls it from the task's one
// stream, so calls for a task never overlap.
func (th *taskHost) ReportToolUse(_ context.Context, u sdk.ToolUse) error {
	s, p := th.s, th.s.pool
	h := p.h
	now := h.now()
	if u.At.IsZero() {
		u.At = now
	}
	e := Event{Time: u.At, Kind: EventToolUsed, Agent: p.cfg().Name, Session: s.id, Task: th.task, ToolUse: &u}
	var rec *storepb.Event
	if n := len(th.spare); n > 0 {
		rec, th.spare = th.spare[n-1], th.spare[:n-1]
	} else {
		rec = &storepb.Event{}
	}
	e.fill(rec)
	p.mu.Lock()
	p.observeLocked(s, u)
	p.mu.Unlock()
	if len(th.buf) == 0 {
		th.bufSince = now
	}
	th.buf = append(th.buf, rec)
	if len(th.buf) >= flushEvents || now.Sub(th.bufSince) >= flushAge {
		th.flush()
	}
	if h.observe != nil {
		h.observe(&e)
	}
	if h.events.active() {
		h.events.publish(e)
	}
	return nil
}

// flush hands the buffered events to the store.
func (th *taskHost) flush() {
	if len(th.buf) == 0 {
		return
	}
	p := th.s.pool
	th.pending = append(th.pending, p.h.store.AppendBatch(th.buf))
	// Sequence numbers are assigned by now. A snapshot that includes
	// these events in its fingerprint covers them; one taken a moment
	// earlier replays them on restart, which only touches what is there.
	p.mu.Lock()
	th.s.lastSeq = max(th.s.lastSeq, th.buf[len(th.buf)-1].GetSeq())
	p.mu.Unlock()
	// AppendBatch encoded the records: refill them next time.
	th.spare = append(th.spare, th.buf...)
	th.buf = th.buf[:0]
}

// Sync returns once every tool use of the task is durable: the SDK calls
// it before it acknowledges the task's stream.
func (th *taskHost) Sync(ctx context.Context) error {
	th.flush()
	pending := th.pending
	th.pending = nil
	for _, pd := range pending {
		if err := pd.Wait(ctx); err != nil {
			return fmt.Errorf("record tool uses of task %s: %w", th.task, err)
		}
	}
	return nil
}

// CheckToolUse runs the pre_tool_use guards.
func (th *taskHost) CheckToolUse(_ context.Context, c sdk.ToolCall) (sdk.Verdict, error) {
	return th.s.checkToolUse(c, th.t, th.run)
}

// checkToolUse runs the pre_tool_use guards on a tool call the session's
// agent is about to make for task t (zero for an external session's), of
// run (nil for none). With no guard, it answers at once; otherwise it
// builds only the parts of the environment some guard reads (the
// session's fingerprint lists are the costly part).
func (s *session) checkToolUse(c sdk.ToolCall, t Task, run *runExec) (sdk.Verdict, error) {
	p := s.pool
	h := p.h
	gs := h.Guards()
	m := guard.Match{Agent: p.cfg().Name, Task: t.Name}
	if !gs.Any(guard.PreToolUse, m) {
		return sdk.Verdict{Allow: true}, nil
	}
	now := h.now()
	if gs.Uses(guard.PreToolUse, m, "input") {
		if err := c.DecodeInput(); err != nil {
			return sdk.Verdict{}, err
		}
	}
	// The call's paths, canonical: relative ones are read against where
	// the agent works (an external session's latest cwd).
	p.mu.Lock()
	cwd := cmp.Or(s.workspace, p.cfg().Workspace)
	p.mu.Unlock()
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	env := gs.ToolUseFor(m, guard.Call{Tool: c.Tool, Paths: c.Paths, Input: c.Input, RawInput: c.RawInput, Cwd: cwd})
	env.Task, env.Now = guardTask(t), now
	if run != nil && gs.Uses(guard.PreToolUse, m, "run") {
		env.Run = run.guardRun()
	}
	if gs.Uses(guard.PreToolUse, m, "session") {
		p.mu.Lock()
		env.Session = s.guardSessionLocked(now, true)
		p.mu.Unlock()
		// As absolute as the call's paths.
		env.Session.Files = guard.Absolute(p.cfg().Workspace, env.Session.Files)
		env.Session.Directories = guard.Absolute(p.cfg().Workspace, env.Session.Directories)
	}
	v := gs.First(guard.PreToolUse, m, env)
	if v == nil {
		return sdk.Verdict{Allow: true}, nil
	}
	h.emitGuard(guard.PreToolUse, v, p.cfg().Name, s.id, t.ID)
	return sdk.Verdict{Allow: false, Reason: v.Message, Guard: v.Guard}, nil
}

func (th *taskHost) ReportProgress(_ context.Context, p sdk.Progress) error {
	th.s.logger.Debug("progress", "task", th.task, "fraction", p.Fraction, "message", p.Message)
	if th.run != nil {
		th.run.progress(th.task, p.Cost)
	}
	th.s.pool.h.emit(Event{Kind: EventTaskProgress, Agent: th.s.pool.cfg().Name, Session: th.s.id, Task: th.task, Run: th.t.Run,
		Fraction: p.Fraction, Message: p.Message, Cost: p.Cost})
	return nil
}

func (th *taskHost) Logger() hclog.Logger { return th.s.logger.With("task", th.task) }

var (
	_ sdk.Host   = (*taskHost)(nil)
	_ sdk.Syncer = (*taskHost)(nil)
)
