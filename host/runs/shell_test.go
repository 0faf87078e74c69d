package runs

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
)

// The kit of the shell's tests: the run engine over a store in memory
// (memStore, the package's own seam: Store) and the scripted agent
// (internal/testagent) run in process, given the run's calls as its
// sdk.RunCallbacks. What these tests hold is the run engine's work:
// operations on runs, the loop and its attempts, what is written; the
// engine keeps the tests that need a plugin process or Badger.

// memStore is a Store in memory. Like the store, it keeps copies: what
// it is given and what it returns are not the schedule's own records.
type memStore struct {
	mu          sync.Mutex
	heads       map[string]*record.Run
	graphs      map[string]*record.Graph
	tasks       map[string]map[string]*record.Task
	outputs     map[string][]*record.Output
	checkpoints map[string][]*record.Checkpoint
	events      []hearth.Event
	dir         string
	// fail, when set, fails the writes it returns an error for.
	fail func(w record.RunWrite) error
	// changed is closed, and replaced, at every write: what a test waits
	// on (await).
	changed chan struct{}
}

// wrote wakes whoever awaits a write. m.mu must be held.
func (m *memStore) wrote() {
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// await returns once cond holds, checked at every write, or fails t
// after runTimeout.
func (m *memStore) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(runTimeout)
	for {
		m.mu.Lock()
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		ch := m.changed
		m.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: not within %s", what, runTimeout)
		}
	}
}

func newMemStore(t *testing.T) *memStore {
	return &memStore{heads: map[string]*record.Run{}, graphs: map[string]*record.Graph{}, tasks: map[string]map[string]*record.Task{},
		outputs: map[string][]*record.Output{}, checkpoints: map[string][]*record.Checkpoint{}, dir: t.TempDir()}
}

type settled struct{ err error }

func (s settled) Wait(context.Context) error { return s.err }

func (m *memStore) SaveRun(id string, w record.RunWrite) Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		if err := m.fail(w); err != nil {
			return settled{err}
		}
	}
	w = copyWrite(w)
	if w.Graph != nil {
		m.graphs[id] = w.Graph
	}
	if m.tasks[id] == nil {
		m.tasks[id] = map[string]*record.Task{}
	}
	for _, t := range w.Tasks {
		m.tasks[id][t.Name] = t
	}
	if c := w.Checkpoint; c != nil {
		m.checkpoints[id] = append(m.checkpoints[id], c)
	}
	m.outputs[id] = append(m.outputs[id], w.Outputs...)
	m.events = append(m.events, w.Events...)
	if w.Run != nil {
		m.heads[id] = w.Run
	}
	m.wrote()
	return settled{}
}

func (m *memStore) SaveRunStatus(id string, head *record.Run) Pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heads[id] = head.Clone()
	m.wrote()
	return settled{}
}

func (m *memStore) RunRecord(id string) (*record.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.heads[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
	}
	return h.Clone(), nil
}

func (m *memStore) RunRecords() ([]*record.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*record.Run
	for _, id := range slices.Sorted(mapsKeys(m.heads)) {
		out = append(out, m.heads[id].Clone())
	}
	return out, nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (m *memStore) RunGraph(id string) (*record.Graph, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.graphs[id]
	if !ok {
		return nil, fmt.Errorf("graph of run %s: not found", id)
	}
	return g, nil
}

func (m *memStore) RunTasks(id string) (map[string]*record.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]*record.Task{}
	for name, t := range m.tasks[id] {
		out[name] = t.Clone()
	}
	return out, nil
}

func (m *memStore) TaskOutputs(id string) ([]*record.Output, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.outputs[id])
	slices.SortStableFunc(out, func(a, b *record.Output) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), a.Version-b.Version)
	})
	return out, nil
}

func (m *memStore) Checkpoints(id string) ([]*record.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.checkpoints[id]), nil
}

