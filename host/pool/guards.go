package pool

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// The guards a pool applies: session_reuse guards veto the session
// placement picked, and pre_tool_use guards answer the tool calls of its
// sessions' tasks.

// guardSessionLocked is a session's context as guards see it. Its
// fingerprint lists are built only when a guard reads them. p.mu must be
// held.
func (s *session) guardSessionLocked(now time.Time, lists bool) guard.Session {
	gs := guard.Session{
		ID: s.id, Agent: s.pool.cfg().Agent, Tasks: int(s.tasks), ToolUses: int(s.toolUses),
		Load: s.load, Capacity: s.capacity, Dormant: s.status == statusDormant,
		Age: now.Sub(s.created), Idle: now.Sub(s.lastActivity),
	}
	if lists && s.fp != nil {
		gs.Files, gs.Directories, gs.Technologies = s.fp.files.keys(), s.fp.dirs.keys(), s.fp.techs.keys()
	}
	return gs
}

// vetoLocked runs the session_reuse guards on the session the matcher
// picked for a task. p.mu must be held.
func (p *Pool) vetoLocked(s *session, score float64, t hearth.Task, now time.Time) *guard.Verdict {
	gs := p.d.Guards()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if !gs.Any(guard.SessionReuse, m) {
		return nil
	}
	env := guard.ReuseEnv{
		Session: s.guardSessionLocked(now, gs.Uses(guard.SessionReuse, m, "session")),
		Score:   score, Task: guard.TaskOf(t), Now: now,
	}
	return gs.First(guard.SessionReuse, m, env)
}

// checkToolUse runs the pre_tool_use guards on a tool call the session's
// agent is about to make for task t (zero for an external session's), of
// run (nil for none). With no guard, it answers at once; otherwise it
// builds only the parts of the environment some guard reads (the
// session's fingerprint lists are the costly part).
func (s *session) checkToolUse(c sdk.ToolCall, t hearth.Task, run Run) (sdk.Verdict, error) {
	v, err := s.evalToolUse(c, t, run)
	if v == nil || err != nil {
		return sdk.Verdict{Allow: err == nil}, err
	}
	s.pool.emitGuard(guard.PreToolUse, v, s.id, t.ID)
	return sdk.Verdict{Allow: false, Reason: v.Message, Guard: v.Guard}, nil
}

// covered reports whether any pre_tool_use guard applies to the tool uses
// of task t on this session's agent.
func (s *session) covered(t hearth.Task) bool {
	return s.pool.d.Guards().Any(guard.PreToolUse, guard.Match{Agent: s.pool.cfg().Agent, Task: t.Name})
}

// evalToolUse answers a tool call with the pre_tool_use guards, without
// recording anything: the guard that denies it, or nil.
func (s *session) evalToolUse(c sdk.ToolCall, t hearth.Task, run Run) (*guard.Verdict, error) {
	p := s.pool
	gs := p.d.Guards()
	m := guard.Match{Agent: p.cfg().Agent, Task: t.Name}
	if !gs.Any(guard.PreToolUse, m) {
		return nil, nil
	}
	now := p.now()
	if gs.Uses(guard.PreToolUse, m, "input") {
		if err := c.DecodeInput(); err != nil {
			return nil, err
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
	env := gs.ToolUseFor(m, guard.Call{Tool: c.Tool, Kind: string(c.Kind), Paths: c.Paths, Input: c.Input, RawInput: c.RawInput, Cwd: cwd})
	env.Task, env.Now = guard.TaskOf(t), now
	if run != nil && gs.Uses(guard.PreToolUse, m, "run") {
		env.Run = run.Guard()
	}
	if gs.Uses(guard.PreToolUse, m, "session") {
		p.mu.Lock()
		env.Session = s.guardSessionLocked(now, true)
		p.mu.Unlock()
		// As absolute as the call's paths.
		env.Session.Files = guard.Absolute(p.cfg().Workspace, env.Session.Files)
		env.Session.Directories = guard.Absolute(p.cfg().Workspace, env.Session.Directories)
	}
	return gs.First(guard.PreToolUse, m, env), nil
}

// uncheckedUse is called for a tool use the agent reported without having
// asked about it first, under pre_tool_use guards that cover it: the use
// is flagged with an event (naming the guard that would have denied it,
// if one would have), and the error returned, when checks are required,
// fails the task.
func (s *session) uncheckedUse(u sdk.ToolUse, t hearth.Task, run Run) error {
	p := s.pool
	what := u.Tool
	if len(u.Paths) > 0 {
		what += " " + strings.Join(u.Paths, " ")
	}
	msg := what + " was reported without a check (CheckToolUse) under pre_tool_use guards"
	v, err := s.evalToolUse(sdk.ToolCall{CallID: u.CallID, Tool: u.Tool, Kind: u.Kind, Paths: u.Paths}, t, run)
	switch {
	case err != nil:
		msg += "; the guards could not judge it: " + err.Error()
	case v != nil:
		msg += fmt.Sprintf("; guard %q would have denied it: %s", v.Guard, v.Message)
	}
	required := t.RequireChecks || p.cfg().RequireChecks
	p.mu.Lock()
	s.unchecked++
	p.mu.Unlock()
	p.emit(hearth.Event{Kind: hearth.EventToolUnchecked, Agent: p.cfg().Agent, Session: s.id, Task: t.ID, Run: t.Run, Message: msg})
	if !required {
		return nil
	}
	return fmt.Errorf("%s, and checks are required (require_checks): ask the host before each tool use (sdk.Tools does): %w", msg, hearth.ErrUnchecked)
}

// defiedUse is called for a tool use reported done after the host denied
// it (v): the use is an event, and the error returned fails the task,
// whether checks are required or not. An agent that runs a tool it was
// told not to is not one a guard can hold; nothing it reports after
// that can be taken at its word.
func (s *session) defiedUse(u sdk.ToolUse, v sdk.Verdict, t hearth.Task) error {
	p := s.pool
	what := u.Tool
	if len(u.Paths) > 0 {
		what += " " + strings.Join(u.Paths, " ")
	}
	msg := fmt.Sprintf("%s was reported (outcome %s) after guard %q denied it: %s", what, u.Outcome, v.Guard, v.Reason)
	p.emit(hearth.Event{Kind: hearth.EventToolDefied, Agent: p.cfg().Agent, Session: s.id, Task: t.ID, Run: t.Run, Message: msg, Guard: v.Guard})
	return fmt.Errorf("%s; the agent must not run a tool the host denied (check its tool loop: a denied call is reported with outcome %s): %w",
		msg, sdk.OutcomeDenied, hearth.ErrDenialIgnored)
}

// emitGuard records that a guard fired on one of the pool's sessions.
func (p *Pool) emitGuard(hook guard.Hook, v *guard.Verdict, session, task string) {
	p.emit(guard.Event(hook, v, p.cfg().Agent, session, task))
}
