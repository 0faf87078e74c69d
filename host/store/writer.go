package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth"
)

// maxGroup bounds how many writes share one transaction. Badger bounds a
// transaction's size too (a share of the memtable); the committer splits
// a group between writes when it hits that bound.
const maxGroup = 4096

// write is one atomic write: its sets and deletes land in one transaction.
type write struct {
	sets    []kv
	deletes [][]byte
	pending *Pending
	// status marks a run's status record (SaveRunStatus): it may use the
	// free-space reserve that ordinary writes may not (space.go).
	status bool
	// slab, when set, backs sets' keys and values and goes back to
	// slabs once the write is committed: Badger has copied them then.
	slab *[]byte
	// asked and fault are what FailWrites said of the write.
	asked bool
	fault error
}

// slabs recycles the buffers batches of events are encoded into.
var slabs = sync.Pool{New: func() any { b := make([]byte, 0, 256*640); return &b }}

type kv struct{ key, value []byte }

// Pending is a write on its way to disk. Any number of goroutines may
// wait for it.
type Pending struct {
	done chan struct{}
	err  error // set before done is closed
}

func newPending() *Pending { return &Pending{done: make(chan struct{})} }

// settle reports the write's outcome to every waiter; once only.
func (p *Pending) settle(err error) {
	p.err = err
	close(p.done)
}

// Wait returns once the write is durable (nil) or failed, or ctx is done.
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// submit queues w for the committer. Writes are committed in the order
// they are submitted, so a write that is durable implies every write
// submitted before it is too.
func (s *Store) submit(w *write) *Pending {
	w.pending = newPending()
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		w.pending.settle(ErrClosed)
		return w.pending
	}
	if s.readOnly {
		w.pending.settle(ErrReadOnly)
		return w.pending
	}
	if err := s.stall.Load(); err != nil {
		w.pending.settle(*err)
		return w.pending
	}
	if err := s.failed.Load(); err != nil {
		w.pending.settle(err)
		return w.pending
	}
	s.queue <- w
	return w.pending
}

// apply writes w and waits until it is durable.
func (s *Store) apply(ctx context.Context, w *write) error {
	return s.submit(w).Wait(ctx)
}

