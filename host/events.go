package host

import (
	"context"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// EventKind names what happened.
type EventKind string

// Kinds of events.
const (
	EventSessionSpawned    EventKind = "session.spawned"
	EventSessionRehydrated EventKind = "session.rehydrated"
	EventSessionRetired    EventKind = "session.retired"
	EventSessionLost       EventKind = "session.lost"
	// EventSessionAttached: an external session reported for the first
	// time, or again after it went dormant.
	EventSessionAttached EventKind = "session.attached"
	EventTaskStarted     EventKind = "task.started"
	EventTaskProgress    EventKind = "task.progress"
	EventTaskSucceeded   EventKind = "task.succeeded"
	EventTaskFailed      EventKind = "task.failed"
	EventToolUsed        EventKind = "tool.used"
	EventDecision        EventKind = "decision"
	// EventGuardFired: a guard denied, blocked, vetoed or gated something;
	// Guard, Hook, Action and Message say which and why.
	EventGuardFired EventKind = "guard.fired"
	// EventConfigReloaded: a new config is in force.
	EventConfigReloaded EventKind = "config.reloaded"

	// Events of runs, in the run's own stream. Task names a task of the
	// run; From and To are the two sides of a transition.
	EventRunCreated EventKind = "run.created"
	// EventRunStatus: the run's status changed (From, To); Message says
	// why.
	EventRunStatus EventKind = "run.status"
	// EventRunTask: one of its tasks changed status (From, To).
	EventRunTask EventKind = "run.task"
	// EventRunStage: the run entered a stage (From, To).
	EventRunStage EventKind = "run.stage"
	// EventRunCheckpoint: a checkpoint was written; Message has its number
	// and label.
	EventRunCheckpoint EventKind = "run.checkpoint"
	// EventRunGate: a quality gate fired on a task's result; Guard and
	// Action say which and what it did.
	EventRunGate EventKind = "run.gate"
	// EventRunState: an agent wrote a section of the state document.
	EventRunState EventKind = "run.state"
	// EventRunContext: a task's prompt was given its ancestors' context.
	EventRunContext EventKind = "run.context"
	// EventRunRevisit: a task was revisited, and what came after it
	// treated by impact.
	EventRunRevisit EventKind = "run.revisit"
	// EventRunForked: the run was forked from another run's checkpoint.
	EventRunForked EventKind = "run.forked"
	// EventRunRepaired: resume repaired what validation found.
	EventRunRepaired EventKind = "run.repaired"
	// EventRunAbandoned: retention flagged the idle run abandoned.
	EventRunAbandoned EventKind = "run.abandoned"
	// EventRunDeleted: retention deleted the run; its final event.
	EventRunDeleted EventKind = "run.deleted"
)

// Event is a record of something that happened in the host.
type Event struct {
	// Seq orders events; 0 until the event is stored.
	Seq     uint64    `json:"seq,omitempty"`
	Time    time.Time `json:"time"`
	Kind    EventKind `json:"kind"`
	Agent   string    `json:"agent,omitempty"`
	Session string    `json:"session,omitempty"`
	Task    string    `json:"task,omitempty"`
	// Run is the run the event belongs to, if any.
	Run string `json:"run,omitempty"`
	// Message is a one-line human description.
	Message string `json:"message,omitempty"`
	// Err is the error text of failures.
	Err string `json:"error,omitempty"`
	// PID is the plugin process of session events.
	PID int `json:"pid,omitempty"`
	// Fraction is the progress of task.progress events.
	Fraction float64 `json:"fraction,omitempty"`
	// ToolUse is the tool use of tool.used events.
	ToolUse *sdk.ToolUse `json:"tool_use,omitempty"`
	// Decision is the placement of decision events.
	Decision *Decision `json:"decision,omitempty"`
	// Guard, Hook and Action describe guard.fired events.
	Guard  string `json:"guard,omitempty"`
	Hook   string `json:"hook,omitempty"`
	Action string `json:"action,omitempty"`
	// From and To are the two sides of a transition.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Cost is what a run task's attempt, or a task, cost.
	Cost float64 `json:"cost,omitempty"`
	// Duration is how long a finished task took (task.succeeded,
	// task.failed).
	Duration time.Duration `json:"duration,omitempty"`
}

// record converts an event for the store.
func (e Event) record() *storepb.Event {
	r := &storepb.Event{}
	e.fill(r)
	return r
}

// fill sets every field of r from e, reusing r's tool-use record: the
// host recycles the records of tool-use events, its hottest path.
func (e Event) fill(r *storepb.Event) {
	r.Seq, r.UnixNano, r.Kind, r.Agent, r.Session = 0, e.Time.UnixNano(), string(e.Kind), e.Agent, e.Session
	r.Task, r.Run, r.Message, r.Error, r.Pid, r.Fraction = e.Task, e.Run, e.Message, e.Err, int32(e.PID), e.Fraction
	r.Guard, r.Hook, r.Action, r.From, r.To, r.Cost = e.Guard, e.Hook, e.Action, e.From, e.To, e.Cost
	r.DurationNanos = int64(e.Duration)
	r.Decision = nil
	if e.Decision != nil {
		r.Decision = e.Decision.toRecord()
	}
	u := e.ToolUse
	if u == nil {
		r.ToolUse = nil
		return
	}
	tu := r.ToolUse
	if tu == nil {
		tu = &storepb.ToolUse{}
		r.ToolUse = tu
	}
	tu.Tool, tu.Paths, tu.Technologies, tu.Outcome = u.Tool, u.Paths, u.Technologies, outcomeToRecord(u.Outcome)
	tu.Error, tu.DurationNanos, tu.Cost, tu.CallId, tu.Kind = u.Error, int64(u.Duration), u.Cost, u.CallID, string(u.Kind)
}

// outcomeToRecord encodes an outcome as the store keeps it: 0 ok, 1
// error, 2 denied, the numbering records had before sdk.OutcomeUnset
// became the zero value, so that records written then read the same. An
// unset outcome, which no report should carry, is 3 and never reads as
// ok.
func outcomeToRecord(o sdk.Outcome) int32 {
	switch o {
	case sdk.OutcomeOK:
		return 0
	case sdk.OutcomeError:
		return 1
	case sdk.OutcomeDenied:
		return 2
	}
	return 3
}

// outcomeFromRecord is the inverse of outcomeToRecord.
func outcomeFromRecord(n int32) sdk.Outcome {
	switch n {
	case 0:
		return sdk.OutcomeOK
	case 1:
		return sdk.OutcomeError
	case 2:
		return sdk.OutcomeDenied
	}
	return sdk.OutcomeUnset
}

// eventFromRecord is the inverse of record.
func eventFromRecord(r *storepb.Event) Event {
	e := Event{
		Seq: r.GetSeq(), Time: time.Unix(0, r.GetUnixNano()), Kind: EventKind(r.GetKind()), Agent: r.GetAgent(),
		Session: r.GetSession(), Task: r.GetTask(), Message: r.GetMessage(), Err: r.GetError(),
		PID: int(r.GetPid()), Fraction: r.GetFraction(), Guard: r.GetGuard(), Hook: r.GetHook(), Action: r.GetAction(),
		Run: r.GetRun(), From: r.GetFrom(), To: r.GetTo(), Cost: r.GetCost(), Duration: time.Duration(r.GetDurationNanos()),
	}
	if tu := r.GetToolUse(); tu != nil {
		u := toolUseFromRecord(tu)
		e.ToolUse = &u
	}
	if d := r.GetDecision(); d != nil {
		dec := decisionFromRecord(d)
		e.Decision = &dec
	}
	return e
}

func toolUseFromRecord(tu *storepb.ToolUse) sdk.ToolUse {
	return sdk.ToolUse{
		CallID: tu.GetCallId(), Tool: tu.GetTool(), Kind: sdk.ToolKind(tu.GetKind()), Paths: tu.GetPaths(), Technologies: tu.GetTechnologies(),
		Outcome: outcomeFromRecord(tu.GetOutcome()), Error: tu.GetError(), Duration: time.Duration(tu.GetDurationNanos()), Cost: tu.GetCost(),
	}
}

// bus fans events out to subscribers. Publishing never blocks: a
// subscriber whose buffer is full misses events, and learns how many from
// the Dropped count of its subscription.
//
// Events the host emits reach subscribers only once they are on disk, in
// the order they were emitted (publishDurable): a subscriber that sees a
// run's event and then reads the run finds the event, and every write
// made before it, in the store. The store commits writes in the order
// they are queued, so waiting for each event in turn loses nothing.
// Tool-use events are the exception: they are published as they arrive,
// at up to 100k/s, and are durable before the task's stream is
// acknowledged.
type bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}

	// queue holds emitted events waiting for their writes; one drain
	// goroutine at a time (draining) publishes them in order.
	qmu      sync.Mutex
	queue    []queuedEvent
	draining bool
	drainWG  sync.WaitGroup
}

