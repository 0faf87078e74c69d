package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// HostStream is the event stream of events that belong to no session
// and no run.
const HostStream = "host"

// StreamOf is the stream an event is stored in: its session's, else its
// run's, else the host's.
func StreamOf(e *hearth.Event) string {
	switch {
	case e.Session != "":
		return e.Session
	case e.Run != "":
		return e.Run
	}
	return HostStream
}

// PutSession stores a session record, durably.
func (s *Store) PutSession(ctx context.Context, rec record.Session) error {
	return s.SaveSession(rec).Wait(ctx)
}

// PutSessionState stores a session record together with the agent state it
// exported, in one atomic write.
func (s *Store) PutSessionState(ctx context.Context, rec record.Session, state []byte) error {
	return s.SaveSessionState(rec, state).Wait(ctx)
}

// SaveSession queues a session record; it is durable once the Pending's
// Wait returns nil.
func (s *Store) SaveSession(rec record.Session) *Pending {
	v, err := encode(sessionToPB(rec))
	if err != nil {
		return failed(err)
	}
	return s.submit(&write{sets: []kv{{[]byte("s/" + rec.ID), v}}})
}

// SaveSessionState queues a session record and its agent's state, as one
// atomic write.
func (s *Store) SaveSessionState(rec record.Session, state []byte) *Pending {
	v, err := encode(sessionToPB(rec))
	if err != nil {
		return failed(err)
	}
	return s.submit(&write{sets: []kv{
		{[]byte("s/" + rec.ID), v},
		{[]byte("t/" + rec.ID), append([]byte{recordVersion}, state...)},
	}})
}

// SessionRecord returns the record of session id, or an error wrapping
// ErrNotFound.
func (s *Store) SessionRecord(id string) (record.Session, error) {
	m := &storepb.Session{}
	if err := s.get([]byte("s/"+id), m); err != nil {
		return record.Session{}, fmt.Errorf("session %s: %w", id, err)
	}
	return sessionFromPB(m), nil
}

// SessionRecords returns every session record, in ID order.
func (s *Store) SessionRecords() ([]record.Session, error) {
	var out []record.Session
	err := s.scan([]byte("s/"), func(k, v []byte) error {
		m := &storepb.Session{}
		if err := decodeAt(k, v, m); err != nil {
			return err
		}
		out = append(out, sessionFromPB(m))
		return nil
	})
	return out, err
}

// SessionState returns the agent state stored for session id, or
// ErrNotFound.
func (s *Store) SessionState(id string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte("t/" + id))
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		return damaged(it.KeyCopy(nil), err)
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("state of session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || out[0] != recordVersion {
		return nil, fmt.Errorf("state of session %s: %w", id, ErrNewerLayout)
	}
	return out[1:], nil
}

// deleteBatch bounds the keys one deleting write holds: a long-lived
// session has more event chunks and decision index entries than one
// Badger transaction takes.
const deleteBatch = 4096

// DeleteSession deletes a session: its events and decision index entries,
// in as many writes as they need, then its state and record, in the last.
// Until that last write lands the session is still listed, so a delete
// that was interrupted is simply done again.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	var keys [][]byte
	for _, prefix := range []string{"e/" + id + "/", "x/" + id + "/"} {
		if err := s.scanKeys([]byte(prefix), func(k []byte) error {
			keys = append(keys, k)
			return nil
		}); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		if err := s.apply(ctx, &write{deletes: keys[:n]}); err != nil {
			return fmt.Errorf("delete session %s: %w", id, err)
		}
		keys = keys[n:]
	}
	return s.apply(ctx, &write{deletes: [][]byte{[]byte("t/" + id), []byte("s/" + id)}})
}

// Append assigns e its sequence number, which it returns, and queues it.
// The event is durable once the returned Pending's Wait returns nil. It
// goes to the stream StreamOf names; a decision goes to the decision list
// and to the index of every session it involved.
func (s *Store) Append(e hearth.Event) (uint64, *Pending) {
	if e.Decision != nil {
		return s.appendDecision(&e)
	}
	return s.AppendBatch([]hearth.Event{e})
}

