package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

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
destination and renamed into place once complete, so a failed backup never
leaves a partial file under the name. When a daemon serves the directory
the backup is taken through it, while it serves.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := m.daemon(cmd.Context())
			if err != nil {
				return err
			}
			if c != nil {
				defer c.Close()
				backup := func(w io.Writer) (store.BackupStats, error) {
					st, err := c.Backup(cmd.Context(), w)
					return store.BackupStats(st), err
				}
				if args[0] == "-" {
					_, err := backup(m.Stdout)
					return err
				}
				st, err := writeAtomically(args[0], backup)
				if err != nil {
					return err
				}
				fmt.Fprintf(m.Stderr, "backed up the data directory of the daemon on %s to %s: %d bytes\n", c.Target(), args[0], st.Bytes)
				return nil
			}
			dir, _, err := m.dataDirPath()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return usagef("no data directory at %s", dir)
			}
			st, err := m.openStore(store.Read)
			if err != nil {
				return err
			}
			defer st.Close()
			if args[0] == "-" {
				_, err := st.Backup(cmd.Context(), m.Stdout)
				return err
			}
			stats, err := writeAtomically(args[0], func(w io.Writer) (store.BackupStats, error) { return st.Backup(cmd.Context(), w) })
			if err != nil {
				return err
			}
			fmt.Fprintf(m.Stderr, "backed up %s to %s: %d records, %d stored files, %d bytes\n", shortPath(st.Dir()), args[0], stats.Records, stats.Files, stats.Bytes)
			return nil
		},
	}
	return c
}

// writeAtomically writes to a temporary file beside path and renames it
// into place once write succeeded and the file is synced.
func writeAtomically(path string, write func(io.Writer) (store.BackupStats, error)) (store.BackupStats, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return store.BackupStats{}, err
	}
	defer os.Remove(tmp.Name())
	st, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return st, err
}

func (m *Main) restoreCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "restore FILE|-",
		Short: "Restore a backup into the data directory, which must be new or empty",
		Long: `Restore reads a backup hearth backup wrote (- for stdin) into the data
directory (--data-dir), which must not exist or be empty. Every part is
checked against the checksums the backup holds; a damaged backup is
refused and nothing is left behind.`,
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, _, err := m.dataDirPath()
			if err != nil {
				return err
			}
			var r io.Reader = m.Stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return usagef("%v", err)
				}
				defer f.Close()
				r = f
			}
			st, err := store.Restore(cmd.Context(), r, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(m.Stdout, "restored %d records and %d stored files into %s\n", st.Records, st.Files, shortPath(dir))
			return nil
		},
	}
	return c
}

func (m *Main) recoverCommand() *cobra.Command {
	return &cobra.Command{
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
			if err := store.Recover(dir, store.Options{Logger: m.logger().Named("store")}); err != nil {
				return err
			}
			fmt.Fprintf(m.Stdout, "%s: replayed; it reads read-only again\n", shortPath(dir))
			return nil
		},
	}
}
