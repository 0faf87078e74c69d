package host

import (
	"sync"
	"time"
)

// EventKind names what happened.
type EventKind string

// Kinds of events.
const (
	EventSessionSpawned EventKind = "session.spawned"
	EventSessionLost    EventKind = "session.lost"
	EventSessionStopped EventKind = "session.stopped"
	EventTaskStarted    EventKind = "task.started"
	EventTaskProgress   EventKind = "task.progress"
	EventTaskSucceeded  EventKind = "task.succeeded"
	EventTaskFailed     EventKind = "task.failed"
)

// Event is a record of something that happened in the host.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Agent   string
	Session string
	Task    string
	// Message is a one-line human description.
	Message string
	// Err is the error text of failures.
	Err string
	// PID is the plugin process of session events.
	PID int
	// Fraction is the progress of task.progress events.
	Fraction float64
}

// bus fans events out to subscribers. Publishing never blocks: a
// subscriber whose buffer is full misses events, and learns how many from
// the Dropped count of its subscription.
type bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscription receives events published after it was made.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	b       *bus
	mu      sync.Mutex
	dropped uint64
	closed  bool
}

func (b *bus) subscribe(buffer int) *Subscription {
	c := make(chan Event, buffer)
	s := &Subscription{C: c, c: c, b: b}
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
func (h *Host) Subscribe(buffer int) *Subscription { return h.events.subscribe(buffer) }

func (h *Host) publish(e Event) {
	if e.Time.IsZero() {
		e.Time = h.now()
	}
	h.events.publish(e)
}
