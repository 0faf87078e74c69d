package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth/host/store"
)

// The commands that look after the data directory itself: verify, backup,
// restore and recover. They work on the directory, not through a daemon:
// a daemon that serves it holds it, and they say so (store.LockedError).
// docs/recovery.md says which to use for what.

func (m *Main) verifyCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify",
		Short: "Check every table, record and stored file of the data directory; exit 1 on any damage",
		Long: `Verify reads the whole data directory without writing to it: every
table block against its checksum, every record (its value-log checksum,
and that it decodes), and every stored file against its SHA-256. It lists
what is damaged by file, run and session, and exits 1 if anything is.
Like every command that only reads, it changes nothing: a directory a
crash left with writes to replay is refused until hearth recover replays
them. Stop a daemon that serves the directory first.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, _, err := m.dataDirPath()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return usagef("no data directory at %s", dir)
			}
			rep, err := store.VerifyDir(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if asJSON {
				if err := m.printJSON(rep); err != nil {
					return err
				}
			} else {
				m.printVerify(rep)
			}
			if !rep.OK() {
				return errSilent
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (m *Main) printVerify(rep *store.VerifyReport) {
	w := m.Stdout
	if rep.OK() {
		fmt.Fprintf(w, "%s: no damage (%d tables, %d records, %d stored files)\n", rep.Dir, rep.Tables, rep.Records, rep.Files)
		return
	}
	fmt.Fprintf(w, "%s: %d damaged (%d tables, %d records, %d stored files read)\n", rep.Dir, len(rep.Damage), rep.Tables, rep.Records, rep.Files)
	for _, d := range rep.Damage {
		where := d.File
		if where == "" {
			where = "record " + fmt.Sprintf("%q", d.Key)
		}
		fmt.Fprintf(w, "  %s (%s): %s\n", d.What, where, d.Problem)
	}
	fmt.Fprintf(w, "docs/recovery.md says what to do about each kind.\n")
}

func (m *Main) backupCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "backup FILE|-",
		Short: "Write a consistent backup of the data directory to FILE (- for stdout)",
		Long: `Backup writes every record, as one snapshot, and every stored file to a
tar file that hearth restore reads. The file is written beside its
destination, as .FILE.XXXX.partial, and renamed into place once complete,
so a failed backup never leaves a partial file under the name. An
interrupted backup (Ctrl-C, SIGTERM, any signal a process can catch)
removes it; one killed with SIGKILL cannot, and the next backup to FILE
does. With -, the backup goes to stdout, which must not be a terminal.
When a daemon serves the directory the backup is taken through it, while
it serves.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := m.interruptible(cmd.Context())
			defer stop()
			backup, from, done, err := m.backupSource(ctx)
			if err != nil {
				return err
			}
			defer done()
			if args[0] == "-" {
				out, err := m.byteStream(cmd)
				if err != nil {
					return err
				}
				_, err = backup(out)
				return interrupted(ctx, err)
			}
			st, err := m.writeAtomically(args[0], backup)
			if err != nil {
				return interrupted(ctx, err)
			}
			if st.Records > 0 {
				fmt.Fprintf(m.Stderr, "backed up %s to %s: %d records, %d stored files, %d bytes\n", from, args[0], st.Records, st.Files, st.Bytes)
			} else {
				fmt.Fprintf(m.Stderr, "backed up %s to %s: %d bytes\n", from, args[0], st.Bytes)
			}
			return nil
		},
	}
	return streamsBytes(c)
}

// backupSource is where a backup comes from: the daemon that serves the
// data directory, or the directory, opened to read. done releases it.
func (m *Main) backupSource(ctx context.Context) (backup func(io.Writer) (store.BackupStats, error), from string, done func(), err error) {
	c, err := m.daemon(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	if c != nil {
		return func(w io.Writer) (store.BackupStats, error) {
			st, err := c.Backup(ctx, w)
			return store.BackupStats(st), err
		}, "the data directory of the daemon on " + c.Target(), func() { c.Close() }, nil
	}
	dir, _, err := m.dataDirPath()
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, "", nil, usagef("no data directory at %s", dir)
	}
	st, err := m.openStore(store.Read)
	if err != nil {
		return nil, "", nil, err
	}
	return func(w io.Writer) (store.BackupStats, error) { return st.Backup(ctx, w) }, shortPath(st.Dir()), func() { st.Close() }, nil
}

// partialSuffix ends the name of a backup being written: .FILE.XXXX.partial,
// beside FILE. Its writer holds an exclusive flock(2) on it; one nobody
// holds is what a backup killed with SIGKILL left, and the next backup
// to FILE removes it.
const partialSuffix = ".partial"

