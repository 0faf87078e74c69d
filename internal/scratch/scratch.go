// Package scratch gives a host process a directory of its own in the
// system's temporary directory, and removes the ones their processes
// left behind.
//
// go-plugin makes a directory for each plugin it starts (its unix socket,
// and, as hearth sets TMPDIR to it, the plugin's temporary files: a
// Claude Code agent's state and transcripts) and removes it when the
// plugin stops. A host killed with -9 cannot: its plugins die with it,
// their directories stay. So a host makes its plugins' directories
// inside one of its own, named hearth-host-*, and holds an exclusive
// flock on that directory for as long as it lives. The kernel drops a
// process's locks however it ends, so "the lock is free" is exactly
// "the process that made it is gone": no pid to be reused, no age to
// guess. Each host, as it starts, removes every such directory whose
// lock it can take, in the background (Background; the engine stops it
// when it closes), so that no plugin start waits on what a dead host's
// agents left behind.
//
// A sweep removes by path once it holds a directory's lock. In a
// temporary directory others may write to, that is safe only if it is
// sticky, as /tmp is (no one else can rename or replace this user's
// entries); a TMPDIR of one's own is safe as it is.
//
// A directory is locked before it gets its name: it is made under a
// temporary name (.hearth-host-new-*), locked, then renamed, and the
// lock stays with the directory through the rename. A sweep that sees a
// hearth-host-* directory therefore never sees one its maker has not
// locked yet.
package scratch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Prefix starts the name of every host's directory.
const Prefix = "hearth-host-"

var (
	mu   sync.Mutex
	dir  string
	lock *os.File
)

// Dir returns this process's directory under os.TempDir(), making it on
// first use and again if it has been removed since (a test's TMPDIR,
// cleaned up). It sweeps nothing: a host sweeps in the background
// (Background), so that no plugin start waits on what a dead host's
// agents left (a hostile one can leave a million files).
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		// The directory at the name must be the one the lock holds, not
		// merely a directory: once ours is removed, anyone may make
		// another of that name (in /tmp, another user), and a directory
		// we do not hold is one the next host's sweep removes from under
		// our plugins, or one whose owner can swap what is inside.
		fi, err := os.Lstat(dir)
		held, herr := lock.Stat()
		if err == nil && herr == nil && fi.IsDir() && os.SameFile(fi, held) {
			return dir, nil
		}
		lock.Close()
		dir, lock = "", nil
	}
	d, f, err := create(os.TempDir())
	if err != nil {
		return "", err
	}
	dir, lock = d, f
	return dir, nil
}

// create makes a locked directory named Prefix+random in tmp. The lock's
// file stays open for the life of the process (it is close-on-exec, so
// no plugin inherits it).
func create(tmp string) (string, *os.File, error) {
	staging, err := os.MkdirTemp(tmp, "."+Prefix+"new-")
	if err != nil {
		return "", nil, fmt.Errorf("make the host's temporary directory in %s: %w", tmp, err)
	}
	f, err := os.Open(staging)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
			err = fmt.Errorf("its filesystem takes no file locks (flock), which a host holds its directory with; set TMPDIR to a directory on a local filesystem: %w", err)
		}
	}
	var final string
	if err == nil {
		final = filepath.Join(tmp, Prefix+strings.TrimPrefix(filepath.Base(staging), "."+Prefix+"new-"))
		err = os.Rename(staging, final)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.Remove(staging)
		return "", nil, fmt.Errorf("make the host's temporary directory in %s: %w", tmp, err)
	}
	return final, f, nil
}

// Sweeper is a sweep running in the background (Background).
type Sweeper struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Background sweeps tmp in a goroutine of its own and hands report what
// it removed and what it could not. Its host stops it when it closes.
func Background(tmp string, report func(removed []string, err error)) *Sweeper {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sweeper{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		removed, err := Sweep(ctx, tmp)
		if report != nil {
			report(removed, err)
		}
	}()
	return s
}

// Wait waits for the sweep to end.
func (s *Sweeper) Wait() { <-s.done }

// Stop ends the sweep before its next directory (one being removed is
// removed whole) and waits for it.
func (s *Sweeper) Stop() {
	s.cancel()
	<-s.done
}

// stagingAge is how old a directory still under its temporary name must
// be for a sweep to take it: its maker locks and renames it within
// microseconds, so one that old was left by a host killed in between.
const stagingAge = time.Minute

// Sweep removes every hearth-host-* directory in tmp that this user owns
// and whose lock is free, and returns their paths; also those left
// under their temporary name, unlocked, older than stagingAge.
// Directories of live hosts, of other users, and anything that is not a
// directory are left alone. It stops between directories once ctx is
// done.
func Sweep(ctx context.Context, tmp string) ([]string, error) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		staging := strings.HasPrefix(e.Name(), "."+Prefix+"new-")
		if !strings.HasPrefix(e.Name(), Prefix) && !staging || e.Type() != fs.ModeDir {
			continue
		}
		if staging {
			if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < stagingAge {
				continue
			}
		}
		path := filepath.Join(tmp, e.Name())
		gone, err := sweepOne(path)
		if err != nil {
			errs = append(errs, err)
		}
		if gone {
			removed = append(removed, path)
		}
	}
	return removed, errors.Join(errs...)
}

func sweepOne(path string) (bool, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false, nil // gone meanwhile, or not ours to open
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || int(st.Uid) != os.Getuid() {
		return false, nil
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil // its host lives
	}
	// Held while removing: a host cannot start using it meanwhile, as
	// no live host names a directory it does not hold.
	if err := os.RemoveAll(path); err != nil {
		return false, fmt.Errorf("remove %s, left by a host that is gone: %w", path, err)
	}
	return true, nil
}
