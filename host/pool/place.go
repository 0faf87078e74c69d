package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/matcher"
)

// planKind is what placement decided to do with a task.
type planKind int

const (
	// planReuse: run it on a live session with a free slot.
	planReuse planKind = iota + 1
	// planRehydrate: start a process for a dormant session (there is
	// room) and run it there.
	planRehydrate
	// planSpawn: start a new session (there is room).
	planSpawn
	// planRetire: the pool is full; retire an idle session to make room,
	// then decide again.
	planRetire
	// planWait: the pool is full; wait for a slot, then decide again.
	planWait
	// planRemote: another host's session wins (cluster placement only,
	// PlaceAcross); the engine forwards the task there.
	planRemote
)

// plan is a placement decision before anything is done about it: what
// decideLocked returns, and what Place reports and acquire acts on.
type plan struct {
	kind planKind
	// s is the session to reuse or rehydrate, the idle session to
	// retire, or the busy session a wait is for (nil: any slot).
	s *session
	d matcher.Decision
	// score is the chosen session's total; for a spawn or a wait, the
	// best candidate's.
	score float64
	// below: a reuse below the threshold, because the pool is full and
	// waiting would not make a better session appear.
	below bool
	// vetoes are the winners session_reuse guards refused, in order.
	vetoes []veto
	// stateless counts the dormant sessions left out because their agent
	// exported no state.
	stateless int
	// turn is the round_robin placement's next turn, once the plan is
	// acted on.
	turn int
	// remote is the winning RemoteID of a planRemote.
	remote string
}

type veto struct {
	s *session
	v *guard.Verdict
}

// decideLocked is the placement policy: where a task with hints goes
// now, decided without changing anything. p.mu must be held.
//
// With placement = "matcher" (the default), the matcher scores every
// live and dormant session that can take a task now against the task's
// hints; session_reuse guards may veto the winner, and the matcher
// decides again without it. A live winner is reused; a dormant winner is
// rehydrated (a new process, given the session's exported state);
// otherwise a new session is spawned. Starting a process needs room in
// the pool (max_sessions processes). When the pool is full, the task
// waits if a busy session would win it: that session frees up sooner
// than a cold one warms up. Otherwise, with when_full = "retire_idle" and
// an idle session, the least recently used idle session is retired (kept
// dormant, with its context) to make room; else the best live session
// with a free slot is reused even below the threshold (waiting would not
// make a better one appear); and when every session is busy the task
// waits for a slot to free. After a wait or a retirement, it decides
// again.
//
// The baselines hearth is measured against are placements too:
// "fresh" (a new session per task, stopped after it) and "round_robin"
// (a warm pool of max_sessions sessions, tasks handed out in turn).
//
// across is nil for a decision over this host's sessions only (the other
// hosts' sessions in the index are left out); otherwise the decision is
// over every host's sessions, leaving out the RemoteIDs in across.exclude,
// and may be planRemote. Guards veto only this host's sessions: another
// host's guards decide over its own when the task arrives there.
func (p *Pool) decideLocked(t hearth.Task, hints matcher.Hints, now time.Time, across *acrossHosts) plan {
	switch p.cfg().Placement {
	case hearth.PlacementFresh:
		if p.room() {
			return plan{kind: planSpawn}
		}
		return plan{kind: planWait}
	case hearth.PlacementRoundRobin:
		return p.rotateLocked()
	}
	var pl plan
	local := across == nil
	exclude := p.unavailableLocked()
	if !local {
		exclude = append(exclude, across.exclude...)
	}
	d := p.decideIndexLocked(local, hints, now, exclude)
	for d.Choice == matcher.Reuse {
		if _, remote := p.remote[d.Winner]; remote {
			break
		}
		s := p.sessions[d.Winner]
		v := p.vetoLocked(s, d.Ranked[0].Total, t, now)
		if v == nil {
			break
		}
		pl.vetoes = append(pl.vetoes, veto{s, v})
		exclude = append(exclude, d.Winner)
		d = p.decideIndexLocked(local, hints, now, exclude)
	}
	pl.d = d
	if len(d.Ranked) > 0 {
		pl.score = d.Ranked[0].Total
	}
	if _, remote := p.remote[d.Winner]; remote && d.Choice == matcher.Reuse {
		pl.kind, pl.remote = planRemote, d.Winner
		return pl
	}
	switch {
	case d.Choice == matcher.Reuse && !d.Dormant:
		pl.kind, pl.s = planReuse, p.sessions[d.Winner]
	case d.Choice == matcher.Reuse && p.room():
		pl.kind, pl.s = planRehydrate, p.sessions[d.Winner]
	case d.Choice != matcher.Reuse && p.room():
		pl.kind, pl.stateless = planSpawn, p.statelessDormantLocked()
	default:
		// The pool is full.
		if w := p.busyWinnerLocked(local, hints, now, exclude); w != nil {
			pl.kind, pl.s = planWait, w
			break
		}
		if p.cfg().WhenFull == hearth.WhenFullRetireIdle {
			if v := p.idlestLocked(); v != nil {
				pl.kind, pl.s = planRetire, v
				break
			}
		}
		if s := p.bestEligibleLiveLocked(d, pl.vetoes); s != nil {
			pl.kind, pl.s, pl.below, pl.score = planReuse, s, true, totalOf(d, s.id)
			break
		}
		pl.kind = planWait
	}
	return pl
}