// queuedEvent is an event waiting for its write, or (fn set) something
// to do once every event queued before it is published.
type queuedEvent struct {
	e  Event
	p  *store.Pending
	fn func()
}

// publishDurable publishes e once p, its write, has settled, after every
// event queued before it. A failed write is logged by the store; the
// event is published all the same, as what happened.
func (b *bus) publishDurable(e Event, p *store.Pending) {
	b.enqueue(queuedEvent{e: e, p: p})
}

// afterPublished calls fn once every event queued so far is published: a
// run's handle says it is done only after its last events reached its
// subscribers.
func (b *bus) afterPublished(fn func()) {
	b.enqueue(queuedEvent{fn: fn})
}

func (b *bus) enqueue(q queuedEvent) {
	b.qmu.Lock()
	defer b.qmu.Unlock()
	b.queue = append(b.queue, q)
	if !b.draining {
		b.draining = true
		b.drainWG.Add(1)
		go b.drain()
	}
}

// wait returns once every queued event is published; the store must be
// closed or still committing.
func (b *bus) wait() { b.drainWG.Wait() }

// drain publishes queued events in order and returns when none is left.
func (b *bus) drain() {
	defer b.drainWG.Done()
	for {
		b.qmu.Lock()
		if len(b.queue) == 0 {
			b.draining = false
			b.queue = nil
			b.qmu.Unlock()
			return
		}
		q := b.queue[0]
		b.queue[0] = queuedEvent{}
		b.queue = b.queue[1:]
		b.qmu.Unlock()
		if q.fn != nil {
			q.fn()
			continue
		}
		_ = q.p.Wait(context.Background())
		b.publish(q.e)
	}
}