func (s *Store) appendDecision(e *hearth.Event) (uint64, *Pending) {
	if s.isClosed() {
		return 0, failed(ErrClosed)
	}
	seq, err := s.nextSeqs(1)
	if err != nil {
		return 0, failed(err)
	}
	m := &storepb.Event{}
	fillEvent(m, e)
	m.Seq = seq
	v, err := encode(m)
	if err != nil {
		return 0, failed(err)
	}
	w := &write{sets: []kv{{seqKey("d/", seq), v}}}
	for _, id := range involved(e.Decision) {
		w.sets = append(w.sets, kv{seqKey("x/"+id+"/", seq), nil})
	}
	return seq, s.submit(w)
}

func (s *Store) isClosed() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closed
}

// AppendBatch appends events of one stream (all with the same session, or
// none) as one chunk: consecutive sequence numbers, assigned before it
// returns, one Badger value under the key of the first. It returns the
// last sequence number. The events are durable once the returned
// Pending's Wait returns nil.
func (s *Store) AppendBatch(evs []hearth.Event) (uint64, *Pending) {
	if len(evs) == 0 {
		return 0, failed(nil)
	}
	if s.isClosed() {
		return 0, failed(ErrClosed)
	}
	stream := StreamOf(&evs[0])
	for i := range evs {
		if s := StreamOf(&evs[i]); s != stream {
			return 0, failed(fmt.Errorf("a chunk holds events of one stream: %q and %q", stream, s))
		}
	}
	first, err := s.nextSeqs(len(evs))
	if err != nil {
		return 0, failed(err)
	}
	// The records are recycled: an allocation per tool use was the
	// largest share of the host's garbage under a flood of them.
	chunk := chunks.Get().(*storepb.EventChunk)
	defer func() {
		for _, m := range chunk.Events {
			m.Decision = nil
		}
		chunks.Put(chunk)
	}()
	for len(chunk.Events) < len(evs) {
		chunk.Events = append(chunk.Events, &storepb.Event{})
	}
	full := chunk.Events
	chunk.Events = chunk.Events[:len(evs)]
	for i := range evs {
		fillEvent(chunk.Events[i], &evs[i])
		chunk.Events[i].Seq = first + uint64(i)
	}
	// The chunk is encoded into a slab recycled once committed (Badger
	// has copied it by then).
	w := &write{slab: slabs.Get().(*[]byte)}
	slab := append(*w.slab, recordVersion)
	slab, err = (proto.MarshalOptions{}).MarshalAppend(slab, chunk)
	chunk.Events = full
	if err != nil {
		return 0, failed(fmt.Errorf("encode events: %w", err))
	}
	w.sets = []kv{{seqKey("e/"+stream+"/", first), slab}}
	if cap(slab) > 4<<20 {
		w.slab = nil // outgrew the pool's size: let it go
	} else {
		*w.slab = slab
	}
	return first + uint64(len(evs)) - 1, s.submit(w)
}

// chunks recycles the records AppendBatch encodes.
var chunks = sync.Pool{New: func() any { return &storepb.EventChunk{} }}

func failed(err error) *Pending {
	p := newPending()
	p.settle(err)
	return p
}

// involved lists the sessions a decision concerns: where the task went,
// and every ranked candidate.
func involved(d *hearth.Decision) []string {
	seen := make(map[string]bool)
	var ids []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	add(d.Session)
	add(d.Retired)
	for _, c := range d.Candidates {
		add(c.Session)
	}
	return ids
}