// rotateLocked is the round_robin placement: the pool fills up to
// max_sessions, then tasks go to the next session with a free slot in
// the order they were made. p.mu must be held.
func (p *Pool) rotateLocked() plan {
	var live []*session
	for _, s := range p.sessions {
		if s.status == statusLive || s.status == statusStarting {
			live = append(live, s)
		}
	}
	if len(live) < p.cfg().MaxSessions && p.room() {
		return plan{kind: planSpawn}
	}
	sortByCreation(live)
	for i := range live {
		turn := p.rotation + i
		if s := live[turn%len(live)]; s.status == statusLive && !s.stale && s.load < s.capacity {
			return plan{kind: planReuse, s: s, turn: turn + 1}
		}
	}
	return plan{kind: planWait}
}

// Place returns the decision the pool would make for t now, without
// acting on it: the same policy acquire acts on. An external agent's
// decision points at the session to resume.
func (p *Pool) Place(t hearth.Task) hearth.Decision {
	hints := normalizeHints(t.Hints, p.cfg().Workspace)
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if ext := p.cfg().External; ext != "" {
		return p.placeExternalLocked(t, hints, now)
	}
	return finish(p.decisionLocked(t, p.decideLocked(t, hints, now, nil), true), true)
}

// placeExternalLocked is Place for an external agent: nothing to spawn or
// rehydrate; the winning session's own program resumes it, where it
// worked.
func (p *Pool) placeExternalLocked(t hearth.Task, hints matcher.Hints, now time.Time) hearth.Decision {
	d := p.decideIndexLocked(true, hints, now, p.unavailableLocked())
	dec := p.baseDecisionLocked(t, plan{d: d})
	if len(d.Ranked) > 0 {
		dec.Score = d.Ranked[0].Total
	}
	dec.External = p.cfg().External
	if d.Winner != "" {
		dec.Action, dec.Session = hearth.ActionResume, d.Winner
		dec.Resume = hearth.ResumeCommand(dec.External, d.Winner)
		if s := p.sessions[d.Winner]; s != nil {
			dec.Workspace = s.workspace
		}
		dec.Reason = fmt.Sprintf("would resume %s session %s (%s): %s", dec.External, d.Winner, above(dec.Score, dec.Threshold), dec.Resume)
		return dec
	}
	dec.Action = hearth.ActionSpawned
	dec.Reason = fmt.Sprintf("would start a new %s session: %s", dec.External, spawnReason(d, dec.Threshold))
	return dec
}

// baseDecisionLocked is what every decision about t says, whatever it
// decided: the task, the matcher's outcome and ranking, the vetoes.
func (p *Pool) baseDecisionLocked(t hearth.Task, pl plan) hearth.Decision {
	dec := hearth.Decision{
		Task: t.ID, TaskName: t.Name, Agent: p.cfg().Agent, Threshold: p.cfg().Matcher.Threshold, Hints: t.Hints,
		Score: pl.score,
	}
	if pl.d.Choice != 0 {
		dec.Outcome, dec.Candidates = pl.d.Choice.String(), candidatesOf(pl.d)
		dec.Considered, dec.Eligible = pl.d.Considered, pl.d.Eligible
	}
	for _, v := range pl.vetoes {
		dec.Vetoed = append(dec.Vetoed, v.s.id+":"+v.v.Guard)
	}
	return dec
}