// commitLoop is the committer: it takes the first write waiting, every
// other write already waiting behind it, and commits them in one
// transaction, with one fsync.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	group := make([]*write, 0, maxGroup)
	for w := range s.queue {
		group = append(group[:0], w)
	gather:
		for len(group) < maxGroup {
			select {
			case w, ok := <-s.queue:
				if !ok {
					break gather
				}
				group = append(group, w)
			default:
				break gather
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup commits the writes in as few transactions as Badger's size
// bound allows, never splitting one write, and reports to each.
func (s *Store) commitGroup(group []*write) {
	for len(group) > 0 {
		if failed := s.failed.Load(); failed != nil {
			// Queued before the failure was known: they must not land
			// after it.
			s.settle(group, failed)
			return
		}
		n, err := len(group), s.checkSpace(false)
		if err != nil {
			// Refused to ordinary writes; status records may use the
			// reserve. The group splits where the kind of write changes,
			// so that each write is judged by its own kind, in order.
			n = 1
			for n < len(group) && group[n].status == group[0].status {
				n++
			}
			if group[0].status {
				err = s.checkSpace(true)
			}
		}
		if err == nil {
			n, err = s.injected(group[:n])
		}
		if err == nil {
			var settled bool
			n, err, settled = s.commitBounded(group[:n])
			if settled {
				group = group[n:]
				continue
			}
		}
		if err != nil {
			// Some writes are not waited for (background snapshots):
			// their failures must not go unseen.
			s.logger.Error("write failed", "writes", n, "error", err)
			s.fail(err)
		}
		s.settle(group[:n], err)
		group = group[n:]
	}
}

// settle reports err to each write of group (nil: durable).
func (s *Store) settle(group []*write, err error) {
	for _, w := range group {
		if w.slab != nil {
			*w.slab = (*w.slab)[:0]
			slabs.Put(w.slab)
			w.slab = nil
		}
		w.pending.settle(err)
	}
}

// A store whose write failed refuses every write after it, until it is
// reopened. Badger was asked to write and did not; what it wrote of it,
// if anything, is unknown until the directory is opened again (the open
// replays what reached the memtable log, and accounts for every file).
// Writes already queued behind the failed one were made by callers that
// had not learned of the failure: one of the same run, landing after the
// run's failed write, would record a state that never was. So they fail
// too, with every write submitted after (ErrWriteFailed), and the host
// says why and what to do. A write refused before Badger is asked (not
// enough free space: nothing of it was written; a stall, whose commit is
// still waited for in order; a single write too big for any transaction,
// discarded before its commit) is not such a failure.

// ErrWriteFailed is wrapped by the error of every write a store refuses
// because a write before it failed.
var ErrWriteFailed = errors.New("the store takes no writes since one failed")

// WriteFailedError says which write failure a store refuses writes
// after.
type WriteFailedError struct {
	Dir string
	At  time.Time
	// Err is the failure.
	Err error
}

func (e *WriteFailedError) Error() string {
	return fmt.Sprintf("%v: a write to %s failed at %s (%v), and no write after it is made, so that none lands out of order; fix the cause and restart hearth, which reopens the directory (every acknowledged write is in it)",
		ErrWriteFailed, e.Dir, e.At.Format(time.RFC3339), e.Err)
}

func (e *WriteFailedError) Unwrap() error { return ErrWriteFailed }

// fail makes the store refuse writes after err, a write's failure, unless
// err is a refusal made before Badger was asked.
func (s *Store) fail(err error) {
	if errors.Is(err, hearth.ErrNoSpace) || errors.Is(err, ErrStalled) || errors.Is(err, ErrClosed) || errors.Is(err, ErrReadOnly) || errors.Is(err, badger.ErrTxnTooBig) {
		return
	}
	if s.failed.CompareAndSwap(nil, &WriteFailedError{Dir: s.dir, At: time.Now().UTC(), Err: err}) {
		s.logger.Error("a write failed: the store refuses writes until it is reopened (restart hearth)", "error", err)
	}
}

// Failed returns the *WriteFailedError the store refuses writes after,
// or nil.
func (s *Store) Failed() error {
	if err := s.failed.Load(); err != nil {
		return err
	}
	return nil
}

// commitPrefix commits the longest prefix of group that fits in one
// transaction and returns its length. A single write too big for any
// transaction fails alone.
func (s *Store) commitPrefix(group []*write) (int, error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for i, w := range group {
		if err := addWrite(txn, w); err != nil {
			if !errors.Is(err, badger.ErrTxnTooBig) {
				return max(i, 1), err
			}
			if i == 0 {
				return 1, fmt.Errorf("a single write of %d records is too big for one transaction: %w", len(w.sets)+len(w.deletes), err)
			}
			// Start over with the writes that fit.
			txn.Discard()
			txn = s.db.NewTransaction(true)
			for _, w := range group[:i] {
				if err := addWrite(txn, w); err != nil {
					return i, err
				}
			}
			return i, txn.Commit()
		}
	}
	return len(group), txn.Commit()
}

func addWrite(txn *badger.Txn, w *write) error {
	// A fresh entry every time: Badger annotates the entries a
	// transaction takes, and a group may be retried in a new one.
	for _, e := range w.sets {
		if err := txn.SetEntry(badger.NewEntry(e.key, e.value)); err != nil {
			return err
		}
	}
	for _, k := range w.deletes {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// A commit that does not finish is not waited for forever. Badger retries
// a failed flush once a second, for as long as it fails (an unwritable
// directory), and its writes block behind it: a host waiting on them
// would hang, deaf to signals (issue 14). After StallTimeout the writes of
// a stuck commit fail with a *StallError, and so does every write
// submitted while it is stuck; the commit itself is still waited for, in
// order, so that nothing lands out of order once the disk recovers.

// ErrStalled is wrapped by the error of a write the store could not
// finish in time.
var ErrStalled = errors.New("the store's writes are stuck")

// StallError says how long writes have been stuck.
type StallError struct {
	Dir   string
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%v: a commit to %s has not finished after %s (is the disk full, read-only or failing?); the write did not happen", ErrStalled, e.Dir, e.After)
}

func (e *StallError) Unwrap() error { return ErrStalled }

// commitBounded commits a prefix of group, as commitPrefix does, but
// settles the whole group with a *StallError when it takes longer than
// the stall timeout (settled is then true and n is len(group)). The
// watchdog is a timer, not a goroutine: a commit that ends in time costs
// one timer.
func (s *Store) commitBounded(group []*write) (n int, err error, settled bool) {
	var decided atomic.Bool
	timer := time.AfterFunc(s.stallTimeout, func() {
		if !decided.CompareAndSwap(false, true) {
			return
		}
		var stall error = &StallError{Dir: s.dir, After: s.stallTimeout}
		s.stall.Store(&stall)
		s.logger.Error("writes are stuck; failing them until the stuck commit ends", "after", s.stallTimeout)
		for _, w := range group {
			w.pending.settle(stall)
		}
	})
	n, err = s.commit(group)
	if decided.CompareAndSwap(false, true) {
		timer.Stop()
		return n, err, false
	}
	// The watchdog reported the group failed; nothing more was committed
	// while this commit was stuck.
	if err != nil {
		// Refused from now on, before the stall lifts.
		s.fail(err)
	}
	s.stall.Store(nil)
	if err == nil {
		// It landed after all: the writes are on disk though they were
		// reported failed. Failing is the safe side (a run resumes and
		// finds them done); say so.
		s.logger.Warn("a stuck commit finished after its writes were failed", "writes", n)
	}
	return len(group), nil, true
}

// Refused returns a write that failed with err without being queued: for
// a caller that knows a write must not happen, to hand its callers the
// Pending they wait on.
func Refused(err error) *Pending { return failed(err) }

// FailWrites is a seam for tests of what is built on the store: from now
// on a write for which fail returns an error fails with it, alone, before
// Badger is asked, as a write Badger refused would (the writes queued
// before it are committed first), and the store refuses writes after it
// until it is reopened (ErrWriteFailed), as it does after Badger's
// failures; unless the error wraps hearth.ErrNoSpace, which is a refusal, not a
// failure. nil ends it. A disk's own failures
// cannot be had at will in a test: a read-only directory is no failure
// for root, and a full disk fails every write alike.
func (s *Store) FailWrites(fail func(keys []string) error) {
	if fail == nil {
		s.failWrites.Store(nil)
		return
	}
	s.failWrites.Store(&fail)
}

// injected returns how many writes of group to commit, or, when its
// first write is one FailWrites fails, 1 and the error.
func (s *Store) injected(group []*write) (int, error) {
	f := s.failWrites.Load()
	if f == nil {
		return len(group), nil
	}
	for i, w := range group {
		if !w.asked {
			// Asked once per write: a group may be looked at again.
			w.asked = true
			keys := make([]string, 0, len(w.sets)+len(w.deletes))
			for _, kv := range w.sets {
				keys = append(keys, string(kv.key))
			}
			for _, k := range w.deletes {
				keys = append(keys, string(k))
			}
			w.fault = (*f)(keys)
		}
		if w.fault != nil {
			if i == 0 {
				return 1, w.fault
			}
			return i, nil
		}
	}
	return len(group), nil
}
