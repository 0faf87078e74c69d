package engine

import (
	"context"
	"sync"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/store"
)

// emit records an event in the store and publishes it to subscribers
// once it is on disk. The write is not waited for: events that
// acknowledge something to someone (tool uses, decisions) are waited for
// by their callers.
func (e *Engine) emit(ev hearth.Event) *store.Pending {
	_, p := e.append(ev)
	return p
}

// append is emit, with the event's sequence number in the store.
func (e *Engine) append(ev hearth.Event) (uint64, *store.Pending) {
	if ev.Time.IsZero() {
		ev.Time = e.now()
	}
	if e.observe != nil {
		e.observe(&ev)
	}
	seq, p := e.store.Append(ev)
	e.events.publishDurable(ev, p)
	if ev.Session != "" {
		// Spawned, retired, a task started or done: the session's
		// summary and the host's load may have changed.
		e.changed(ev.Session, true)
	}
	return seq, p
}

// publishWritten publishes events that another write, p, carried (a
// run's events travel with its records, record.RunWrite.Events): as emit
// does, once p is durable, in order with everything emitted before.
func (e *Engine) publishWritten(evs []hearth.Event, p pending) {
	for _, ev := range evs {
		if ev.Time.IsZero() {
			ev.Time = e.now()
		}
		if e.observe != nil {
			e.observe(&ev)
		}
		e.events.publishDurable(ev, p)
		if ev.Session != "" {
			e.changed(ev.Session, true)
		}
	}
}

// poolEvents is the engine as its pools' event sink.
type poolEvents Engine

func (pe *poolEvents) Append(ev hearth.Event) (uint64, pool.Pending) {
	return (*Engine)(pe).append(ev)
}

func (pe *poolEvents) ToolUse(ev *hearth.Event) {
	e := (*Engine)(pe)
	if e.observe != nil {
		e.observe(ev)
	}
	e.changed(ev.Session, false)
	if e.events.active() {
		e.events.publish(*ev)
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
	e  hearth.Event
	p  pending
	fn func()
}

// pending is a queued write of the store's: its events are published
// once it is durable.
type pending interface {
	Wait(ctx context.Context) error
}

// publishDurable publishes e once p, its write, has settled, after every
// event queued before it. An event whose write failed is not published:
// subscribers get an EventWriteFailed in its place, so that no view shows
// progress the store does not hold.
func (b *bus) publishDurable(e hearth.Event, p pending) {
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
		if err := q.p.Wait(context.Background()); err != nil {
			b.publish(writeFailed(q.e, err))
			continue
		}
		b.publish(q.e)
	}
}

// Subscription receives events published after it was made.
type Subscription struct {
	C       <-chan hearth.Event
	c       chan hearth.Event
	b       *bus
	mu      sync.Mutex
	dropped uint64
	closed  bool
	// run, when set, limits the subscription to the events of one run.
	run string
}

func (b *bus) subscribe(buffer int, run string) *Subscription {
	c := make(chan hearth.Event, buffer)
	s := &Subscription{C: c, c: c, b: b, run: run}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*Subscription]struct{})
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *bus) publish(e hearth.Event) {
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
func (e *Engine) Subscribe(buffer int) *Subscription { return e.events.subscribe(buffer, "") }

// SubscribeRun returns a subscription to the events of one run: its
// transitions, checkpoints and gates, and its tasks' placements,
// progress and results (tool uses are not among them).
func (e *Engine) SubscribeRun(run string, buffer int) *Subscription {
	return e.events.subscribe(buffer, run)
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

// writeFailed is the event subscribers get in place of e, whose write
// failed: it keeps e's run, task, session and agent, so that a view of
// them learns of it.
func writeFailed(e hearth.Event, err error) hearth.Event {
	what := string(e.Kind)
	if e.Message != "" {
		what += " (" + e.Message + ")"
	}
	return hearth.Event{
		Time: e.Time, Kind: hearth.EventWriteFailed, Agent: e.Agent, Session: e.Session, Task: e.Task, Run: e.Run,
		Err: err.Error(), Message: "not recorded: " + what + ": " + err.Error(),
	}
}
