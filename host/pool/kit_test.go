package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
)

// The kit of this package's tests: a session store and an event sink in
// memory (the pool's own seams, SessionStore and Events), and sessions
// made by hand, so that placement is tested on exactly the candidates a
// test describes, without a process or Badger.

// memStore is a SessionStore in memory.
type memStore struct {
	mu     sync.Mutex
	recs   map[string]record.Session
	state  map[string][]byte
	events map[string][]hearth.Event
	seq    uint64
	// fail, when set, fails every write.
	fail error
}

func newMemStore() *memStore {
	return &memStore{recs: map[string]record.Session{}, state: map[string][]byte{}, events: map[string][]hearth.Event{}}
}

// done is a write already settled.
type done struct{ err error }

func (d done) Wait(context.Context) error { return d.err }

func (m *memStore) SaveSession(rec record.Session) Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return done{m.fail}
	}
	m.recs[rec.ID] = rec
	return done{}
}

func (m *memStore) SaveSessionState(rec record.Session, state []byte) Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return done{m.fail}
	}
	m.recs[rec.ID], m.state[rec.ID] = rec, append([]byte(nil), state...)
	return done{}
}

var errNoRecord = errors.New("no such record")

func (m *memStore) SessionRecord(id string) (record.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	if !ok {
		return record.Session{}, errNoRecord
	}
	return r, nil
}

func (m *memStore) SessionState(id string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.state[id]
	return s, ok, nil
}

func (m *memStore) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	delete(m.state, id)
	delete(m.events, id)
	return nil
}

func (m *memStore) Events(stream string, after uint64, limit int) ([]hearth.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []hearth.Event
	for _, e := range m.events[stream] {
		if e.Seq > after && (limit == 0 || len(out) < limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (m *memStore) AppendBatch(evs []hearth.Event) (uint64, Pending) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range evs {
		m.seq++
		e.Seq = m.seq
		m.events[e.Session] = append(m.events[e.Session], e)
	}
	return m.seq, done{}
}

// memEvents is the engine's event bus, as a list.
type memEvents struct {
	mu  sync.Mutex
	evs []hearth.Event
}

func (e *memEvents) Append(ev hearth.Event) (uint64, Pending) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return uint64(len(e.evs)), done{}
}

func (e *memEvents) ToolUse(*hearth.Event) {}

// kinds lists the kinds of the events emitted so far.
func (e *memEvents) kinds() []hearth.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []hearth.EventKind
	for _, ev := range e.evs {
		out = append(out, ev.Kind)
	}
	return out
}

// testNow is the clock of the kit's pools.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// kit is a pool over a memStore, its events, and its guards.
type kit struct {
	p      *Pool
	store  *memStore
	events *memEvents
}

// newKit makes the pool of sp over a store in memory, with guards.
func newKit(t testing.TB, sp Spec, guards ...guard.Spec) *kit {
	t.Helper()
	var rules []*guard.Rule
	for _, g := range guards {
		r, err := guard.Compile(g)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	set := guard.NewSet(rules)
	k := &kit{store: newMemStore(), events: &memEvents{}}
	closing := make(chan struct{})
	p, err := New(sp, Deps{
		Store: k.store, Events: k.events, Guards: func() *guard.Set { return set },
		Logger: hclog.NewNullLogger(), Now: func() time.Time { return testNow },
		Closing: closing, HardStop: context.Background(),
	})
	if err != nil {
		t.Fatal(err)
	}
	k.p = p
	t.Cleanup(func() { close(closing); p.Wait() })
	return k
}

// hand describes a session made by hand: its status, its load, what it
// read (paths relative to the workspace), how long ago it was active.
type hand struct {
	id       string
	status   sessionStatus
	load     int
	capacity int
	reads    []string
	idle     time.Duration
	// stateless: a dormant session whose agent exported no state.
	stateless bool
	tasks     int
}

// add puts the sessions into the pool as placement finds them: live and
// starting ones directly (no process is started for them, and placement
// never touches one), dormant ones the way a restart finds them, from
// their records in the store (Restore).
func (k *kit) add(t testing.TB, sessions ...hand) {
	t.Helper()
	var dormant []record.Session
	for _, h := range sessions {
		fp := newFingerprint(k.p.cfg().Fingerprint)
		for _, f := range h.reads {
			fp.observe(sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: []string{f}, Outcome: sdk.OutcomeOK}, k.p.cfg().Workspace)
		}
		at := testNow.Add(-h.idle)
		if h.status == statusDormant {
			dormant = append(dormant, record.Session{
				ID: h.id, Agent: k.p.cfg().Agent, Status: record.SessionDormant, Created: at, LastActivity: at,
				Capacity: max(h.capacity, 1), HasState: !h.stateless, Tasks: uint64(h.tasks),
				Files: fp.files.keys(), Dirs: fp.dirs.keys(), Techs: fp.techs.keys(),
			})
			continue
		}
		k.p.mu.Lock()
		s := newSession(k.p, h.id, at)
		s.status, s.load, s.capacity, s.fp, s.tasks = h.status, h.load, max(h.capacity, 1), fp, uint64(h.tasks)
		if h.status == statusLive || h.status == statusStarting || h.status == statusRetiring {
			k.p.procs++
		}
		k.p.sessions[s.id] = s
		k.p.indexLocked(s)
		k.p.mu.Unlock()
	}
	if len(dormant) > 0 {
		if err := k.p.Restore(dormant); err != nil {
			t.Fatal(err)
		}
	}
}
