package pool

import (
	"context"
	"fmt"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/matcher"
)

// Infos describes the pool's sessions as they are now, live ones with
// their current load. The fingerprint of a dormant session is in the
// store, not in memory: it is read from there.
func (p *Pool) Infos() []hearth.SessionInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]hearth.SessionInfo, 0, len(p.sessions))
	for _, s := range p.sessions {
		info := s.infoLocked()
		if s.fp == nil {
			if r, err := p.d.Store.SessionRecord(s.id); err == nil {
				info.Files, info.Directories, info.Technologies = record.NewestFirst(r.Files), record.NewestFirst(r.Dirs), record.NewestFirst(r.Techs)
			}
		}
		out = append(out, info)
	}
	return out
}

// Info describes session id as it is now, and whether the pool has it.
// Without its fingerprint when it is dormant (the store has it).
func (p *Pool) Info(id string) (hearth.SessionInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions[id]
	if s == nil {
		return hearth.SessionInfo{}, false
	}
	return s.infoLocked(), true
}

// infoLocked describes a session as it is now; without its fingerprint
// when it is dormant (the store has it). p.mu must be held.
func (s *session) infoLocked() hearth.SessionInfo {
	info := s.recordLocked().Info(false)
	info.Status, info.Load = s.status.String(), s.load
	return info
}

// Counts counts the pool's sessions by status (starting, live,
// retiring, dormant, lost), without reading the store.
func (p *Pool) Counts() map[string]int {
	n := make(map[string]int)
	p.mu.Lock()
	for _, s := range p.sessions {
		n[s.status.String()]++
	}
	p.mu.Unlock()
	return n
}

// Statuses lists the session statuses Counts counts, in order.
func Statuses() []string {
	out := make([]string, 0, statusLost+1)
	for st := statusStarting; st <= statusLost; st++ {
		out = append(out, st.String())
	}
	return out
}

// Candidate is session id as placement sees it: its entry in the
// matcher's index, and whether it has one (a session that is lost, or
// dormant without saved state, has none).
func (p *Pool) Candidate(id string) (matcher.Candidate, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.index.Candidate(id)
}

// Snapshot writes live session id's record, with its agent's exported
// state, and returns once it is durable: what the pool does in the
// background after each task, now.
func (p *Pool) Snapshot(ctx context.Context, id string) error {
	p.mu.Lock()
	s := p.sessions[id]
	live := s != nil && s.status == statusLive
	p.mu.Unlock()
	if !live {
		return fmt.Errorf("session %s is not live here: %w", id, hearth.ErrUnknownSession)
	}
	return s.save().Wait(ctx)
}

// Waiting is how many tasks wait for room in the pool now: it is full,
// and they wait for a busy session that would win them, or for any
// slot.
func (p *Pool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}
