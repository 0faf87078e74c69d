package engine

import (
	"context"
	"fmt"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/sdk"
)

// Sessions lists the host's sessions as they are now, live ones with their
// current load, most recently active first.
func (e *Engine) Sessions(context.Context) ([]hearth.SessionInfo, error) {
	var out []hearth.SessionInfo
	for _, p := range e.poolList() {
		out = append(out, p.Infos()...)
	}
	store.SortSessions(out)
	return out, nil
}

// Session reads one session of the host with its latest events and the
// decisions that involved it, with its status and load as they are now.
func (e *Engine) Session(ctx context.Context, id string, limit int) (*hearth.SessionDetail, error) {
	d, err := e.store.Session(ctx, id, limit)
	if err != nil {
		return nil, err
	}
	for _, p := range e.poolList() {
		if info, ok := p.Info(id); ok {
			if info.Status == "dormant" || info.Status == "lost" {
				// The fingerprint is in the store, not in memory.
				info.Files, info.Directories, info.Technologies = d.Files, d.Directories, d.Technologies
			}
			d.SessionInfo = info
		}
	}
	return d, nil
}

// RecentDecisions returns the last limit placement decisions of the
// host's store, newest first, as events (with their time and run).
func (e *Engine) RecentDecisions(limit int) ([]hearth.Event, error) {
	return e.store.Decisions(limit)
}

// externalPool finds the pool of an external agent: agent, or the
// config's hooks.agent when it is empty.
func (e *Engine) externalPool(agent string) (*pool.Pool, error) {
	if agent == "" {
		agent = e.config().Hooks.Agent
		if agent == "" {
			return nil, fmt.Errorf("%w: the config declares no external agent; add agent \"claude-code\" { external = %q }", hearth.ErrUnknownAgent, hearth.ExternalClaudeCode)
		}
	}
	p, err := e.pool(agent)
	if err != nil {
		return nil, err
	}
	if p.Spec().External == "" {
		return nil, fmt.Errorf("agent %q: %w: hearth runs it as a plugin, and its sessions report through the plugin protocol", agent, hearth.ErrNotExternal)
	}
	return p, nil
}

// External sessions are sessions of a program hearth does not run, such
// as Claude Code, that report what they do through hooks (package
// host/claudecode turns Claude Code's hook payloads into the calls
// below; package host/pool keeps them).

// AttachExternal records that an external session started or resumed
// (Claude Code's SessionStart): it is live, with the fingerprint it had.
func (e *Engine) AttachExternal(ctx context.Context, ref hearth.ExternalRef) error {
	p, err := e.externalPool(ref.Agent)
	if err != nil {
		return err
	}
	return p.AttachExternal(ctx, ref)
}

// ExternalTurn records that an external session began a turn (busy: the
// user's prompt) or finished one (Claude Code's Stop). A busy session is
// not pointed at by Place.
func (e *Engine) ExternalTurn(ctx context.Context, ref hearth.ExternalRef, busy bool) error {
	p, err := e.externalPool(ref.Agent)
	if err != nil {
		return err
	}
	return p.ExternalTurn(ctx, ref, busy)
}

// DetachExternal records that an external session ended (Claude Code's
// SessionEnd): it becomes dormant, its fingerprint kept; it can still be
// resumed, and pointed at.
func (e *Engine) DetachExternal(ctx context.Context, ref hearth.ExternalRef, reason string) error {
	p, err := e.externalPool(ref.Agent)
	if err != nil {
		return err
	}
	return p.DetachExternal(ctx, ref, reason)
}

// CheckExternalToolUse runs the pre_tool_use guards on a tool call an
// external session is about to make (Claude Code's PreToolUse). The
// session is in a turn from then on.
func (e *Engine) CheckExternalToolUse(ctx context.Context, ref hearth.ExternalRef, call sdk.ToolCall) (sdk.Verdict, error) {
	p, err := e.externalPool(ref.Agent)
	if err != nil {
		return sdk.Verdict{}, err
	}
	return p.CheckExternalToolUse(ctx, ref, call)
}

// ReportExternalToolUse records a tool use an external session made
// (Claude Code's PostToolUse): its fingerprint and the matcher's index
// take it at once, and the event is on disk when it returns.
func (e *Engine) ReportExternalToolUse(ctx context.Context, ref hearth.ExternalRef, u sdk.ToolUse) error {
	p, err := e.externalPool(ref.Agent)
	if err != nil {
		return err
	}
	return p.ReportExternalToolUse(ctx, ref, u)
}
