package host

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// taskHost is the host side of one task: what the agent's reports and
// questions reach.
type taskHost struct {
	s    *session
	task string
	// last is the newest tool-use event handed to the store. The store
	// commits in order, so once it is durable all of this task's are.
	last *store.Pending
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
	e := Event{Time: u.At, Kind: EventToolUsed, Agent: p.cfg.Name, Session: s.id, Task: th.task, ToolUse: &u}
	rec := e.record()
	p.mu.Lock()
	c := s.fp.observe(u, p.cfg.Workspace)
	s.toolUses++
	if u.At.After(s.lastActivity) {
		s.lastActivity = u.At
	}
	if s.status == statusLive {
		if !c.empty() {
			p.applyLocked(s, c)
		}
		if s.lastActivity.Sub(s.indexedActivity) >= indexActivityEvery {
			p.index.Upsert(s.id, p.stateLocked(s))
			s.indexedActivity = s.lastActivity
		}
	}
	// The sequence number is taken under the lock, so the fingerprint a
	// snapshot holds and the last event it covers agree.
	th.last = h.store.Append(rec)
	s.lastSeq = max(s.lastSeq, rec.GetSeq())
	p.mu.Unlock()
	if h.events.active() {
		e.Seq = rec.GetSeq()
		h.events.publish(e)
	}
	return nil
}

// Sync returns once every tool use of the task is durable: the SDK calls
// it before it acknowledges the task's stream.
func (th *taskHost) Sync(ctx context.Context) error {
	if th.last == nil {
		return nil
	}
	if err := th.last.Wait(ctx); err != nil {
		return fmt.Errorf("record tool uses of task %s: %w", th.task, err)
	}
	return nil
}

func (th *taskHost) CheckToolUse(context.Context, sdk.ToolCall) (sdk.Verdict, error) {
	return sdk.Verdict{Allow: true}, nil
}

func (th *taskHost) ReportProgress(_ context.Context, p sdk.Progress) error {
	th.s.logger.Debug("progress", "task", th.task, "fraction", p.Fraction, "message", p.Message)
	th.s.pool.h.emit(Event{Kind: EventTaskProgress, Agent: th.s.pool.cfg.Name, Session: th.s.id, Task: th.task,
		Fraction: p.Fraction, Message: p.Message})
	return nil
}

func (th *taskHost) Logger() hclog.Logger { return th.s.logger.With("task", th.task) }

var (
	_ sdk.Host   = (*taskHost)(nil)
	_ sdk.Syncer = (*taskHost)(nil)
)