// decisionLocked describes a plan as a decision. would says it has not
// been acted on (Place): its reason is in the conditional. A spawn names
// no session until acquire has made it.
func (p *Pool) decisionLocked(t hearth.Task, pl plan, would bool) hearth.Decision {
	dec := p.baseDecisionLocked(t, pl)
	verb := func(past, cond string) string {
		if would {
			return cond
		}
		return past
	}
	placement := p.cfg().Placement
	switch pl.kind {
	case planReuse:
		dec.Action, dec.Session = hearth.ActionReused, pl.s.id
		switch {
		case placement == hearth.PlacementRoundRobin:
			dec.Reason = fmt.Sprintf("%s %s: its turn (placement = round_robin)", verb("reused", "would reuse"), pl.s.id)
		case pl.below:
			score, threshold := matcher.FormatScore(pl.score, dec.Threshold)
			dec.Reason = fmt.Sprintf("%s %s below the threshold (%s, not above %s): the pool is full at %d sessions", verb("reused", "would reuse"), pl.s.id, score, threshold, p.cfg().MaxSessions)
		default:
			dec.Reason = fmt.Sprintf("%s %s (%s)", verb("reused", "would reuse"), pl.s.id, above(pl.score, dec.Threshold))
		}
	case planRehydrate:
		dec.Action, dec.Session = hearth.ActionRehydrated, pl.s.id
		dec.Reason = fmt.Sprintf("%s dormant %s (%s)", verb("rehydrated", "would rehydrate"), pl.s.id, above(pl.score, dec.Threshold))
	case planSpawn, planRetire:
		dec.Action = hearth.ActionSpawned
		why := spawnReason(pl.d, dec.Threshold)
		switch placement {
		case hearth.PlacementFresh:
			why = "a new session per task (placement = fresh)"
		case hearth.PlacementRoundRobin:
			why = "filling the pool (placement = round_robin)"
		}
		dec.Reason = verb("spawned", "would spawn") + ": " + why
		if pl.stateless > 0 {
			// Otherwise "no session to reuse" puzzles whoever sees
			// dormant sessions listed.
			dec.Reason += fmt.Sprintf(" (%d dormant session(s) left out: their agent exported no state to rehydrate them with; see sdk.StateExporter)", pl.stateless)
		}
		if pl.kind == planRetire {
			// Retiring the idle session makes room; it was not above the
			// threshold (or it would have been reused), so the task then
			// gets a session of its own.
			dec.Retired = pl.s.id
		}
	case planRemote:
		owner, session, _ := strings.Cut(pl.remote, "/")
		dec.Action, dec.Session, dec.Host = hearth.ActionReused, session, owner
		dec.Reason = fmt.Sprintf("%s %s on host %s (%s)", verb("reused", "would reuse"), session, owner, above(pl.score, dec.Threshold))
	case planWait:
		dec.Action = hearth.ActionWait
		if pl.s != nil {
			dec.Session = pl.s.id
			dec.Reason = fmt.Sprintf("would wait: the pool is full at %d sessions, and busy %s would win (%s)", p.cfg().MaxSessions, pl.s.id, above(pl.score, dec.Threshold))
		} else {
			dec.Reason = fmt.Sprintf("would wait for a free slot: the pool is full at %d sessions, all busy", p.cfg().MaxSessions)
		}
	}
	return dec
}

// finish completes a decision's reason with what happened, or would
// happen, on the way.
func finish(d hearth.Decision, would bool) hearth.Decision {
	if d.Rehydration != "" {
		d.Reason = d.Rehydration + "; " + d.Reason
	}
	if len(d.Vetoed) > 0 {
		d.Reason = fmt.Sprintf("vetoed %s; %s", strings.Join(d.Vetoed, ", "), d.Reason)
	}
	if d.Retired != "" {
		verb := "retired"
		if would {
			verb = "would retire"
		}
		d.Reason = verb + " idle " + d.Retired + " to make room; " + d.Reason
	}
	if d.Waited >= time.Millisecond {
		d.Reason = fmt.Sprintf("waited %s (pool full); %s", d.Waited.Round(time.Millisecond), d.Reason)
	}
	return d
}

