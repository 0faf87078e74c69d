package pool

import (
	"context"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// SessionStore is what a pool needs of the store: its sessions' records,
// the state their agents exported, and the event log their tool uses go
// to. The engine hands the pool its store (package host/store) through
// it; tests hand it a map. Writes are queued and committed in the order
// they were made; each returns its Pending.
type SessionStore interface {
	// SaveSession queues a session's record.
	SaveSession(rec record.Session) Pending
	// SaveSessionState queues a session's record with the state its
	// agent exported, in one write.
	SaveSessionState(rec record.Session, state []byte) Pending
	// SessionRecord reads session id's record.
	SessionRecord(id string) (record.Session, error)
	// SessionState reads the state session id's agent exported; false
	// when none is stored.
	SessionState(id string) (state []byte, ok bool, err error)
	// DeleteSession deletes session id: its record, its state and its
	// events.
	DeleteSession(ctx context.Context, id string) error
	// Events reads up to limit events (0: all) of a session's stream
	// after sequence number after, oldest first.
	Events(stream string, after uint64, limit int) ([]hearth.Event, error)
	// AppendBatch queues events of one session as one chunk and returns
	// the last one's sequence number.
	AppendBatch(evs []hearth.Event) (uint64, Pending)
}

// Pending is a queued write: durable once Wait returns nil.
type Pending interface {
	Wait(ctx context.Context) error
}
