package store

import (
	"cmp"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth"
)

// Free space is watched the way etcd watches its quota: below a threshold
// every write is refused with a clear reason (hearth.ErrNoSpace) before Badger is
// asked to write. Badger writes its value log and memtables through
// memory maps: on a full file system a write to a mapped page that cannot
// be backed is SIGBUS, which kills the process with no error to handle
// (issue 14: `fatal error: fault` in the value log's write). Refusing
// early, with room to spare for Badger's own flushes, keeps the host alive
// and the run paused until space is freed.

// DefaultMinFreeSpace is the free space below which writes are refused:
// twice what Badger may need at once (a 16 MiB memtable flushed, a 64 MiB
// value-log file started) with room for compaction.
const DefaultMinFreeSpace = 256 << 20

// SpaceError says how much space there is and how much writes need. It
// wraps hearth.ErrNoSpace.
type SpaceError struct {
	Dir        string
	Free, Need uint64
	// What needs the space: "" for the writes of an open store; what a
	// command is about to write otherwise ("opening it to write",
	// "restoring a backup of 1.2 GiB").
	What string
	// Fix says what to do; "" for the fix of a refused write.
	Fix string
}

func (e *SpaceError) Error() string {
	what := "writes need"
	if e.What != "" {
		what = e.What + " needs"
	}
	fix := cmp.Or(e.Fix, "free space (or lower min_free_space) and resume")
	return fmt.Sprintf("%v in %s: %s free, %s at least %s; %s", hearth.ErrNoSpace, e.Dir, mib(e.Free), what, mib(e.Need), fix)
}

// mib is n bytes in MiB, for people: "0.3 MiB" below 10, "23 MiB" above.
func mib(n uint64) string {
	if n < 10<<20 {
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatUint(n>>20, 10) + " MiB"
}

// available is the space an unprivileged writer may use on dir's file
// system.
func available(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// minFreeSpace is the threshold Options.MinFreeSpace means: 0 for the
// guard turned off.
func minFreeSpace(o int64) uint64 {
	switch {
	case o == 0:
		return DefaultMinFreeSpace
	case o < 0:
		return 0
	}
	return uint64(o)
}

// Writes that do not go through a commit check the free space before
// they start, by the same threshold: a write open (Badger replays the
// writes a crash left into tables, starts a memtable log and a value log,
// all through memory maps) and Restore. Badger reads a memtable log
// through a writable map too, which on a full tmpfs is SIGBUS before a
// byte is written. So the check is made before Badger sees the
// directory, and what it needs is the threshold plus what the command
// knows it will write (the memtable logs' entries, a backup's size).

// haveSpace returns a *SpaceError when dir's file system has less than
// min+extra bytes free; min is the threshold (0: no check).
func haveSpace(dir string, min, extra uint64, what, fix string) error {
	if min == 0 {
		return nil
	}
	free, err := available(dir)
	if err != nil {
		return nil // cannot tell: the writes' own check is still there
	}
	if need := min + extra; free < need {
		return &SpaceError{Dir: dir, Free: free, Need: need, What: what, Fix: fix}
	}
	return nil
}

func (e *SpaceError) Unwrap() error { return hearth.ErrNoSpace }

// space is the guard's state.
type space struct {
	// min is the threshold in bytes; 0 turns the guard off.
	min atomic.Uint64
	// refusing is set once a write was refused: writes stay refused
	// until the free space is back above min by an eighth, so that a
	// directory at the edge does not flap.
	refusing atomic.Bool
	// free caches the last reading for a moment: commits come thousands
	// a second, and the threshold leaves far more room than they write
	// in that time.
	mu     sync.Mutex
	free   uint64
	readAt time.Time
}

// spaceCache is how long a free-space reading is used.
const spaceCache = 50 * time.Millisecond

// SetMinFreeSpace sets the free space below which writes are refused; 0
// turns the guard off.
func (s *Store) SetMinFreeSpace(bytes uint64) {
	s.space.min.Store(bytes)
	s.space.mu.Lock()
	s.space.readAt = time.Time{} // read again at the next write
	s.space.mu.Unlock()
}

// The status reserve. A run stopped by a refused write must still say so
// on disk: otherwise its record reads "running" with the reason it
// started for, and the user learns why it stopped only from the output
// of the command that ran it. A write marked as a status record (one
// run's head, nothing else: SaveRunStatus) is accepted while the free
// space is above half the threshold, even while ordinary writes are
// refused. Such writes are a few hundred bytes each, one per stopped
// run, so the half kept back still leaves Badger the room the threshold
// is sized for (a memtable flushed, a value-log file started).

// statusReserve is the share of MinFreeSpace that status records may use:
// they are refused only below MinFreeSpace/statusReserve.
const statusReserve = 2

// checkSpace returns a *SpaceError when the data directory's file system
// has less free space than writes of that kind need: MinFreeSpace for
// ordinary writes (plus an eighth once they are refused), half of it for
// status records, which do not touch the hysteresis.
func (s *Store) checkSpace(status bool) error {
	min := s.space.min.Load()
	if min == 0 || s.inMemory || s.dir == "" {
		return nil
	}
	s.space.mu.Lock()
	if now := time.Now(); now.Sub(s.space.readAt) > spaceCache || s.space.refusing.Load() {
		free, err := available(s.dir)
		if err != nil {
			s.space.mu.Unlock()
			return nil // cannot tell: let Badger try
		}
		s.space.free, s.space.readAt = free, now
	}
	free := s.space.free
	s.space.mu.Unlock()
	if status {
		if need := min / statusReserve; free < need {
			return &SpaceError{Dir: s.dir, Free: free, Need: need}
		}
		return nil
	}
	need := min
	if s.space.refusing.Load() {
		need += min / 8
	}
	if free < need {
		s.space.refusing.Store(true)
		return &SpaceError{Dir: s.dir, Free: free, Need: need}
	}
	s.space.refusing.Store(false)
	return nil
}
