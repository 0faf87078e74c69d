package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// A data directory is checked before Badger sees it. Badger trusts its
// directory: opened read-write without its MANIFEST it starts a new one and
// deletes the tables the new one does not list (a read-only command wiped
// a directory that way), a truncated table panics inside Badger's own
// goroutines where nothing can recover it, and a table block that fails
// its checksum is read as a missing key. So every table the MANIFEST lists
// is read in full with Badger's own table reader, here, under recover,
// and a directory that does not look whole is refused with what is wrong,
// before anything in it is touched.

// DirError says why a data directory cannot be opened as it is. Nothing in
// the directory was changed.
type DirError struct {
	Dir string
	// File is the file at fault, relative to Dir.
	File    string
	Problem string
	// Fix says what the user can do.
	Fix string
}

func (e *DirError) Error() string {
	return fmt.Sprintf("data directory %s: %s %s; nothing in it was changed. %s", e.Dir, e.File, e.Problem, e.Fix)
}

func (e *DirError) Unwrap() error { return ErrDamaged }

// recoverFix is what a user does about a directory whose files are
// damaged or missing.
const recoverFix = "Restore it from a backup (hearth restore FILE --data-dir NEW), or see docs/recovery.md."

// checkDir refuses a directory that Badger would misread or damage. A
// directory that does not exist, or holds no Badger file, is new.
func checkDir(dir string) error {
	errs, err := inspectDir(dir, true)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// inspectDir finds what makes dir unsafe to open: every problem, or only
// the first when first is set.
func inspectDir(dir string, first bool) ([]*DirError, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	var tables, logs int
	has := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		has[name] = true
		switch filepath.Ext(name) {
		case ".sst":
			tables++
		case ".vlog", ".mem":
			logs++
		}
	}
	if !has["MANIFEST"] {
		if tables+logs == 0 {
			return nil, nil
		}
		return []*DirError{{Dir: dir, File: "MANIFEST", Problem: fmt.Sprintf("is missing, beside %d tables and %d logs: without it the tables cannot be read, and opening the directory would delete them", tables, logs), Fix: recoverFix}}, nil
	}
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return []*DirError{{Dir: dir, File: "MANIFEST", Problem: "cannot be read: " + err.Error(), Fix: recoverFix}}, nil
	}
	defer f.Close()
	m, _, err := replayManifest(f, dir)
	if err != nil {
		return []*DirError{{Dir: dir, File: "MANIFEST", Problem: "is damaged: " + err.Error(), Fix: recoverFix}}, nil
	}
	ids := slices.Sorted(maps.Keys(m.Tables))
	var out []*DirError
	for _, id := range ids {
		name := table.IDToFilename(id)
		if !has[name] {
			out = append(out, &DirError{Dir: dir, File: name, Problem: "is missing (the MANIFEST lists it)", Fix: recoverFix})
		} else if err := verifyTable(filepath.Join(dir, name), m.Tables[id].Compression); err != nil {
			out = append(out, &DirError{Dir: dir, File: name, Problem: "is damaged: " + err.Error(), Fix: recoverFix})
		}
		if first && len(out) > 0 {
			break
		}
	}
	return out, nil
}

// replayManifest reads a MANIFEST under recover: a damaged one must be an
// error, not a panic.
func replayManifest(f *os.File, dir string) (m badger.Manifest, off int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
}

// verifyTable reads every block of a table and checks its checksum, with
// Badger's reader, under recover. The file is opened read-only and
// closed, never deleted (a table's DecrRef would delete it).
func verifyTable(path string, c options.CompressionType) (err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return errors.New("it is empty")
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("it cannot be read (%v)", r)
		}
		_ = mf.Close(-1)
	}()
	// OpenTable with OnTableRead reads and checks every block.
	_, err = table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.OnTableRead, BlockSize: 4 << 10, Compression: c})
	if err != nil {
		// Badger's message repeats the path; keep the cause.
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg[:i], "checksum") {
			return errors.New("a block fails its checksum")
		}
		return err
	}
	return nil
}