func (m *memStore) Checkpoint(id string, seq uint64) (*record.Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.checkpoints[id] {
		if c.Seq == seq {
			return c, nil
		}
	}
	return nil, fmt.Errorf("checkpoint %d of run %s: not found", seq, id)
}

func (m *memStore) NewestCheckpoint(id string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n uint64
	for _, c := range m.checkpoints[id] {
		n = max(n, c.Seq)
	}
	return n, nil
}

func (m *memStore) ResolveRunID(id string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.heads[id]; ok {
		return id, nil
	}
	var matches []string
	for k := range m.heads {
		if strings.HasPrefix(k, id) && id != "" {
			matches = append(matches, k)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	return "", fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
}

func (m *memStore) DeleteRun(_ context.Context, id string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	head, ok := m.heads[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
	}
	delete(m.heads, id)
	delete(m.graphs, id)
	delete(m.tasks, id)
	delete(m.outputs, id)
	delete(m.checkpoints, id)
	var orphans []string
	for _, f := range head.Files {
		orphans = append(orphans, f.SHA256)
	}
	return orphans, nil
}

func (m *memStore) PutFile(r io.Reader) (string, int64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", 0, err
	}
	sum := sha256.Sum256(b)
	sha := hex.EncodeToString(sum[:])
	return sha, int64(len(b)), os.WriteFile(m.BlobPath(sha), b, 0o400)
}

func (m *memStore) BlobPath(sha string) string { return filepath.Join(m.dir, sha) }

func (m *memStore) RemoveFiles(shas []string) error {
	for _, sha := range shas {
		if err := os.Remove(m.BlobPath(sha)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

var _ Store = (*memStore)(nil)

// runEvents are run id's events, in the order they were written.
func (m *memStore) runEvents(id string) []hearth.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []hearth.Event
	for _, e := range m.events {
		if e.Run == id {
			out = append(out, e)
		}
	}
	return out
}

// current is the current output of task in run id.
func (m *memStore) current(t *testing.T, id, name string) *record.Output {
	t.Helper()
	m.mu.Lock()
	v := 0
	if rt := m.tasks[id][name]; rt != nil {
		v = rt.Version
	}
	m.mu.Unlock()
	outs, _ := m.TaskOutputs(id)
	for _, o := range outs {
		if o.Task == name && o.Version == v && v > 0 {
			return o
		}
	}
	t.Fatalf("task %s of run %s has no current output", name, id)
	return nil
}

// outputs are run id's output versions by task, oldest first.
func (m *memStore) outputsByTask(id string) map[string][]*record.Output {
	outs, _ := m.TaskOutputs(id)
	by := map[string][]*record.Output{}
	for _, o := range outs {
		by[o.Task] = append(by[o.Task], o)
	}
	return by
}

// head is run id's head, as written.
func (m *memStore) head(t *testing.T, id string) *record.Run {
	t.Helper()
	h, err := m.RunRecord(id)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// task is the record of task name of run id, as written.
func (m *memStore) task(id, name string) record.Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rt := m.tasks[id][name]; rt != nil {
		return *rt
	}
	return record.Task{Name: name, Status: hearth.TaskPending}
}

// fixture is a run engine over a memStore, running the scripted agent.
type fixture struct {
	t     *testing.T
	runs  *Runs
	store *memStore
	agent *testagent.Agent
	// rules are the guards in force: task_admission, transition and
	// task_result (quality gates).
	mu    sync.Mutex
	rules []*guard.Rule
	now   func() time.Time
}

// newFixture starts a run engine; its runs stop when the test ends.
func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, store: newMemStore(t), agent: testagent.New("scripted", 4), now: time.Now}
	f.runs = f.engine(f.deps())
	return f
}

// deps are the run engine's deps over f's store and agent.
func (f *fixture) deps() Deps {
	return Deps{
		Store: f.store, Logger: hclog.NewNullLogger(), Now: func() time.Time { return f.now() },
		Emit: func(e hearth.Event) Pending {
			f.store.mu.Lock()
			f.store.events = append(f.store.events, e)
			f.store.wrote()
			f.store.mu.Unlock()
			return settled{}
		},
		Publish:        func([]hearth.Event, Pending) {},
		AfterPublished: func(fn func()) { fn() },
		Enter:          func() (func(), error) { return func() {}, nil },
		Runnable: func(agent string) error {
			if !slices.Contains([]string{"scripted", "writer", "reader"}, agent) {
				return fmt.Errorf("%w %q", hearth.ErrUnknownAgent, agent)
			}
			return nil
		},
		Guards:  f,
		Execute: f.execute,
	}
}

// engine makes a run engine of d, whose runs stop when the test ends.
func (f *fixture) engine(d Deps) *Runs {
	m := New(d)
	f.t.Cleanup(func() {
		// The host's shutdown, with its grace period over at once: tasks
		// still running are cancelled.
		m.Stop()
		m.mu.Lock()
		for _, r := range m.runs {
			r.cancel(hearth.ErrClosed)
		}
		m.mu.Unlock()
		m.Wait()
	})
	return m
}

// guard adds a guard rule.
func (f *fixture) guard(s guard.Spec) {
	r, err := guard.Compile(s)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.rules = append(f.rules, r)
	f.mu.Unlock()
}

func (f *fixture) set() *guard.Set {
	f.mu.Lock()
	defer f.mu.Unlock()
	return guard.NewSet(slices.Clone(f.rules))
}

func (f *fixture) Admit(t hearth.Task, run guard.Run) *guard.Verdict {
	return f.set().First(guard.TaskAdmission, guard.Match{Agent: t.Agent, Task: t.Name}, guard.AdmissionEnv{Task: guard.TaskOf(t), Run: run, Now: f.now()})
}

func (f *fixture) Transition(run guard.Run, from, to string) *guard.Verdict {
	return f.set().First(guard.Transition, guard.Match{From: from, To: to}, guard.TransitionEnv{From: from, To: to, State: run.State, Now: f.now(),
		Run: guard.Run{ID: run.ID, Pipeline: run.Pipeline, Stage: from, State: run.State}})
}

// execute runs an attempt on the scripted agent, in process, the way the
// engine's placement would on a session: the run's task success goes to
// the run (Run.Succeeded), and the task_result guards gate the result.
func (f *fixture) execute(ctx context.Context, t hearth.Task, run *Run) (*hearth.Outcome, error) {
	start := f.now()
	st := sdk.Task{ID: t.ID, Run: t.Run, Name: t.Name, Session: "scripted-1", Prompt: t.Prompt, Hints: t.Hints, Upstream: t.Upstream,
		Context: t.Context, Feedback: t.Feedback, IdempotencyKey: cmp.Or(t.IdempotencyKey, t.ID), Attempt: max(t.Attempt, 1), Metadata: t.Metadata}
	res, err := f.agent.Run(ctx, st, runCalls{run: run, agent: t.Agent, task: t.Name})
	if err != nil {
		return nil, fmt.Errorf("agent %q (session scripted-1): run task %s: %w", t.Agent, t.ID, err)
	}
	run.Succeeded(hearth.Event{Kind: hearth.EventTaskSucceeded, Agent: t.Agent, Session: "scripted-1", Task: t.ID, Run: t.Run, Message: t.ID + " succeeded", Cost: res.Cost})
	out := &hearth.Outcome{TaskID: t.ID, Agent: t.Agent, Session: "scripted-1", Result: res, Artifact: res.Artifact,
		Decision: hearth.Decision{Action: hearth.ActionReused, Session: "scripted-1"}, Duration: f.now().Sub(start)}
	set := f.set()
	m := guard.Match{Agent: t.Agent, Task: t.Name}
	if set.Any(guard.TaskResult, m) {
		env := guard.ResultEnv{Result: guard.Result{Output: res.Output, Metrics: res.Metrics, Cost: res.Cost}, Task: guard.TaskOf(t), Run: run.Guard(), Now: f.now()}
		if v := set.First(guard.TaskResult, m, env); v != nil {
			out.Gate = &hearth.Gate{Guard: v.Guard, Action: hearth.GateAction(v.Action), Feedback: v.Message, To: v.To, MaxLoops: v.MaxLoops}
		}
	}
	return out, nil
}

// runCalls are a run's task's calls, as an agent has them (what the
// pool's runCallbacks are in the engine).
type runCalls struct {
	run   *Run
	agent string
	task  string
}

func (c runCalls) CheckToolUse(context.Context, sdk.ToolCall) (sdk.Verdict, error) {
	return sdk.Verdict{Allow: true}, nil
}
func (c runCalls) ReportToolUse(context.Context, sdk.ToolUse) error { return nil }
func (c runCalls) ReportProgress(_ context.Context, p sdk.Progress) error {
	return nil
}
func (c runCalls) Logger() hclog.Logger { return hclog.NewNullLogger() }
func (c runCalls) State(ctx context.Context, section string) (json.RawMessage, error) {
	return c.run.State(ctx, c.agent, section)
}
func (c runCalls) SetState(ctx context.Context, section string, value any) error {
	return c.run.SetState(ctx, c.agent, c.task, section, value)
}
func (c runCalls) Checkpoint(ctx context.Context, label string) (uint64, error) {
	return c.run.Checkpoint(ctx, c.task, label)
}
func (c runCalls) Files(ctx context.Context) ([]sdk.File, error) { return c.run.Files(ctx) }
func (c runCalls) DoneChunks(ctx context.Context, file string) ([]int, error) {
	return c.run.DoneChunks(ctx, file)
}
func (c runCalls) MarkChunk(ctx context.Context, file string, chunk int) error {
	return c.run.MarkChunk(ctx, file, chunk)
}

var _ sdk.RunCallbacks = runCalls{}

// clock is a run engine's clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// runTimeout bounds each run a test waits for.
const runTimeout = time.Minute

// pipe builds a pipeline of the scripted agent's tasks: name, prompt, and
// the tasks it depends on; retries wait a millisecond.
func pipe(name string, tasks ...[]string) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: name}
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, &hearth.PipelineTask{Name: t[0], Agent: "scripted", Prompt: t[1], DependsOn: t[2:]})
	}
	p.Retry = hearth.Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	return p
}