// Events returns up to limit events of a stream (a session ID, or
// HostStream) with sequence numbers above after, oldest first; limit 0
// means all.
func (s *Store) Events(stream string, after uint64, limit int) ([]hearth.Event, error) {
	var out []hearth.Event
	prefix := []byte("e/" + stream + "/")
	err := s.db.View(func(txn *badger.Txn) error {
		// The chunk holding after+1 may start before it: find the last
		// chunk starting at or before it, and read on from there.
		start := seqKey(string(prefix), after+1)
		rit := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		if rit.Seek(start); rit.ValidForPrefix(prefix) {
			start = rit.Item().KeyCopy(nil)
		}
		rit.Close()
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 8})
		defer it.Close()
		for it.Seek(start); it.ValidForPrefix(prefix); it.Next() {
			var chunk storepb.EventChunk
			k := it.Item().Key()
			if err := it.Item().Value(func(v []byte) error { return decodeAt(k, v, &chunk) }); err != nil {
				return damaged(k, err)
			}
			for _, ev := range chunk.GetEvents() {
				if ev.GetSeq() <= after {
					continue
				}
				if limit > 0 && len(out) >= limit {
					return nil
				}
				out = append(out, eventFromPB(ev))
			}
		}
		return nil
	})
	return out, err
}

// RecentEvents returns the last limit events of a stream, oldest first.
func (s *Store) RecentEvents(stream string, limit int) ([]hearth.Event, error) {
	var rev []hearth.Event
	prefix := []byte("e/" + stream + "/")
	errDone := errors.New("enough")
	err := s.reverse(prefix, 0, func(k, v []byte) error {
		var chunk storepb.EventChunk
		if err := decodeAt(k, v, &chunk); err != nil {
			return err
		}
		evs := chunk.GetEvents()
		for i := len(evs) - 1; i >= 0; i-- {
			if limit > 0 && len(rev) >= limit {
				return errDone
			}
			rev = append(rev, eventFromPB(evs[i]))
		}
		return nil
	})
	if errors.Is(err, errDone) {
		err = nil
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev, err
}

// Decisions returns the last limit placement decisions, newest first.
func (s *Store) Decisions(limit int) ([]hearth.Event, error) {
	var out []hearth.Event
	err := s.reverse([]byte("d/"), limit, func(k, v []byte) error {
		ev := &storepb.Event{}
		if err := decodeAt(k, v, ev); err != nil {
			return err
		}
		out = append(out, eventFromPB(ev))
		return nil
	})
	return out, err
}

// DecisionsFor returns the last limit decisions that involved session id,
// newest first.
func (s *Store) DecisionsFor(id string, limit int) ([]hearth.Event, error) {
	var seqs []uint64
	if err := s.reverse([]byte("x/"+id+"/"), limit, func(k, _ []byte) error {
		seqs = append(seqs, keySeq(k))
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]hearth.Event, 0, len(seqs))
	for _, seq := range seqs {
		ev := &storepb.Event{}
		if err := s.get(seqKey("d/", seq), ev); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		out = append(out, eventFromPB(ev))
	}
	return out, nil
}

func (s *Store) get(key []byte, m proto.Message) error {
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if err != nil {
			return err
		}
		return damaged(key, it.Value(func(v []byte) error { return decodeAt(key, v, m) }))
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	return err
}

// scan calls fn for every key with prefix, in order.
func (s *Store) scan(prefix []byte, fn func(k, v []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			var fnErr error
			if err := item.Value(func(v []byte) error { fnErr = fn(item.Key(), v); return fnErr }); err != nil {
				if fnErr != nil {
					return fnErr
				}
				return damaged(item.KeyCopy(nil), err)
			}
		}
		return nil
	})
}

// scanKeys calls fn with a copy of every key with prefix.
func (s *Store) scanKeys(prefix []byte, fn func(k []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			if err := fn(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
		}
		return nil
	})
}

// reverse calls fn for the last limit keys with prefix, newest first.
func (s *Store) reverse(prefix []byte, limit int, fn func(k, v []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true, PrefetchValues: true, PrefetchSize: 16})
		defer it.Close()
		// Seek, in reverse, to the largest key with the prefix: every key
		// under it is at most 8 sequence bytes past the prefix.
		end := append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		n := 0
		for it.Seek(end); it.ValidForPrefix(prefix); it.Next() {
			if limit > 0 && n >= limit {
				return nil
			}
			item := it.Item()
			var fnErr error
			if err := item.Value(func(v []byte) error { fnErr = fn(item.KeyCopy(nil), v); return fnErr }); err != nil {
				if fnErr != nil {
					return fnErr
				}
				return damaged(item.KeyCopy(nil), err)
			}
			n++
		}
		return nil
	})
}
