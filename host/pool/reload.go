package pool

import (
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/matcher"
)

// Update takes a new definition of the pool's agent. A new matcher
// configuration rebuilds the index from its candidates; stale marks the
// live sessions as running the old program: they are no longer chosen, and
// are retired once idle.
func (p *Pool) Update(a *config.Agent, m config.Matcher, argv, env []string, stale bool) {
	sp := newSpec(a, m, argv, env)
	p.mu.Lock()
	old := p.spec.Load()
	if !stale {
		// The same definition: its grants stay pinned where they led at
		// first, or a reload would bless a link planted since.
		sp.pins = old.pins
	}
	p.spec.Store(sp)
	if sp.mcfg != old.mcfg {
		if ix, err := matcher.NewIndex(sp.mcfg); err == nil {
			ix.PutAll(p.index.Candidates())
			p.index = ix
		}
	}
	var idle []*session
	// An external agent's sessions have no process to replace: they stay.
	if stale && a.External == "" {
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
