package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// External sessions are sessions of a program hearth does not run, such as
// Claude Code, that report what they do through hooks (package
// host/claudecode turns Claude Code's hook payloads into the calls
// below). They belong to an agent declared with `external = "KIND"`,
// and get what plugin sessions get from their tool-use reports: a
// fingerprint, a place in the matcher's index, pre_tool_use guards, and
// events. They have no process: hearth never places a task on one, but
// Place can point at one, so that an orchestrator resumes it (for Claude
// Code, `claude --resume ID` in its workspace) instead of starting cold.
//
// An external session's ID is the program's own (Claude Code's
// session_id). It is live from its first report until it ends (a
// SessionEnd hook), goes idle past its pool's idle_timeout, or the host
// shuts down; then dormant, with its fingerprint, until it reports again.
// Dormant, it is still a candidate: its program keeps its conversation.
// Its load is 1 during a turn (from the user's prompt or its first tool
// call until its Stop hook), 0 between turns; a busy session is never
// pointed at.

var (
	// ErrExternalAgent is returned for a task submitted to an external
	// agent.
	ErrExternalAgent = errors.New("the agent is external: hearth follows its sessions through hooks but cannot run tasks on them")
	// ErrNotExternal is returned for a hook report naming an agent that
	// hearth runs itself.
	ErrNotExternal = errors.New("not an external agent")
	// ErrSessionID is returned for an external session ID hearth cannot
	// keep.
	ErrSessionID = errors.New("invalid session ID")
)

// MaxExternalID bounds an external session's ID.
const MaxExternalID = 128

// ExternalRef names an external session in a hook report.
type ExternalRef struct {
	// Agent is an external agent of the config; empty means the config's
	// hooks.agent (by default the claude-code agent).
	Agent string
	// Session is the program's own session ID: letters, digits, '-', '_',
	// '.' and ':', at most MaxExternalID of them.
	Session string
	// Workspace is the directory the session works in (Claude Code's
	// cwd); the latest one reported is kept.
	Workspace string
}

// validExternalID reports whether id can be an external session's ID:
// Claude Code's are UUIDs; ':' is allowed for programs that namespace
// theirs.
func validExternalID(id string) bool { return validID(id, MaxExternalID, ":") }

// ResumeCommand is the command line that resumes an external session of
// kind, run in its workspace; "" for kinds hearth knows no command of.
func ResumeCommand(kind, session string) string {
	if kind == config.ExternalClaudeCode {
		return "claude --resume " + session
	}
	return ""
}

// runnable refuses tasks for an external agent.
func (p *pool) runnable() error {
	if p.cfg().External != "" {
		return fmt.Errorf("agent %q: %w; ask Place which of its sessions to resume (hearth place %s)", p.cfg().Name, ErrExternalAgent, p.cfg().Name)
	}
	return nil
}

// workspaceOf is where session id works, for an external session.
func (p *pool) workspaceOf(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[id]; s != nil {
		return s.workspace
	}
	return ""
}

// externalPool finds the pool of an external agent.
func (h *Host) externalPool(agent string) (*pool, error) {
	if agent == "" {
		agent = h.config().Hooks.Agent
		if agent == "" {
			return nil, fmt.Errorf("%w: the config declares no external agent; add agent \"claude-code\" { external = %q }", ErrUnknownAgent, config.ExternalClaudeCode)
		}
	}
	p, err := h.pool(agent)
	if err != nil {
		return nil, err
	}
	if p.cfg().External == "" {
		return nil, fmt.Errorf("agent %q: %w: hearth runs it as a plugin, and its sessions report through the plugin protocol", agent, ErrNotExternal)
	}
	return p, nil
}