// wait waits for a run's handle.
func (f *fixture) wait(h *Handle, err error) (hearth.RunInfo, error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	info, err := h.Wait(ctx)
	if ctx.Err() != nil {
		f.t.Fatalf("run %s did not stop within %s", h.ID, runTimeout)
	}
	return info, err
}

// start starts a run of p and waits for it to stop.
func (f *fixture) start(p *hearth.Pipeline, opts hearth.RunOptions) (hearth.RunInfo, error) {
	f.t.Helper()
	return f.wait(f.runs.Start(context.Background(), p, opts))
}

// kinds are run id's events as "kind task:from>to".
func (f *fixture) kinds(id string) []string {
	var out []string
	for _, e := range f.store.runEvents(id) {
		s := string(e.Kind)
		if e.From != "" || e.To != "" {
			s += " " + e.Task + ":" + e.From + ">" + e.To
		}
		out = append(out, s)
	}
	return out
}

// messages are run id's events' messages, in order.
func (f *fixture) messages(id string) []string {
	var out []string
	for _, e := range f.store.runEvents(id) {
		out = append(out, e.Message)
	}
	return out
}

// labels are run id's checkpoints' labels, in order.
func (f *fixture) labels(id string) []string {
	cps, _ := f.store.Checkpoints(id)
	var out []string
	for _, c := range cps {
		out = append(out, c.Label)
	}
	return out
}