// acquire places a task and acts on the decision: it returns a live
// session with a slot reserved for the task, and the decision that chose
// it. After a wait, a retirement or a failed rehydration it decides
// again.
func (p *Pool) acquire(ctx context.Context, t hearth.Task) (*session, *hearth.Decision, error) {
	hints := normalizeHints(t.Hints, p.cfg().Workspace)
	start := p.now()
	var (
		// waited counts only time spent waiting for room, not retiring a
		// session to make some.
		waited              time.Duration
		retired, rehydrated string
		recorded            = make(map[string]bool)
	)
	for {
		p.mu.Lock()
		pl := p.decideLocked(t, hints, p.now(), nil)
		dec := p.decisionLocked(t, pl, false)
		// A vetoed session is a guard that fired: recorded once per task.
		var vetoes []veto
		for _, v := range pl.vetoes {
			if !recorded[v.s.id] {
				recorded[v.s.id] = true
				vetoes = append(vetoes, v)
			}
		}
		done := func(s *session) (*session, *hearth.Decision, error) {
			dec.Waited, dec.Rehydration = waited, rehydrated
			if retired != "" && dec.Retired == "" {
				dec.Retired = retired
			}
			dec = finish(dec, false)
			return s, &dec, nil
		}
		switch pl.kind {
		case planReuse:
			p.reserveLocked(pl.s)
			if p.cfg().Placement == hearth.PlacementRoundRobin {
				p.rotation = pl.turn
			}
			p.mu.Unlock()
			p.recordVetoes(vetoes, t)
			return done(pl.s)

		case planRehydrate:
			s := pl.s
			s.status = statusStarting
			p.procs++
			p.mu.Unlock()
			p.recordVetoes(vetoes, t)
			if err := p.start(ctx, s, true); err != nil {
				if ctx.Err() != nil {
					return nil, nil, err
				}
				// The session is no candidate any more: decide again,
				// and say why in the decision.
				p.logger.Warn("rehydration failed; placing the task elsewhere", "session", s.id, "error", err)
				rehydrated = fmt.Sprintf("rehydrating %s failed (%v)", s.id, err)
				continue
			}
			return done(s)

		case planSpawn:
			s := p.newSessionLocked()
			p.mu.Unlock()
			p.recordVetoes(vetoes, t)
			dec.Session = s.id
			dec.Reason = strings.Replace(dec.Reason, "spawned: ", "spawned "+s.id+": ", 1)
			if err := p.start(ctx, s, false); err != nil {
				return nil, nil, err
			}
			return done(s)

		case planRetire:
			v := pl.s
			v.status = statusRetiring
			p.mu.Unlock()
			p.recordVetoes(vetoes, t)
			p.retire(v, "retired to make room for task "+t.ID)
			retired = v.id

		case planWait:
			changed := p.changed
			p.waiting++
			p.mu.Unlock()
			p.recordVetoes(vetoes, t)
			waitStart := p.now()
			var woken bool
			select {
			case <-changed:
				woken = true
			case <-ctx.Done():
			case <-p.d.Closing:
			}
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
			switch {
			case woken:
				waited += p.now().Sub(waitStart)
			case ctx.Err() != nil:
				return nil, nil, fmt.Errorf("agent %q: waited %s for a free session (pool full: all %d sessions busy): %w",
					p.cfg().Agent, p.now().Sub(start).Round(time.Millisecond), p.cfg().MaxSessions, context.Cause(ctx))
			default:
				return nil, nil, hearth.ErrClosed
			}
		}
	}
}

// recordVetoes records the session_reuse guards that fired.
func (p *Pool) recordVetoes(vetoes []veto, t hearth.Task) {
	for _, v := range vetoes {
		p.emitGuard(guard.SessionReuse, v.v, v.s.id, t.ID)
	}
}

// Execute places t, runs it on the session it was placed on, and returns
// what it came to; the engine adds the quality gate. run is the run t
// belongs to, nil for none.
func (p *Pool) Execute(ctx context.Context, t hearth.Task, run Run) (*hearth.Outcome, error) {
	start := p.now()
	s, d, err := p.place(ctx, t)
	if err != nil {
		p.emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: t.Agent, Task: t.ID, Err: err.Error(), Message: t.ID + " could not be placed"})
		return nil, err
	}
	learned := p.expect(s, t)
	p.recordDecision(d, t.Run)
	res, uses, err := s.run(ctx, t, run)
	p.release(s, err != nil)
	if learned {
		// What went out at once showed s busy with t: the other hosts
		// would spawn rather than wait for it. Its end goes out at once
		// too.
		p.learned(s)
	}
	if err != nil {
		return nil, err
	}
	return &hearth.Outcome{
		TaskID: t.ID, Agent: t.Agent, Session: s.id, Decision: *d,
		Result: res, Artifact: res.Artifact, ToolUses: uses, Duration: p.now().Sub(start),
	}, nil
}

// expect records t's hints against s, the live session it was placed
// on, in its fingerprint and the index, at once: the next decision, here
// and (through the summary the decision's event marks changed) on the
// other hosts, sees s as knowing what t is about before the agent
// reports its first tool use. Tool uses then refresh the same entries.
// It says whether the hints taught s anything, and then tells
// Deps.Learned.
func (p *Pool) expect(s *session, t hearth.Task) bool {
	hints := normalizeHints(t.Hints, p.cfg().Workspace)
	p.mu.Lock()
	var c change
	if s.fp != nil && s.status == statusLive {
		c = s.fp.expect(hints)
		p.applyLocked(s, c)
	}
	p.mu.Unlock()
	if c.empty() {
		return false
	}
	p.learned(s)
	return true
}

