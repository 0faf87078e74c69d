package store

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"
)

// Layout is the key layout version this package writes.
const Layout = 1

// recordVersion is the version byte in front of every value.
const recordVersion = 1

// Errors of the store.
var (
	// ErrLocked: another process has the data directory open.
	ErrLocked = errors.New("data directory is in use by another process")
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrNewerLayout: the directory was written by a newer hearth.
	ErrNewerLayout = errors.New("data directory was written by a newer hearth")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store is closed")
	// ErrDamaged is wrapped by the errors of a data directory or a record
	// that is damaged: a *DirError when opening, a *DamageError reading.
	ErrDamaged = errors.New("data directory is damaged")
	// ErrReadOnly: a write to a store opened read-only.
	ErrReadOnly = errors.New("the store is open read-only")
	// ErrNeedsRecovery: a read-only open of a directory that was not
	// closed cleanly; Recover replays its last writes first.
	ErrNeedsRecovery = errors.New("the data directory was not closed cleanly; its last writes must be replayed before it can be read")
	// ErrNoFileStore: an in-memory store keeps no files.
	ErrNoFileStore = errors.New("an in-memory store keeps no files")
)

// LockedError says who holds a data directory.
type LockedError struct {
	Dir     string
	PID     int
	Command string
	Since   time.Time
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
		if e.Command != "" {
			who += " (" + e.Command + ")"
		}
		if !e.Since.IsZero() {
			who += ", running since " + e.Since.Format(time.RFC3339)
		}
	}
	return fmt.Sprintf("data directory %s is in use by %s; stop it, talk to it through its daemon, or use --data-dir for a separate directory", e.Dir, who)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Defaults of Options: what the zero value means (the config file's
// store block sets them; package config leaves them zero when it does
// not).
const (
	DefaultStallTimeout = 30 * time.Second
	DefaultCloseTimeout = 5 * time.Second
)

// Options configure a Store. The zero value is sensible.
type Options struct {
	Logger hclog.Logger
	// GCInterval is how often value-log GC runs; 0 means 10 minutes, a
	// negative value disables it.
	GCInterval time.Duration
	// InMemory keeps everything in memory: for tests and benchmarks that
	// must not touch the disk.
	InMemory bool
	// Command names the process in the owner record a refused second
	// opener reads ("hearth serve").
	Command string
	// StallTimeout is how long a commit may take before its writes fail
	// with ErrStalled; 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// CloseTimeout bounds Close's wait for Badger's final flush; 0 means
	// DefaultCloseTimeout.
	CloseTimeout time.Duration
	// MinFreeSpace is the free space below which writes are refused with
	// hearth.ErrNoSpace; 0 means DefaultMinFreeSpace, a negative value turns the
	// guard off.
	MinFreeSpace int64
	// DiscardAfterLogDamage lets a write open replay a memtable log that
	// is damaged in the middle, up to the damage, losing the writes after
	// it (Badger's own way); without it such a log is a *DirError
	// (logfile.go). hearth recover --discard-after-damage sets it.
	DiscardAfterLogDamage bool
}

// Store is hearth's Badger database. Its methods are safe for concurrent
// use.
type Store struct {
	db       *badger.DB
	dir      string
	inMemory bool
	readOnly bool
	lock     *dirLock
	logger   hclog.Logger
	seq      *badger.Sequence
	seqMu    sync.Mutex
	space    space

	// commit commits a prefix of a group (commitPrefix; tests replace
	// it); stall is the error writes fail with while a commit is stuck.
	commit       func([]*write) (int, error)
	stall        atomic.Pointer[error]
	failed       atomic.Pointer[WriteFailedError]
	failWrites   atomic.Pointer[func(keys []string) error]
	stallTimeout time.Duration
	closeTimeout time.Duration

	queue    chan *write
	stopGC   chan struct{}
	wg       sync.WaitGroup
	closeMu  sync.RWMutex
	closed   bool
	closeErr error
}

// Open opens the data directory dir in mode: Read for a command that
// only reads, Write (which creates a directory that is not there) for
// one that writes. Before Badger sees the directory, Open holds its lock
// and accounts for every file in it (open.go); a directory that does not
// add up is a *DirError, and nothing in it is changed.
func Open(dir string, mode Mode, opts Options) (*Store, error) {
	if mode != Read && mode != Write {
		return nil, fmt.Errorf("open data directory %s: mode %v: say store.Read or store.Write", dir, mode)
	}
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	readOnly := mode == Read
	if opts.InMemory && readOnly {
		return nil, errors.New("an in-memory store is opened to write: there is nothing to read")
	}
	var lock *dirLock
	inMemory := opts.InMemory
	if !opts.InMemory {
		// Absolute, because paths under it (stored files) are handed to
		// plugins, which run in their own working directories.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("data directory %s: %w", dir, err)
		}
		dir = abs
		if readOnly {
			if _, err := os.Stat(dir); err != nil {
				return nil, fmt.Errorf("data directory %s: %w", dir, err)
			}
		} else if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
		if lock, err = lockDir(dir, mode); err != nil {
			return nil, err
		}
		fail := func(err error) (*Store, error) {
			lock.release()
			return nil, err
		}
		if err := checkDir(dir, mode, opts.DiscardAfterLogDamage); err != nil {
			return fail(err)
		}
		if readOnly {
			if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); errors.Is(err, os.ErrNotExist) {
				// An existing directory with nothing of Badger's in it
				// (checkDir passed) reads as empty; Badger cannot open it
				// read-only.
				inMemory = true
			}
			// A clean close leaves no memtable log; one left means writes
			// to replay, which Read does not do (and Badger refuses
			// read-only, leaving goroutines behind).
			if mems, _ := filepath.Glob(filepath.Join(dir, "*.mem")); len(mems) > 0 {
				return fail(fmt.Errorf("data directory %s: %w (hearth recover does it, as does any command that writes)", dir, ErrNeedsRecovery))
			}
		} else if err := haveSpace(dir, minFreeSpace(opts.MinFreeSpace), replaySize(dir), "opening it to write (Badger replays the writes a crash left, and starts its logs)", "free space (or lower min_free_space) and try again; nothing in it was changed"); err != nil {
			return fail(err)
		} else if err := private(dir); err != nil {
			return fail(err)
		} else if err := lock.writePID(dir); err != nil {
			return fail(err)
		}
	}
	bo := badgerOptions(dir, inMemory, logger.Named("badger")).
		WithReadOnly(readOnly && !inMemory).
		// The directory's lock is lock's, taken before the checks.
		WithBypassLockGuard(true)
	db, err := openBadger(bo)
	if err != nil {
		lock.release()
		if readOnly && (errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error())) {
			return nil, fmt.Errorf("data directory %s: %w (hearth recover does it, as does any command that writes)", dir, ErrNeedsRecovery)
		}
		return nil, fmt.Errorf("open data directory %s: %w", dir, err)
	}
	s := &Store{
		db:       db,
		dir:      dir,
		inMemory: opts.InMemory,
		readOnly: readOnly,
		lock:     lock,
		logger:   logger,
		queue:    make(chan *write, 8192),
		stopGC:   make(chan struct{}),

		stallTimeout: cmp.Or(opts.StallTimeout, DefaultStallTimeout),
		closeTimeout: cmp.Or(opts.CloseTimeout, DefaultCloseTimeout),
	}
	s.commit = s.commitPrefix
	if err := s.checkLayout(); err != nil {
		db.Close()
		lock.release()
		return nil, err
	}
	if s.readOnly {
		// Nothing is written: no sequence lease, no committer, no owner
		// record, no GC.
		return s, nil
	}
	s.space.min.Store(minFreeSpace(opts.MinFreeSpace))
	if s.seq, err = db.GetSequence([]byte("q/events"), 1024); err != nil {
		db.Close()
		lock.release()
		return nil, fmt.Errorf("event sequence: %w", err)
	}
	s.wg.Add(1)
	go s.commitLoop()
	if !opts.InMemory {
		s.writeOwner(opts.Command)
		if opts.GCInterval >= 0 {
			every := opts.GCInterval
			if every == 0 {
				every = 10 * time.Minute
			}
			s.wg.Add(1)
			go s.gcLoop(every)
		}
	}
	return s, nil
}

