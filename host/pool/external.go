package pool

import (
	"context"
	"fmt"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/text"
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

// Runnable refuses tasks for an external agent.
func (p *Pool) Runnable() error {
	if p.cfg().External != "" {
		return fmt.Errorf("agent %q: %w; ask Place which of its sessions to resume (hearth place %s)", p.cfg().Agent, hearth.ErrExternalAgent, p.cfg().Agent)
	}
	return nil
}

// attach finds an external session, making it live if it is new or
// dormant, and runs fn on it with the pool locked. A session's first
// report, whatever it is, attaches it: hooks may be installed in the
// middle of a session.
//
// When it made the session live, attach has queued its record, with what
// fn did: the returned Pending is that write, nil when it wrote none.
func (p *Pool) attach(ref hearth.ExternalRef, fn func(s *session)) (*session, Pending, error) {
	if !hearth.ValidExternalID(ref.Session) {
		return nil, nil, fmt.Errorf("%w %q: want 1 to %d letters, digits, '-', '_', '.' or ':'", hearth.ErrSessionID, truncate(ref.Session, 40), hearth.MaxExternalID)
	}
	var (
		ev  *hearth.Event
		rec *record.Session
	)
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		return nil, nil, fmt.Errorf("agent %q was removed from the config; its sessions are no longer followed", p.cfg().Agent)
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
	now := p.now()
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
		ev = &hearth.Event{Kind: hearth.EventSessionAttached, Agent: p.cfg().Agent, Session: s.id,
			Message: fmt.Sprintf("%s session %s reported for the first time (in %s)", s.external, s.id, text.OrDash(ref.Workspace))}
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
		ev = &hearth.Event{Kind: hearth.EventSessionAttached, Agent: p.cfg().Agent, Session: s.id,
			Message: fmt.Sprintf("%s session %s reported again, and is live", s.external, s.id)}
	}
	if ref.Workspace != "" && ref.Workspace != s.workspace {
		s.workspace = ref.Workspace
	}
	// A reload that changed the agent has no process to replace here.
	s.stale = false
	if fn != nil {
		fn(s)
	}
	if ev != nil {
		r := s.recordLocked()
		rec = &r
	}
	p.mu.Unlock()
	var pend Pending
	if rec != nil {
		pend = p.persist(*rec)
		p.emit(*ev)
	}
	if evict != nil {
		p.detach(evict, fmt.Sprintf("more than max_sessions (%d) live: the least recently active goes dormant", p.cfg().MaxSessions))
	}
	return s, pend, nil
}

// attachSaved attaches an external session, runs fn on it, and returns
// once its record, with what fn did, is on disk: written by attach when
// it made the session live, else now.
func (p *Pool) attachSaved(ctx context.Context, ref hearth.ExternalRef, fn func(s *session)) error {
	s, pend, err := p.attach(ref, fn)
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
func (p *Pool) overflowLocked() *session {
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
	if live < p.cfg().MaxSessions || victim == nil {
		return nil
	}
	victim.status = statusRetiring
	return victim
}

// AttachExternal records that an external session started or resumed
// (Claude Code's SessionStart): it is live, with the fingerprint it had.
func (p *Pool) AttachExternal(ctx context.Context, ref hearth.ExternalRef) error {
	return p.attachSaved(ctx, ref, nil)
}

// ExternalTurn records that an external session began a turn (busy: the
// user's prompt) or finished one (Claude Code's Stop). A busy session is
// not pointed at by Place.
func (p *Pool) ExternalTurn(ctx context.Context, ref hearth.ExternalRef, busy bool) error {
	return p.attachSaved(ctx, ref, func(s *session) { p.setBusyLocked(s, busy) })
}

// setBusyLocked sets an external session's load: 1 in a turn, 0 between.
func (p *Pool) setBusyLocked(s *session, busy bool) {
	load := 0
	if busy {
		load = 1
	}
	s.lastActivity = p.now()
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
func (p *Pool) DetachExternal(ctx context.Context, ref hearth.ExternalRef, reason string) error {
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
	return p.detach(s, "ended: "+text.OrDash(reason)).Wait(ctx)
}

// CheckExternalToolUse runs the pre_tool_use guards on a tool call an
// external session is about to make (Claude Code's PreToolUse). The
// session is in a turn from then on.
func (p *Pool) CheckExternalToolUse(_ context.Context, ref hearth.ExternalRef, call sdk.ToolCall) (sdk.Verdict, error) {
	s, _, err := p.attach(ref, func(s *session) { p.setBusyLocked(s, true) })
	if err != nil {
		return sdk.Verdict{}, err
	}
	return s.checkToolUse(call, hearth.Task{Agent: p.cfg().Agent}, nil)
}

// ReportExternalToolUse records a tool use an external session made
// (Claude Code's PostToolUse): its fingerprint and the matcher's index
// take it at once, and the event is on disk when it returns.
func (p *Pool) ReportExternalToolUse(ctx context.Context, ref hearth.ExternalRef, u sdk.ToolUse) error {
	if u.Outcome == sdk.OutcomeUnset {
		return fmt.Errorf("tool use %q of session %s has no outcome; set it to sdk.OutcomeOK, OutcomeError or OutcomeDenied", u.Tool, ref.Session)
	}
	if u.At.IsZero() {
		u.At = p.now()
	}
	s, _, err := p.attach(ref, func(s *session) {
		p.observeLocked(s, u)
		if s.load == 0 {
			p.setBusyLocked(s, true)
		}
	})
	if err != nil {
		return err
	}
	// Published once durable, in order with the session's other events
	// (session.attached first): hook reports come one at a time, not at
	// a plugin's rate.
	seq, pend := p.d.Events.Append(hearth.Event{Time: u.At, Kind: hearth.EventToolUsed, Agent: p.cfg().Agent, Session: s.id, ToolUse: &u})
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
	return s.pool.persist(rec).Wait(ctx)
}

// detach makes a live external session dormant: it has no process to
// stop, and its fingerprint stays in the index, for Place to point at.
// The caller has set its status to retiring.
func (p *Pool) detach(s *session, why string) Pending {
	p.mu.Lock()
	s.stale = false
	rec, evicted := p.dormantLocked(s, why, true)
	p.mu.Unlock()
	pend := p.persist(rec)
	p.persisted(s, fmt.Sprintf("%s session %s is dormant: %s", s.external, s.id, why), evicted)
	return pend
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Prefix(s, n) + "..."
}
