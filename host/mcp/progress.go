package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// notifier returns a function that sends a progress notification for
// req, or one that does nothing when the client asked for none (no
// progress token). Notifications are best effort: one the client cannot
// take is dropped, never an error of the call.
func (s *server) notifier(ctx context.Context, req *gomcp.CallToolRequest) func(progress, total float64, msg string) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(float64, float64, string) {}
	}
	return func(progress, total float64, msg string) {
		_ = req.Session.NotifyProgress(ctx, &gomcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: msg})
	}
}

// progress follows task id while it runs and notifies the client of each
// step: where it was placed, each tool use, the agent's own progress
// reports. It returns a function that stops following and returns once
// the last notification is sent.
func (s *server) progress(ctx context.Context, req *gomcp.CallToolRequest, id string) (stop func()) {
	if s.events == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	sub, err := s.events.Subscribe(ctx, hearth.EventFilter{Kinds: followKinds, Buffer: followBuffer})
	if err != nil {
		// Progress is a courtesy: the task runs all the same.
		return func() {}
	}
	notify := s.notifier(ctx, req)
	var wg sync.WaitGroup
	wg.Go(func() {
		n := 0
		for e := range sub.Events() {
			if e.Task != id {
				continue
			}
			line := taskEventLine(e)
			if line == "" {
				continue
			}
			n++
			notify(float64(n), 0, line)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			sub.Close()
			wg.Wait()
		})
	}
}

// followKinds are the kinds of event that say how a task goes, tool uses
// among them: what progress follows.
var followKinds = []hearth.EventKind{
	hearth.EventDecision, hearth.EventSessionSpawned, hearth.EventSessionRehydrated,
	hearth.EventTaskStarted, hearth.EventTaskProgress, hearth.EventToolUsed, hearth.EventGuardFired,
	hearth.EventTaskSucceeded, hearth.EventTaskFailed,
}

// followBuffer is how many of those events a slow follower may fall
// behind by before it misses some: the host never waits for it.
const followBuffer = 1024

// taskEventLine says in a line what e means for the task it belongs to,
// or "" when it is nothing to report.
func taskEventLine(e hearth.Event) string {
	switch e.Kind {
	case hearth.EventDecision:
		if d := e.Decision; d != nil {
			return fmt.Sprintf("placed on session %s (%s, score %.2f)", d.Session, d.Action, d.Score)
		}
	case hearth.EventSessionSpawned:
		return "started session " + e.Session
	case hearth.EventSessionRehydrated:
		return "rehydrated session " + e.Session
	case hearth.EventTaskStarted:
		return "running on session " + e.Session
	case hearth.EventToolUsed:
		if u := e.ToolUse; u != nil {
			line := u.Tool
			if len(u.Paths) > 0 {
				line += " " + strings.Join(u.Paths, " ")
			}
			if u.Outcome != sdk.OutcomeOK {
				line += " (" + u.Outcome.String() + ")"
			}
			return line
		}
	case hearth.EventTaskProgress:
		if e.Message != "" {
			return fmt.Sprintf("%.0f%%: %s", e.Fraction*100, e.Message)
		}
		return fmt.Sprintf("%.0f%%", e.Fraction*100)
	case hearth.EventGuardFired:
		return fmt.Sprintf("guard %s: %s", e.Guard, e.Message)
	case hearth.EventTaskSucceeded:
		return "done"
	case hearth.EventTaskFailed:
		return "failed: " + e.Err
	}
	return ""
}

// runEventLine says in a line what a run's event means.
func runEventLine(e hearth.Event) string {
	if e.Task != "" {
		return fmt.Sprintf("task %s: %s", e.Task, e.To)
	}
	if e.Message != "" {
		return fmt.Sprintf("run %s: %s (%s)", e.Run, e.To, e.Message)
	}
	return fmt.Sprintf("run %s: %s", e.Run, e.To)
}
