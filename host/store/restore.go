package store

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
)

// A restore is written so that an interruption, at any point and by any
// signal (kill -9 included), never leaves something that reads as a
// store:
//
//   - Nothing is written before the backup's header is read and the free
//     space checked against what it says the restore writes (Badger
//     writes through memory maps: running out of space is SIGBUS).
//   - A new data directory is written under another name beside it,
//     .NAME.restoring, and renamed into place once complete; an existing
//     empty one is written in place.
//   - Either way the directory being written holds RESTORE-INCOMPLETE
//     from before the first byte of the backup is written until after
//     the last is synced. Every command refuses a directory holding it
//     (open.go), naming it; the next restore into the same directory
//     removes what an interrupted one left, unless that one still runs
//     (it holds the directory's lock).
//   - A restore that fails, or is cancelled (a signal the command
//     catches), removes what it wrote.

// restoreMarker is the file that marks a directory a restore is writing.
const restoreMarker = "RESTORE-INCOMPLETE"

// restoreNote is what restoreMarker holds: which restore, for the
// message of a command that finds it.
type restoreNote struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	From    string    `json:"from"`
	Into    string    `json:"into"`
}

// RestoreOptions say where a backup comes from and how much free space
// to keep.
type RestoreOptions struct {
	// Source names the backup for messages: its file, or "-" for stdin.
	Source string
	// Size is the backup's size in bytes when known (a file), 0 when not;
	// a backup's header says what it holds, older backups only in part.
	Size int64
	// MinFreeSpace is the free space the restore leaves, as the store's
	// option of that name: 0 means DefaultMinFreeSpace, negative none.
	MinFreeSpace int64
}

// RestoreError is a backup that cannot be restored, or a directory it
// cannot be restored into; what restore had written is removed.
type RestoreError struct {
	// Source is the backup (RestoreOptions.Source).
	Source  string
	Problem string
}

func (e *RestoreError) Error() string {
	switch e.Source {
	case "":
		return "restore: " + e.Problem
	case "-":
		return "restore from stdin: " + e.Problem
	}
	return "restore " + e.Source + ": " + e.Problem
}

// stagingDir is where a restore into the new directory target writes.
func stagingDir(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".restoring")
}

