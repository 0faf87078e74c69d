package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// Forwarded tasks (key fw/<key>): in cluster mode a host runs tasks other
// hosts forward to it, each under an idempotency key, and promises that a
// retried forward with a key it accepted does not run the task again
// (docs/cluster.md). The cluster's member keeps the keys in memory;
// these records keep the promise across a restart of the host. They are
// the cluster's (cluster.ForwardRecord), kept here as etcd keeps the
// cluster's other records (package cluster imports none of a host's
// parts: runs, pool, store, config, engine).

func forwardKey(key string) []byte { return []byte("fw/" + key) }

// SaveForward queues rec and the deletion of the records of the keys in
// drop (those the member no longer keeps), as one atomic write: keeping a
// key and pruning old ones share one fsync. It is durable once the
// Pending's Wait returns nil.
func (s *Store) SaveForward(rec cluster.ForwardRecord, drop []string) *Pending {
	m, err := forwardToPB(rec)
	if err != nil {
		return failed(err)
	}
	v, err := encode(m)
	if err != nil {
		return failed(err)
	}
	return s.submit(&write{sets: []kv{{forwardKey(rec.Key), v}}, deletes: forwardKeys(drop)})
}

// DropForwards queues the deletion of the records of keys, as one write.
func (s *Store) DropForwards(keys []string) *Pending {
	return s.submit(&write{deletes: forwardKeys(keys)})
}

// forwardKeys are the store keys of the records of keys.
func forwardKeys(keys []string) [][]byte {
	var out [][]byte
	for _, k := range keys {
		out = append(out, forwardKey(k))
	}
	return out
}

// ForwardRecords returns every forwarded task's record, in key order. A
// record that cannot be read is listed too, with only its Key and Err
// set: the key was accepted here, and what became of its task is not
// known, which the engine must not answer as "never seen". The error is
// for the scan itself.
func (s *Store) ForwardRecords() ([]cluster.ForwardRecord, error) {
	prefix := []byte("fw/")
	var out []cluster.ForwardRecord
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			k := item.KeyCopy(nil)
			var rec cluster.ForwardRecord
			err := item.Value(func(v []byte) error {
				var err error
				rec, err = forwardOf(k, v)
				return err
			})
			if err != nil {
				rec = cluster.ForwardRecord{Key: string(k[len(prefix):]), Err: damaged(k, err)}
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// ForwardRecord returns the record of key, or an error wrapping
// ErrNotFound.
func (s *Store) ForwardRecord(key string) (cluster.ForwardRecord, error) {
	var rec cluster.ForwardRecord
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(forwardKey(key))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			var err error
			rec, err = forwardOf(forwardKey(key), v)
			return err
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return cluster.ForwardRecord{}, fmt.Errorf("forwarded task %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return cluster.ForwardRecord{}, damaged(forwardKey(key), err)
	}
	return rec, nil
}

// forwardOf decodes the record under k. Errors name it: a record of a
// newer version too (decodeAt passes those on unnamed, for the callers
// that stop at the first).
func forwardOf(k, v []byte) (cluster.ForwardRecord, error) {
	m := &storepb.Forward{}
	if err := decodeAt(k, v, m); err != nil {
		if errors.Is(err, ErrNewerLayout) {
			err = fmt.Errorf("%s: %w", describeKey(k), err)
		}
		return cluster.ForwardRecord{}, err
	}
	rec, err := forwardFromPB(m)
	if err != nil {
		return cluster.ForwardRecord{}, damaged(k, err)
	}
	if rec.Key != string(k[len("fw/"):]) {
		return cluster.ForwardRecord{}, damaged(k, fmt.Errorf("it holds key %q", rec.Key))
	}
	return rec, nil
}