// badgerOptions sizes Badger for a small machine: Badger's defaults (64 MiB
// memtables, five of them, a 256 MiB block cache, 1 GiB value-log files)
// are for a database server; hearth's records are small and its working
// set is the recent past.
func badgerOptions(dir string, inMemory bool, logger hclog.Logger) badger.Options {
	o := badger.DefaultOptions(dir)
	if inMemory {
		o = badger.DefaultOptions("").WithInMemory(true)
	}
	return o.
		WithSyncWrites(true).
		WithLogger(badgerLogger{logger}).
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithBlockCacheSize(16 << 20).
		WithIndexCacheSize(8 << 20).
		WithNumCompactors(2).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(10).
		WithValueLogFileSize(64 << 20).
		// Values above 1 KiB (event chunks, session records, exported
		// state) go to the value log, written once, in order; the LSM
		// tree keeps keys, pointers and small records. A run's
		// checkpoint (a few records of about 1 KiB in all) then stays in
		// the tree, so its commit syncs one log instead of two: 1.3x the
		// checkpoints of one run, against ~15% fewer single events per
		// second, which are written again at compaction (BENCHMARKS.md,
		// "Store faults"). Tool uses come in chunks of up to 256 events,
		// one value each, in the value log either way. GC reclaims it.
		WithValueThreshold(1024).
		// Every value read from the value log is checked against its CRC:
		// a damaged value must be an error, not different data (the
		// records' version byte catches the empty value Badger hands back
		// for one that fails). Its cost on reads is within noise
		// (BenchmarkValueChecksum).
		WithVerifyValueChecksum(true).
		WithMetricsEnabled(false).
		WithDetectConflicts(false)
}

