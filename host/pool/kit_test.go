package pool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/plugin"
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

// memEvents is the engine's event bus, as a list; like the engine's, it
// writes the events of sessions to the store too (their tool uses are
// replayed from there on a restart).
type memEvents struct {
	mu    sync.Mutex
	evs   []hearth.Event
	store *memStore
	// changed is closed, and replaced, at every event: what a test
	// waits on (await).
	changed chan struct{}
}

func (e *memEvents) Append(ev hearth.Event) (uint64, Pending) {
	e.add(ev)
	if e.store != nil && ev.Session != "" {
		return e.store.AppendBatch([]hearth.Event{ev})
	}
	return 0, done{}
}

// ToolUse is told of a tool use as it arrives (its store write comes in
// a batch): kept with the other events.
func (e *memEvents) ToolUse(ev *hearth.Event) { e.add(*ev) }

func (e *memEvents) add(ev hearth.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	if e.changed != nil {
		close(e.changed)
	}
	e.changed = make(chan struct{})
}

// await returns once cond holds, checked at every event, or fails t
// after a minute.
func (e *memEvents) await(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		e.mu.Lock()
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		ch := e.changed
		e.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: not within a minute", what)
		}
	}
}

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

// hostTLS are the keys the tests' plugins are reached with, made once.
var hostTLS = sync.OnceValues(plugin.NewHostTLS)

func testTLS(t testing.TB) *plugin.HostTLS {
	t.Helper()
	tls, err := hostTLS()
	if err != nil {
		t.Fatal(err)
	}
	return tls
}

// kit is a pool over a memStore, its events, and its guards.
type kit struct {
	p      *Pool
	spec   Spec
	set    *guard.Set
	store  *memStore
	events *memEvents
	// now is the pools' clock: time.Now unless a test moves its own.
	now func() time.Time
}

// restart stops the kit's pool as a host that shuts down does (its live
// sessions retired: their state exported and kept) and opens another on
// the same store, as the next host does.
func (k *kit) restart(t testing.TB) {
	t.Helper()
	k.p.RetireAll("the host shut down")
	k.p.Wait()
	k.p = k.open(t, k.spec, k.set)
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
	store := newMemStore()
	k := &kit{spec: sp, set: set, store: store, events: &memEvents{store: store}, now: time.Now}
	k.p = k.open(t, sp, set)
	return k
}

// open makes a pool of sp over the kit's store, as a host that starts
// on it does (its sessions restored from the store, dormant).
func (k *kit) open(t testing.TB, sp Spec, set *guard.Set) *Pool {
	t.Helper()
	closing := make(chan struct{})
	p, err := New(sp, Deps{
		Store: k.store, Events: k.events, Guards: func() *guard.Set { return set },
		Logger: hclog.NewNullLogger(), Now: func() time.Time { return k.now() }, TLS: testTLS(t),
		Closing: closing, HardStop: context.Background(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var recs []record.Session
	k.store.mu.Lock()
	for _, r := range k.store.recs {
		if r.Agent == sp.Agent {
			recs = append(recs, r)
		}
	}
	k.store.mu.Unlock()
	if err := p.Restore(recs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(closing)
		// Sessions made by hand have no process to stop.
		p.mu.Lock()
		for _, s := range p.sessions {
			if s.proc == nil && s.external == "" && s.status != statusDormant && s.status != statusLost {
				s.status = statusDormant
			}
		}
		p.mu.Unlock()
		p.RetireAll("the test ended")
		p.Wait()
	})
	return p
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
		at := k.p.now().Add(-h.idle)
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

// pluginSpec is agent "scripted", run by this test binary as its plugin
// (mode: "agent", or "stateless", which exports no state), unconfined,
// working in the temporary directory.
func pluginSpec(mode string) Spec {
	sp := testSpec("scripted")
	sp.Workspace = os.TempDir()
	// A -race binary sleeps a second on exit so that late races get
	// reported; plugins are stopped all the time here, so skip it.
	sp.Launch = process.Launch{Argv: []string{os.Args[0]}, Env: []string{envPlugin + "=" + mode, "GORACE=atexit_sleep_ms=0"},
		Dir: sp.Workspace, StartTimeout: 20 * time.Second, HealthInterval: 10 * time.Second}
	return sp
}

// reads is a scripted prompt that reads files, and the hints that name
// them.
func reads(files ...string) (string, sdk.Hints) {
	var b strings.Builder
	dirs := map[string]bool{}
	var hints sdk.Hints
	for _, f := range files {
		b.WriteString("read:" + f + ";")
		hints.Files = append(hints.Files, f)
		if d := filepath.Dir(f); !dirs[d] {
			dirs[d] = true
			hints.Directories = append(hints.Directories, d)
		}
	}
	hints.Technologies = []string{"go"}
	return b.String(), hints
}

// run places t on a session of the kit's pool and runs it, as the
// engine's Submit does (with an ID, for the pool's agent).
func (k *kit) run(t hearth.Task) (*hearth.Outcome, error) {
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	t.Agent = k.p.cfg().Agent
	return k.p.Execute(context.Background(), t, nil)
}

// runReads runs a task that reads files, failing the test on an error.
func (k *kit) runReads(t testing.TB, files ...string) *hearth.Outcome {
	t.Helper()
	prompt, hints := reads(files...)
	out, err := k.run(hearth.Task{Prompt: prompt, Hints: hints})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// info is session id as the pool describes it, its fingerprint from the
// store when it is dormant.
func (k *kit) info(t testing.TB, id string) hearth.SessionInfo {
	t.Helper()
	for _, s := range k.p.Infos() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no session %s", id)
	return hearth.SessionInfo{}
}

// events are the events emitted so far of kind.
func (e *memEvents) of(kind hearth.EventKind) []hearth.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []hearth.Event
	for _, ev := range e.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}
