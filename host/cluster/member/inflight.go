package member

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
)

// Forwards in flight, as the dashboard's cluster view lists them: the
// tasks this host forwards now (submitAcross records each step of its
// state machine here) and those it runs for other hosts (the flights of
// RunForwarded). Reading them takes two short locks and copies; nothing
// here is kept once a forward ends.

// sending are the forwards this host sends now.
type sending struct {
	mu sync.Mutex
	fw map[*hearth.ForwardInFlight]struct{}
}

// start records a forward of t from host from, placing; end forgets it.
func (s *sending) start(from string, t hearth.Task, now time.Time) (f *hearth.ForwardInFlight, end func()) {
	f = &hearth.ForwardInFlight{Task: t.ID, Agent: t.Agent, From: from, Started: now, Since: now, State: hearth.ForwardPlacing}
	s.mu.Lock()
	if s.fw == nil {
		s.fw = make(map[*hearth.ForwardInFlight]struct{})
	}
	s.fw[f] = struct{}{}
	s.mu.Unlock()
	return f, func() {
		s.mu.Lock()
		delete(s.fw, f)
		s.mu.Unlock()
	}
}

// set changes f under the lock that list reads it with.
func (s *sending) set(f *hearth.ForwardInFlight, change func(*hearth.ForwardInFlight)) {
	s.mu.Lock()
	change(f)
	s.mu.Unlock()
}

// sent records that f went to session on host to (empty: a new session).
func (s *sending) sent(f *hearth.ForwardInFlight, to, session string, now time.Time) {
	s.set(f, func(f *hearth.ForwardInFlight) {
		f.Attempt++
		f.To, f.Session, f.Since, f.State = to, session, now, hearth.ForwardSent
	})
}

func (s *sending) list() []hearth.ForwardInFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]hearth.ForwardInFlight, 0, len(s.fw))
	for f := range s.fw {
		out = append(out, *f)
	}
	return out
}

// Forwards lists the forwards in flight that this host sends or runs,
// oldest first. Empty until the host joined.
func (m *Member) Forwards(context.Context) ([]hearth.ForwardInFlight, error) {
	out := m.sending.list()
	m.mu.Lock()
	for _, f := range m.flights {
		out = append(out, f.in)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b hearth.ForwardInFlight) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.Task, b.Task))
	})
	return out, nil
}