// learned tells Deps.Learned that s's summary changed in a way the
// other hosts' placement should see now.
func (p *Pool) learned(s *session) {
	if p.d.Learned != nil {
		p.d.Learned(s.id)
	}
}

// recordDecision records a placement. The decision is part of the task's
// answer: durable before the task runs, so that a crash mid-task leaves
// the reason it ran where it did.
func (p *Pool) recordDecision(d *hearth.Decision, run string) {
	pend := p.emit(hearth.Event{Kind: hearth.EventDecision, Agent: d.Agent, Session: d.Session, Task: d.Task, Run: run, Message: d.Reason, Decision: d})
	if err := pend.Wait(context.Background()); err != nil {
		p.logger.Warn("cannot record a decision", "task", d.Task, "error", err)
	}
}

func spawnReason(d matcher.Decision, threshold float64) string {
	switch d.Choice {
	case matcher.SpawnNoCandidates:
		return "no session to reuse"
	case matcher.SpawnAllBusy:
		return fmt.Sprintf("all %d candidates busy", d.Considered)
	}
	if len(d.Ranked) == 0 {
		return "no session to reuse"
	}
	best := d.Ranked[0]
	score, th := matcher.FormatScore(best.Total, threshold)
	return fmt.Sprintf("best score %s (%s) not above %s", score, best.ID, th)
}

// above says that score is above threshold, with the digits it takes to
// show it (matcher.FormatScore): never "0.60 > 0.60".
func above(score, threshold float64) string {
	s, t := matcher.FormatScore(score, threshold)
	return s + " > " + t
}

func totalOf(d matcher.Decision, id string) float64 {
	for _, r := range d.Ranked {
		if r.ID == id {
			return r.Total
		}
	}
	return 0
}

// busyWinnerLocked returns the busy session that would win the task,
// scoring above the threshold, if there is one: the decision again, with
// the sessions that could take the task now (and the dormant ones, which
// need room the pool does not have) left out, besides exclude, over this
// host's sessions (local) or every host's.
func (p *Pool) busyWinnerLocked(local bool, hints matcher.Hints, now time.Time, exclude []string) *session {
	exclude = append([]string(nil), exclude...)
	for id, s := range p.sessions {
		if s.status == statusDormant || s.status == statusLive && s.load < s.capacity {
			exclude = append(exclude, id)
		}
	}
	d := p.decideIndexLocked(local, hints, now, exclude)
	if d.Choice == matcher.SpawnAllBusy && len(d.Ranked) > 0 && d.Ranked[0].Total > p.cfg().Matcher.Threshold {
		return p.sessions[d.Ranked[0].ID]
	}
	return nil
}

// bestEligibleLiveLocked is the highest-ranked live session with a free
// slot that no guard vetoed: the ranking lists eligible candidates first.
func (p *Pool) bestEligibleLiveLocked(d matcher.Decision, vetoes []veto) *session {
	usable := func(s *session) bool {
		if s == nil || s.status != statusLive || s.stale || s.load >= s.capacity {
			return false
		}
		for _, v := range vetoes {
			if v.s == s {
				return false
			}
		}
		return true
	}
	for _, r := range d.Ranked {
		if r.Eligible && !r.Dormant && usable(p.sessions[r.ID]) {
			return p.sessions[r.ID]
		}
	}
	// The ranking holds the top K only; any live session with room will
	// do.
	var best *session
	for _, s := range p.sessions {
		if usable(s) && (best == nil || s.lastActivity.After(best.lastActivity)) {
			best = s
		}
	}
	return best
}

// candidatesOf is the decision's ranking in the vocabulary; the factors
// are the matcher's own list, so a new one needs nothing here.
func candidatesOf(d matcher.Decision) []hearth.Candidate {
	out := make([]hearth.Candidate, 0, len(d.Ranked))
	for i := range d.Ranked {
		r := &d.Ranked[i]
		c := hearth.Candidate{
			Session: r.ID, Dormant: r.Dormant, Eligible: r.Eligible, Load: r.Load, Capacity: r.Capacity, Total: r.Total,
		}
		for _, f := range r.Factors(d.Weights) {
			c.Factors = append(c.Factors, hearth.Factor{Name: f.Name, Weight: f.Weight, Score: f.Score, Applied: f.Applied, Share: f.Share})
		}
		out = append(out, c)
	}
	return out
}

// sortByCreation orders sessions by when they were made, oldest first.
func sortByCreation(ss []*session) {
	slices.SortFunc(ss, func(a, b *session) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
}
