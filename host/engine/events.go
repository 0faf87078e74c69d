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
	subs map[*subscription]struct{}

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

// subscriptionBuffer is a subscription's buffer when its filter names
// none.
const subscriptionBuffer = 256

// subscription receives the events its filter matches, published after
// it was made. It is the engine's hearth.Subscription.
type subscription struct {
	c      chan hearth.Event
	b      *bus
	filter hearth.EventFilter
	// mu guards dropped and stop, which ends the watch of the
	// subscription's context.
	mu      sync.Mutex
	dropped uint64
	stop    func() bool
}

func (b *bus) subscribe(f hearth.EventFilter) *subscription {
	if f.Buffer <= 0 {
		f.Buffer = subscriptionBuffer
	}
	s := &subscription{c: make(chan hearth.Event, f.Buffer), b: b, filter: f}
	b.mu.Lock()
	if b.subs == nil {
		b.subs = make(map[*subscription]struct{})
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *bus) publish(e hearth.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if !s.filter.Match(e) {
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

// Events delivers the subscription's events; it is closed by Close.
func (s *subscription) Events() <-chan hearth.Event { return s.c }

// Err is nil: a subscription in the host's own process ends only when it
// is closed.
func (s *subscription) Err() error { return nil }

// Close ends the subscription and closes its channel.
func (s *subscription) Close() {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, ok := s.b.subs[s]; ok {
		delete(s.b.subs, s)
		close(s.c)
	}
}

// Dropped is how many matching events the subscriber missed because its
// buffer was full.
func (s *subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Subscribe returns a subscription to the host's events that f matches,
// until it is closed or ctx ends. It never fails.
func (e *Engine) Subscribe(ctx context.Context, f hearth.EventFilter) (hearth.Subscription, error) {
	s := e.events.subscribe(f)
	stop := context.AfterFunc(ctx, s.Close)
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	return s, nil
}

// active reports whether any subscriber takes tool-use events: they are
// only built for the bus when someone listens to them.
func (b *bus) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.filter.WantsToolUses() {
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