// attach finds an external session, making it live if it is new or
// dormant, and runs fn on it with the pool locked. A session's first
// report, whatever it is, attaches it: hooks may be installed in the
// middle of a session.
//
// When it made the session live, attach has queued its record, with what
// fn did: the returned Pending is that write, nil when it wrote none.
func (h *Host) attach(ref ExternalRef, fn func(p *pool, s *session)) (*session, *store.Pending, error) {
	if !validExternalID(ref.Session) {
		return nil, nil, fmt.Errorf("%w %q: want 1 to %d letters, digits, '-', '_', '.' or ':'", ErrSessionID, truncate(ref.Session, 40), MaxExternalID)
	}
	p, err := h.externalPool(ref.Agent)
	if err != nil {
		return nil, nil, err
	}
	var (
		ev  *Event
		rec *storepb.Session
	)
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("agent %q was removed from the config; its sessions are no longer followed", p.cfg().Name)
	}
	s := p.sessions[ref.Session]
	for s != nil && s.status == statusRetiring {
		// Being made dormant: let that finish, then make it live again,
		// or its record would lose what this report adds.
		changed := p.changed
		p.mu.Unlock()
		<-changed
		p.mu.Lock()
		s = p.sessions[ref.Session]
	}
	now := h.now()
	var evict *session
	if s == nil || s.status != statusLive {
		evict = p.overflowLocked()
	}
	switch {
	case s == nil:
		s = newSession(p, ref.Session, now)
		s.external, s.workspace = p.cfg().External, ref.Workspace
		s.status, s.capacity, s.hasState = statusLive, 1, true
		p.sessions[s.id] = s
		p.indexLocked(s)
		ev = &Event{Kind: EventSessionAttached, Agent: p.cfg().Name, Session: s.id,
			Message: fmt.Sprintf("%s session %s reported for the first time (in %s)", s.external, s.id, orDash(ref.Workspace))}
	case s.status != statusLive:
		fp, err := s.loadFingerprint()
		if err != nil {
			// No record (it was evicted, or its write failed): start
			// afresh rather than refuse the person's editor its hook.
			fp = newFingerprint(p.cfg().Fingerprint)
		}
		s.fp, s.status, s.reason, s.hasState = fp, statusLive, "", true
		s.capacity = 1
		s.lastActivity = now
		p.indexLocked(s)
		ev = &Event{Kind: EventSessionAttached, Agent: p.cfg().Name, Session: s.id,
			Message: fmt.Sprintf("%s session %s reported again, and is live", s.external, s.id)}
	}
	if ref.Workspace != "" && ref.Workspace != s.workspace {
		s.workspace = ref.Workspace
	}
	// A reload that changed the agent has no process to replace here.
	s.stale = false
	if fn != nil {
		fn(p, s)
	}
	if ev != nil {
		rec = s.recordLocked()
	}
	p.mu.Unlock()
	var pend *store.Pending
	if rec != nil {
		pend = p.h.persist(rec)
		p.h.emit(*ev)
	}
	if evict != nil {
		p.detach(evict, fmt.Sprintf("more than max_sessions (%d) live: the least recently active goes dormant", p.cfg().Pool.MaxSessions))
	}
	return s, pend, nil
}

// attachSaved attaches an external session, runs fn on it, and returns
// once its record, with what fn did, is on disk: written by attach when
// it made the session live, else now.
func (h *Host) attachSaved(ctx context.Context, ref ExternalRef, fn func(p *pool, s *session)) error {
	s, pend, err := h.attach(ref, fn)
	if err != nil {
		return err
	}
	if pend != nil {
		return pend.Wait(ctx)
	}
	return s.saveRecord(ctx)
}

// overflowLocked picks the live session to make dormant so that one more
// can be live within max_sessions: the least recently active, idle ones
// first. It marks it retiring; nil when there is room.
func (p *pool) overflowLocked() *session {
	live := 0
	var victim *session
	for _, s := range p.sessions {
		if s.status != statusLive {
			continue
		}
		live++
		if victim == nil || (s.load < victim.load) || (s.load == victim.load && s.lastActivity.Before(victim.lastActivity)) {
			victim = s
		}
	}
	if live < p.cfg().Pool.MaxSessions || victim == nil {
		return nil
	}
	victim.status = statusRetiring
	return victim
}

// AttachExternal records that an external session started or resumed
// (Claude Code's SessionStart): it is live, with the fingerprint it had.
func (h *Host) AttachExternal(ctx context.Context, ref ExternalRef) error {
	return h.attachSaved(ctx, ref, nil)
}

// ExternalTurn records that an external session began a turn (busy: the
// user's prompt) or finished one (Claude Code's Stop). A busy session is
// not pointed at by Place.
func (h *Host) ExternalTurn(ctx context.Context, ref ExternalRef, busy bool) error {
	return h.attachSaved(ctx, ref, func(p *pool, s *session) { p.setBusyLocked(s, busy) })
}