// writeAtomically writes to a temporary file beside path and renames it
// into place once write succeeded and the file is synced; it removes the
// file when write fails. It removes first what backups to path that were
// killed left beside it.
func (m *Main) writeAtomically(path string, write func(io.Writer) (store.BackupStats, error)) (store.BackupStats, error) {
	dir, base := filepath.Split(path)
	dir = cmp.Or(dir, ".")
	if stale := removePartials(dir, base); len(stale) > 0 {
		fmt.Fprintf(m.Stderr, "removed what %d interrupted backups to %s left: %s\n", len(stale), path, strings.Join(stale, ", "))
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*"+partialSuffix)
	if err != nil {
		return store.BackupStats{}, err
	}
	defer os.Remove(tmp.Name()) // once renamed, there is nothing to remove
	defer tmp.Close()
	if err := unix.Flock(int(tmp.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return store.BackupStats{}, fmt.Errorf("lock %s: %w", tmp.Name(), err)
	}
	st, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return st, err
}

// removePartials removes the partial backups to base in dir that no
// backup is writing (partialSuffix), and returns their names.
func removePartials(dir, base string) []string {
	entries, _ := os.ReadDir(dir)
	var removed []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, "."+base+".") || !strings.HasSuffix(name, partialSuffix) {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil && os.Remove(p) == nil {
			removed = append(removed, name)
		}
		f.Close()
	}
	return removed
}

func (m *Main) restoreCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "restore FILE|-",
		Short: "Restore a backup into the data directory, which must be new or empty",
		Long: `Restore reads a backup hearth backup wrote (- for stdin) into the data
directory (--data-dir), which must not exist or be empty. Every part is
checked against the checksums the backup holds; a damaged backup is
refused and nothing is left behind. It checks the free space against the
backup's size before it writes (the store block's min_free_space is kept
free), and writes a new directory as .DIR.restoring beside it, renamed
into place once complete. An interrupted restore (Ctrl-C, SIGTERM, any
signal a process can catch) removes what it wrote; one killed with
SIGKILL leaves a directory holding RESTORE-INCOMPLETE, which every
command refuses, naming it, and which the next restore into DIR removes.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _, err := m.dataDirPath()
			if err != nil {
				return err
			}
			opts, err := m.storeOptions()
			if err != nil {
				return err
			}
			ctx, stop := m.interruptible(cmd.Context())
			defer stop()
			ropts := store.RestoreOptions{Source: args[0], MinFreeSpace: opts.MinFreeSpace}
			var r io.Reader = m.Stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return usagef("%v", err)
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					ropts.Size = fi.Size()
				}
				r = f
			} else if f, ok := r.(*os.File); ok {
				var done func()
				r, done = cancellable(ctx, f)
				defer done()
			}
			st, err := store.Restore(ctx, r, dir, ropts)
			if err != nil {
				return interrupted(ctx, err)
			}
			fmt.Fprintf(m.Stdout, "restored %d records and %d stored files into %s\n", st.Records, st.Files, shortPath(dir))
			return nil
		},
	}
	return c
}

// interruptSignals are the signals that end a process by default and
// that it can catch. A command that must remove what it wrote when it is
// interrupted (backup, restore) catches every one of them.
var interruptSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGVTALRM}

// interruptible returns ctx, cancelled with the signal as its cause when
// the process receives one of interruptSignals (Main.Interrupts; in a
// test, Main.Signals); stop ends that. While it runs, further signals do
// not end the process: the command cleans up and returns.
func (m *Main) interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	subscribe := m.Interrupts
	if subscribe == nil {
		subscribe = m.Signals
	}
	if subscribe == nil {
		return ctx, func() { cancel(nil) }
	}
	sigs, stopSigs := subscribe()
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("interrupted by %v", sig))
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		stopSigs()
		cancel(nil)
	}
}

// interrupted is err, or the signal that interrupted ctx when there was
// one: the reason the work stopped.
func interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%v)", cause, err)
}

// cancellable is f, read so that ctx's end stops a read that waits (a
// pipe whose writer went quiet): for a pipe or a socket, a duplicate of
// its descriptor, made non-blocking and closed when ctx is done. Other
// files are f itself. done releases the duplicate.
func cancellable(ctx context.Context, f *os.File) (r io.Reader, done func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return f, func() {}
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return f, func() {}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return f, func() {}
	}
	// A non-blocking descriptor is read through the runtime's poller,
	// where Close ends a read that waits.
	nf := os.NewFile(uintptr(fd), f.Name())
	stop := context.AfterFunc(ctx, func() { nf.Close() })
	return nf, func() {
		stop()
		nf.Close()
	}
}

func (m *Main) recoverCommand() *cobra.Command {
	var discard bool
	c := &cobra.Command{
		Use:   "recover",
		Short: "Replay the last writes of a data directory a crash left unreplayed",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			dir, _, err := m.dataDirPath()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return usagef("no data directory at %s", dir)
			}
			opts, err := m.storeOptions()
			if err != nil {
				return err
			}
			opts.DiscardAfterLogDamage = discard
			if err := store.Recover(dir, opts); err != nil {
				return err
			}
			fmt.Fprintf(m.Stdout, "%s: replayed; it reads read-only again\n", shortPath(dir))
			return nil
		},
	}
	c.Flags().BoolVar(&discard, "discard-after-damage", false, "replay a memtable log damaged in the middle up to the damage, losing the writes after it (restoring a backup loses less)")
	return c
}

// storeOptions are the store options of the config (its store block:
// min_free_space and the timeouts), for the commands here that write
// the directory without a host.
func (m *Main) storeOptions() (store.Options, error) {
	cfg, err := m.loadConfig()
	if err != nil {
		return store.Options{}, err
	}
	// The store block decodes into plain values, zero where the file is
	// silent, which the store reads as its defaults (as the engine does).
	st := cfg.Store
	return store.Options{MinFreeSpace: st.MinFreeSpace, StallTimeout: st.StallTimeout, CloseTimeout: st.CloseTimeout,
		Logger: m.logger().Named("store"), Command: "hearth " + m.commandName}, nil
}