// Subscription receives events published after it was made.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	b       *bus
	mu      sync.Mutex
	dropped uint64
	closed  bool
	// run, when set, limits the subscription to the events of one run.
	run string
}

func (b *bus) subscribe(buffer int, run string) *Subscription {
	c := make(chan Event, buffer)
	s := &Subscription{C: c, c: c, b: b, run: run}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*Subscription]struct{})
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *bus) publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.run != "" && e.Run != s.run {
			continue
		}
		select {
		case s.c <- e:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
}

// Close ends the subscription and closes C.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, ok := s.b.subs[s]; ok {
		delete(s.b.subs, s)
		close(s.c)
	}
}

// Dropped is how many events the subscriber missed because its buffer was
// full.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Subscribe returns a subscription to the host's events, buffering up to
// buffer of them. Close it when done.
func (h *Host) Subscribe(buffer int) *Subscription { return h.events.subscribe(buffer, "") }

// SubscribeRun returns a subscription to the events of one run: its
// transitions, checkpoints and gates, and its tasks' placements,
// progress and results (tool uses are not among them).
func (h *Host) SubscribeRun(run string, buffer int) *Subscription {
	return h.events.subscribe(buffer, run)
}

// active reports whether anyone subscribes to every event: tool-use
// events are only built for the bus when someone listens to them.
func (b *bus) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.run == "" {
			return true
		}
	}
	return false
}
