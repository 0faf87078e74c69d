package host

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/sdk"
)

// taskHost is the host side of one task: what the agent's reports and
// questions reach.
type taskHost struct {
	s    *session
	task string
}

func (th *taskHost) ReportToolUse(_ context.Context, u sdk.ToolUse) error {
	th.s.logger.Trace("tool use", "task", th.task, "tool", u.Tool, "paths", u.Paths)
	return nil
}

func (th *taskHost) CheckToolUse(context.Context, sdk.ToolCall) (sdk.Verdict, error) {
	return sdk.Verdict{Allow: true}, nil
}

func (th *taskHost) ReportProgress(_ context.Context, p sdk.Progress) error {
	th.s.logger.Debug("progress", "task", th.task, "fraction", p.Fraction, "message", p.Message)
	th.s.pool.h.publish(Event{Kind: EventTaskProgress, Agent: th.s.pool.cfg.Name, Session: th.s.id, Task: th.task,
		Fraction: p.Fraction, Message: p.Message})
	return nil
}

func (th *taskHost) Logger() hclog.Logger { return th.s.logger.With("task", th.task) }

var _ sdk.Host = (*taskHost)(nil)
