package pool

import (
	"github.com/hearth-dev/hearth/matcher"
)

// Update takes a new definition of the pool's agent. A new matcher
// configuration rebuilds the index from its candidates; stale marks the
// live sessions as running the old program: they are no longer chosen, and
// are retired once idle.
func (p *Pool) Update(sp Spec, stale bool) error {
	if err := sp.Check(); err != nil {
		return err
	}
	p.mu.Lock()
	old := p.spec.Load()
	if !stale && sp.Launch.Confine != nil && old.Launch.Confine != nil {
		// The same definition: its grants stay pinned where they led at
		// first, or a reload would bless a link planted since.
		c := *sp.Launch.Confine
		c.Pins = old.Launch.Confine.Pins
		sp.Launch.Confine = &c
	}
	p.spec.Store(&sp)
	if sp.Matcher != old.Matcher {
		if ix, err := matcher.NewIndex(sp.Matcher); err == nil {
			ix.PutAll(p.index.Candidates())
			p.index = ix
		}
	}
	var idle []*session
	// An external agent's sessions have no process to replace: they stay.
	if stale && sp.External == "" {
		for _, s := range p.sessions {
			if s.status == statusLive {
				s.stale = true
				if s.load == 0 {
					s.status = statusRetiring
					idle = append(idle, s)
				}
			}
		}
	}
	p.notifyLocked()
	p.mu.Unlock()
	p.retireInBackground(idle, "its agent's definition changed")
	return nil
}

// Drain retires a removed agent's sessions: idle ones now, busy ones when
// their task ends.
func (p *Pool) Drain() {
	p.mu.Lock()
	p.removed = true
	var idle []*session
	for _, s := range p.sessions {
		if s.status == statusLive {
			s.stale = true
			if s.load == 0 {
				s.status = statusRetiring
				idle = append(idle, s)
			}
		}
	}
	p.notifyLocked()
	p.mu.Unlock()
	p.retireInBackground(idle, "its agent was removed from the config")
}

func (p *Pool) retireInBackground(sessions []*session, why string) {
	for _, s := range sessions {
		p.bg.Go(func() { p.retire(s, why) })
	}
}