// Restore writes the backup r into dir, which must not exist, be empty,
// or hold what an interrupted restore left (which it removes). Every part
// is checked (the records against the SHA-256 the backup holds, each
// file against its name); on any failure, and when ctx is done, what was
// written is removed.
func Restore(ctx context.Context, r io.Reader, dir string, opts RestoreOptions) (st BackupStats, err error) {
	target, err := filepath.Abs(dir)
	if err != nil {
		return st, err
	}
	refuse := func(format string, args ...any) (BackupStats, error) {
		return st, &RestoreError{Source: opts.Source, Problem: fmt.Sprintf(format, args...)}
	}
	inPlace, err := clearTarget(target)
	if err != nil {
		var re *RestoreError
		if errors.As(err, &re) {
			re.Source = opts.Source
		}
		return st, err
	}
	work := target
	if !inPlace {
		work = stagingDir(target)
		if err := removeInterrupted(work); err != nil {
			return st, err
		}
		if err := os.MkdirAll(filepath.Dir(work), 0o700); err != nil {
			return st, err
		}
	}

	tr := tar.NewReader(r)
	hdr, err := readBackupHeader(tr)
	if err != nil {
		if re, ok := err.(*RestoreError); ok {
			re.Source = opts.Source
		}
		return st, err
	}
	// What the restore writes: the records twice at most (a memtable log
	// and its tables; the value log for large values), and the stored
	// files.
	files := hdr.FilesBytes
	if files == 0 && opts.Size > 0 {
		files = max(opts.Size-hdr.KVBytes, 0)
	}
	min := minFreeSpace(opts.MinFreeSpace)
	what := fmt.Sprintf("restoring a backup of %s (%d records, %d stored files)", mib(uint64(hdr.KVBytes+files)), hdr.Records, hdr.FileCount)
	if err := haveSpace(filepath.Dir(work), min, 2*uint64(hdr.KVBytes)+uint64(files), what, "free space (or lower min_free_space), or restore onto another file system; nothing was written"); err != nil {
		return st, err
	}

	if !inPlace {
		if err := os.Mkdir(work, 0o700); err != nil {
			return st, err
		}
	}
	lock, err := lockDir(work, Write)
	if err != nil {
		return st, err
	}
	defer lock.release()
	defer func() {
		if err == nil {
			return
		}
		if inPlace {
			clearDir(work)
		} else {
			os.RemoveAll(work)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w; nothing was restored (what had been written is removed)", err)
		}
	}()
	note, _ := json.Marshal(restoreNote{PID: os.Getpid(), Started: time.Now().UTC(), From: opts.Source, Into: target})
	if err := writeSynced(filepath.Join(work, restoreMarker), note); err != nil {
		return st, err
	}

	// The directory is held by lock, the lock Badger would take.
	db, err := openBadger(badgerOptions(work, false, hclog.NewNullLogger()).WithBypassLockGuard(true))
	if err != nil {
		return st, err
	}
	sum := sha256.New()
	n, loadErr := loadKV(ctx, db, io.TeeReader(tr, sum), func() error {
		return haveSpace(work, min, 0, what, "free space (or lower min_free_space), or restore onto another file system")
	})
	closeErr := db.Close()
	switch {
	case loadErr != nil && ctx.Err() != nil:
		return st, context.Cause(ctx)
	case errors.Is(loadErr, hearth.ErrNoSpace):
		return st, loadErr
	case loadErr != nil:
		return refuse("badger.kv: %v", loadErr)
	case closeErr != nil:
		return st, closeErr
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != hdr.KVSHA256 || n != hdr.Records {
		return refuse("badger.kv does not match the backup's header (%d records, SHA-256 %s; the header says %d, %s): the backup is damaged", n, got, hdr.Records, hdr.KVSHA256)
	}
	st.Records = n
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return refuse("reading the stored files: %v", err)
		}
		parts := strings.Split(h.Name, "/")
		if len(parts) != 3 || parts[0] != "files" || len(parts[2]) != 64 || parts[1] != parts[2][:2] || h.Typeflag != tar.TypeReg {
			return refuse("unexpected entry %q", h.Name)
		}
		sum, err := restoreFile(ctx, filepath.Join(work, filepath.FromSlash(h.Name)), tr)
		switch {
		case err != nil && ctx.Err() != nil:
			return st, context.Cause(ctx)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return refuse("stored file %s is cut short: the backup is incomplete", parts[2])
		case err != nil:
			return st, err
		case sum != parts[2]:
			return refuse("stored file %s does not match its SHA-256: the backup is damaged", parts[2])
		}
		st.Files++
		st.Bytes += h.Size
	}
	if st.Files != hdr.FileCount {
		return refuse("the backup holds %d stored files, its header says %d: it is incomplete", st.Files, hdr.FileCount)
	}
	if err := ctx.Err(); err != nil {
		return st, context.Cause(ctx)
	}
	// Complete: unmarked, then in place.
	if err := os.Remove(filepath.Join(work, restoreMarker)); err != nil {
		return st, err
	}
	if err := syncDir(work); err != nil {
		return st, err
	}
	if !inPlace {
		if err := os.Rename(work, target); err != nil {
			return st, err
		}
		if err := syncDir(filepath.Dir(target)); err != nil {
			return st, err
		}
	}
	return st, nil
}