// RawOptions are the Badger options Open uses, for benchmarks that compare
// the store with raw Badger in the same run.
func RawOptions(dir string) badger.Options {
	return badgerOptions(dir, false, hclog.NewNullLogger())
}

func lockedError(dir string) error {
	e := &LockedError{Dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, "LOCK")); err == nil {
		e.PID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var owner struct {
		PID     int       `json:"pid"`
		Command string    `json:"command"`
		Since   time.Time `json:"since"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "OWNER")); err == nil && json.Unmarshal(b, &owner) == nil && owner.PID == e.PID {
		e.Command, e.Since = owner.Command, owner.Since
	}
	return e
}

// writeOwner records who has the directory open, for the message a second
// opener gets. Badger's own LOCK file holds only the PID.
func (s *Store) writeOwner(command string) {
	if command == "" {
		command = filepath.Base(os.Args[0])
	}
	b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "command": command, "since": time.Now().UTC()})
	if err := os.WriteFile(filepath.Join(s.dir, "OWNER"), b, 0o600); err != nil {
		s.logger.Warn("cannot write the data directory's owner file", "error", err)
	}
}

func (s *Store) checkLayout() error {
	var have uint32
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get([]byte("m/schema"))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			if len(v) != 4 {
				return fmt.Errorf("m/schema holds %d bytes, want 4", len(v))
			}
			have = binary.BigEndian.Uint32(v)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read layout version: %w", err)
	}
	switch {
	case have > Layout:
		return fmt.Errorf("%w: %s has layout version %d, this hearth reads up to %d; upgrade hearth", ErrNewerLayout, s.dir, have, Layout)
	case have == Layout:
		return nil
	case s.readOnly:
		// A new directory, read: it is empty.
		return nil
	}
	// have == 0: a new directory. Later layouts add migrations from have
	// to Layout here, one version at a time, each in its own transaction.
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, Layout)
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("m/schema"), v) })
}

// Close flushes pending writes and closes the database. Writes after Close
// fail with ErrClosed.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return s.closeErr
	}
	s.closed = true
	close(s.queue)
	close(s.stopGC)
	s.closeMu.Unlock()
	s.wg.Wait()
	var errs []error
	if s.seq != nil {
		if err := s.seq.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.dir != "" && !s.readOnly {
		_ = os.Remove(filepath.Join(s.dir, "OWNER"))
	}
	// Badger's Close flushes the memtable; on a directory it cannot write
	// it retries for as long as that fails. Every write acknowledged is in
	// its log already: a host that must exit does not wait past the
	// timeout (the flush goes on until the process ends).
	closed := make(chan error, 1)
	go func() {
		err := s.db.Close()
		// The directory stays held while Badger may still write to it,
		// past the timeout below if it must.
		s.lock.release()
		closed <- err
	}()
	select {
	case err := <-closed:
		if err != nil {
			errs = append(errs, err)
		}
	case <-time.After(s.closeTimeout):
		errs = append(errs, fmt.Errorf("close data directory %s: Badger's final flush did not finish within %s (is the disk full or read-only?); every acknowledged write is in its log and is replayed on the next open", s.dir, s.closeTimeout))
	}
	s.closeErr = errors.Join(errs...)
	return s.closeErr
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// Size returns the sizes of the LSM tree and the value log in bytes.
func (s *Store) Size() (lsm, vlog int64) { return s.db.Size() }

func (s *Store) gcLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopGC:
			return
		case <-t.C:
			// Each call rewrites at most one value-log file; keep going
			// while there is something worth rewriting.
			n := 0
			for s.db.RunValueLogGC(0.5) == nil {
				n++
			}
			if n > 0 {
				s.logger.Debug("value log GC", "files rewritten", n)
			}
		}
	}
}

// nextSeqs reserves n consecutive event sequence numbers (never 0) and
// returns the first. Reserving them together, under one lock, keeps a
// chunk's numbers consecutive, so chunks of a stream never overlap.
func (s *Store) nextSeqs(n int) (uint64, error) {
	if s.seq == nil {
		return 0, ErrReadOnly
	}
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	first, err := s.seq.Next()
	if err == nil && first == 0 {
		first, err = s.seq.Next()
	}
	for i := 1; i < n && err == nil; i++ {
		var next uint64
		next, err = s.seq.Next()
		if err == nil && next != first+uint64(i) {
			err = fmt.Errorf("event sequence jumped from %d to %d", first+uint64(i)-1, next)
		}
	}
	return first, err
}

func encode(m proto.Message) ([]byte, error) {
	b, err := proto.MarshalOptions{}.MarshalAppend([]byte{recordVersion}, m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

func decode(b []byte, m proto.Message) error {
	if len(b) == 0 {
		return errors.New("empty record")
	}
	if b[0] != recordVersion {
		return fmt.Errorf("%w: record version %d, this hearth reads %d", ErrNewerLayout, b[0], recordVersion)
	}
	return proto.Unmarshal(b[1:], m)
}

func seqKey(prefix string, seq uint64) []byte {
	k := make([]byte, len(prefix)+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix):], seq)
	return k
}

func keySeq(k []byte) uint64 {
	if len(k) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}

// badgerLogger sends Badger's log to hclog. Badger logs every compaction
// at INFO, which is noise for hearth's operators: it goes to DEBUG.
type badgerLogger struct{ l hclog.Logger }

func (b badgerLogger) Errorf(f string, a ...any)   { b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLogger) Warningf(f string, a ...any) { b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLogger) Infof(f string, a ...any)    { b.l.Debug(strings.TrimSpace(fmt.Sprintf(f, a...))) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.l.Trace(strings.TrimSpace(fmt.Sprintf(f, a...))) }

// openBadger is badger.Open with its panics (a damaged file it reads on
// open) turned into errors.
func openBadger(o badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: badger could not open it: %v", ErrDamaged, r)
		}
	}()
	return badger.Open(o)
}

// Recover replays the last writes of a data directory that was not
// closed cleanly (after a crash, or kill -9), so that it can be opened
// Read: it opens the directory to Write, once it passed the same checks
// as any open, and closes it.
func Recover(dir string, opts Options) error {
	opts.GCInterval = -1
	s, err := Open(dir, Write, opts)
	if err != nil {
		return err
	}
	return s.Close()
}

// private makes the data directory 0700 and what is in it owner-only,
// whatever modes it had (a directory made 0755 by hand gave Badger's files
// 0644): its records are every session's and run's state. Files Badger
// creates later are behind the directory's 0700.
func private(dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: make it private: %w", dir, err)
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		mode := fs.FileMode(0o600)
		switch {
		case d.IsDir():
			mode = 0o700
		case d.Type()&fs.ModeSymlink != 0:
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().Perm()&0o077 == 0 {
			return nil // already private; stored files stay read-only
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("data directory %s: make %s private: %w", dir, p, err)
		}
		return nil
	})
}