// setBusyLocked sets an external session's load: 1 in a turn, 0 between.
func (p *pool) setBusyLocked(s *session, busy bool) {
	load := 0
	if busy {
		load = 1
	}
	s.lastActivity = p.h.now()
	if s.load != load {
		s.load = load
		p.index.Upsert(s.id, p.stateLocked(s))
		s.indexedActivity = s.lastActivity
		p.notifyLocked()
	}
}

// DetachExternal records that an external session ended (Claude Code's
// SessionEnd): it becomes dormant, its fingerprint kept; it can still be
// resumed, and pointed at.
func (h *Host) DetachExternal(ctx context.Context, ref ExternalRef, reason string) error {
	p, err := h.externalPool(ref.Agent)
	if err != nil {
		return err
	}
	p.mu.Lock()
	s := p.sessions[ref.Session]
	live := s != nil && s.status == statusLive
	if live {
		s.status = statusRetiring
	}
	p.mu.Unlock()
	if !live {
		// Ended before it reported anything, or ended twice: nothing to
		// change.
		return nil
	}
	return p.detach(s, "ended: "+orDash(reason)).Wait(ctx)
}

// CheckExternalToolUse runs the pre_tool_use guards on a tool call an
// external session is about to make (Claude Code's PreToolUse). The
// session is in a turn from then on.
func (h *Host) CheckExternalToolUse(_ context.Context, ref ExternalRef, call sdk.ToolCall) (sdk.Verdict, error) {
	s, _, err := h.attach(ref, func(p *pool, s *session) { p.setBusyLocked(s, true) })
	if err != nil {
		return sdk.Verdict{}, err
	}
	return s.checkToolUse(call, Task{Agent: s.pool.cfg().Name}, nil)
}

// ReportExternalToolUse records a tool use an external session made
// (Claude Code's PostToolUse): its fingerprint and the matcher's index
// take it at once, and the event is on disk when it returns.
func (h *Host) ReportExternalToolUse(ctx context.Context, ref ExternalRef, u sdk.ToolUse) error {
	if u.Outcome == sdk.OutcomeUnset {
		return fmt.Errorf("tool use %q of session %s has no outcome; set it to sdk.OutcomeOK, OutcomeError or OutcomeDenied", u.Tool, ref.Session)
	}
	if u.At.IsZero() {
		u.At = h.now()
	}
	s, _, err := h.attach(ref, func(p *pool, s *session) {
		p.observeLocked(s, u)
		if s.load == 0 {
			p.setBusyLocked(s, true)
		}
	})
	if err != nil {
		return err
	}
	p := s.pool
	// Published once durable, in order with the session's other events
	// (session.attached first): hook reports come one at a time, not at
	// a plugin's rate.
	seq, pend := h.append(Event{Time: u.At, Kind: EventToolUsed, Agent: p.cfg().Name, Session: s.id, ToolUse: &u})
	// The session's record is written at turn boundaries, not per tool
	// use: after a crash, the tool uses since are replayed from the log
	// into its fingerprint.
	p.mu.Lock()
	s.lastSeq = max(s.lastSeq, seq)
	p.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		return fmt.Errorf("record a tool use of session %s: %w", s.id, err)
	}
	return nil
}

// saveRecord writes the record of a live session and waits for it. A
// session made dormant in the meantime has had its record written, with
// its fingerprint, which this one would not hold.
func (s *session) saveRecord(ctx context.Context) error {
	s.pool.mu.Lock()
	if s.status != statusLive || s.fp == nil {
		s.pool.mu.Unlock()
		return nil
	}
	rec := s.recordLocked()
	s.pool.mu.Unlock()
	return s.pool.h.persist(rec).Wait(ctx)
}

// detach makes a live external session dormant: it has no process to
// stop, and its fingerprint stays in the index, for Place to point at.
// The caller has set its status to retiring.
func (p *pool) detach(s *session, why string) *store.Pending {
	p.mu.Lock()
	s.stale = false
	rec, evicted := p.dormantLocked(s, why, true)
	p.mu.Unlock()
	pend := p.h.persist(rec)
	p.persisted(s, fmt.Sprintf("%s session %s is dormant: %s", s.external, s.id, why), evicted)
	return pend
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