// readBackupHeader reads hearth-backup.json, the first entry of a backup,
// and checks that this hearth restores it.
func readBackupHeader(tr *tar.Reader) (backupHeader, error) {
	var hdr backupHeader
	h, err := tr.Next()
	if err != nil {
		return hdr, &RestoreError{Problem: fmt.Sprintf("not a hearth backup: reading hearth-backup.json: %v", err)}
	}
	if h.Name != "hearth-backup.json" {
		return hdr, &RestoreError{Problem: fmt.Sprintf("not a hearth backup: found %q where hearth-backup.json should be", h.Name)}
	}
	if h.Size > 1<<20 {
		return hdr, &RestoreError{Problem: "hearth-backup.json is too large"}
	}
	if err := json.NewDecoder(io.LimitReader(tr, h.Size)).Decode(&hdr); err != nil {
		return hdr, &RestoreError{Problem: "hearth-backup.json does not read: " + err.Error()}
	}
	if hdr.Format != backupFormat || hdr.Layout > Layout {
		return hdr, &RestoreError{Problem: fmt.Sprintf("backup format %d, layout %d: this hearth restores format %d up to layout %d; use a newer hearth", hdr.Format, hdr.Layout, backupFormat, Layout)}
	}
	if hdr.KVBytes < 0 || hdr.FilesBytes < 0 || hdr.Records < 0 || hdr.FileCount < 0 {
		return hdr, &RestoreError{Problem: "hearth-backup.json holds a negative size or count: the backup is damaged"}
	}
	if next, err := tr.Next(); err != nil || next.Name != "badger.kv" {
		name := ""
		if next != nil {
			name = next.Name
		}
		return hdr, &RestoreError{Problem: fmt.Sprintf("not a hearth backup: found %q (%v) where badger.kv should be", name, err)}
	} else if next.Size != hdr.KVBytes {
		return hdr, &RestoreError{Problem: fmt.Sprintf("badger.kv holds %d bytes, the header says %d: the backup is damaged", next.Size, hdr.KVBytes)}
	}
	return hdr, nil
}

// clearTarget checks that target can be restored into: it does not
// exist (inPlace false), or it is an empty directory, or one an
// interrupted restore left, which it empties (inPlace true).
func clearTarget(target string) (inPlace bool, err error) {
	entries, err := os.ReadDir(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case len(entries) == 0:
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(target, restoreMarker)); err != nil {
		return false, &RestoreError{Problem: target + " is not empty; restore into a new directory (--data-dir NEW)"}
	}
	lock, err := lockDir(target, Write)
	if err != nil {
		return false, &RestoreError{Problem: fmt.Sprintf("%s is being restored into by another process: %v", target, err)}
	}
	defer lock.release()
	clearDir(target)
	return true, nil
}

// removeInterrupted removes dir, what an interrupted restore left beside
// its target, unless a restore still writes it.
func removeInterrupted(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lock, err := lockDir(dir, Write)
	if err != nil {
		return &RestoreError{Problem: fmt.Sprintf("another restore is writing %s: %v", dir, err)}
	}
	defer lock.release()
	return os.RemoveAll(dir)
}

// clearDir removes everything in dir, and leaves dir.
func clearDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// restoreFile writes the stored file path from r, synced, read-only, and
// returns its SHA-256.
func restoreFile(ctx context.Context, path string, r io.Reader) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o400)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), &ctxReader{ctx: ctx, r: r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// writeSynced writes a new file at path with b, and syncs it and its
// directory.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir syncs a directory, so that the entries made in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// interruptedRestore is the problem a directory holding restoreMarker is,
// for open.go.
func interruptedRestore(dir string) *DirError {
	var note restoreNote
	b, _ := os.ReadFile(filepath.Join(dir, restoreMarker))
	_ = json.Unmarshal(b, &note)
	what := "marks a restore that did not finish"
	if note.From != "" {
		what += fmt.Sprintf(" (of %s, started %s by process %d)", cmp.Or(note.From, "?"), note.Started.Format(time.RFC3339), note.PID)
	}
	into := cmp.Or(note.Into, dir)
	return &DirError{Dir: dir, File: restoreMarker,
		Problem: what + ": the directory holds part of a backup, not a store",
		Fix:     fmt.Sprintf("Run the restore again (hearth --data-dir %s restore BACKUP), which removes what the interrupted one left, or remove %s.", into, dir)}
}
