package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// Damage is one thing Verify found damaged.
type Damage struct {
	// File is the damaged file, relative to the data directory: a table,
	// the MANIFEST, a stored file; empty for a record whose file Badger
	// does not say.
	File string `json:"file,omitempty"`
	// Key and What name a damaged record (What for people).
	Key  string `json:"key,omitempty"`
	What string `json:"what"`
	// Problem is what is wrong with it.
	Problem string `json:"problem"`
}

// VerifyReport is what Verify checked and found.
type VerifyReport struct {
	Dir     string   `json:"dir"`
	Tables  int      `json:"tables"`
	Records int      `json:"records"`
	Files   int      `json:"files"`
	Damage  []Damage `json:"damage"`
}

// OK reports whether nothing was found damaged.
func (r *VerifyReport) OK() bool { return len(r.Damage) == 0 }

// VerifyDir checks the data directory dir without writing to it: every
// table's blocks against their checksums, then, when the tables are whole,
// every record (its value-log checksum, and that it decodes as the record
// its key says), and every stored file against the SHA-256 it is named by.
// It opens the directory Read: one that was not closed cleanly must be
// recovered first (ErrNeedsRecovery); one another process has open to
// write is refused.
func VerifyDir(ctx context.Context, dir string) (*VerifyReport, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{Dir: abs}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", abs, err)
	}
	// Held, shared, while the files are looked at: a writer's files in
	// motion are not damage.
	lock, err := lockDir(abs, Read)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	problems, _, err := inspectDir(abs, Read, false)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		rep.Damage = append(rep.Damage, Damage{File: p.File, What: "file " + p.File, Problem: strings.TrimPrefix(p.Problem, "is ")})
	}
	if len(problems) > 0 {
		// Badger cannot be trusted with the records until the tables are
		// whole: report what is known.
		return rep, nil
	}
	s, err := Open(abs, Read, Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return rep, s.verifyRecords(ctx, rep)
}

// verifyRecords reads every record and stored file.
func (s *Store) verifyRecords(ctx context.Context, rep *VerifyReport) error {
	rep.Tables = len(s.db.Tables())
	refs := map[string]string{}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			key := item.KeyCopy(nil)
			rep.Records++
			problem := recordProblem(item, key, refs)
			if problem != "" {
				rep.Damage = append(rep.Damage, Damage{Key: string(key), What: describeKey(key), Problem: problem})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := verifyValueLogs(s.dir, rep); err != nil {
		return err
	}
	files := s.FilesDir()
	if files == "" {
		return nil
	}
	err = filepath.WalkDir(files, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == files {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rep.Files++
		delete(refs, d.Name())
		rel, _ := filepath.Rel(s.dir, p)
		sum, err := fileSHA256(p)
		switch {
		case err != nil:
			rep.Damage = append(rep.Damage, Damage{File: rel, What: "stored file " + d.Name(), Problem: err.Error()})
		case sum != d.Name():
			rep.Damage = append(rep.Damage, Damage{File: rel, What: "stored file " + d.Name(), Problem: "its content does not match its SHA-256 (" + sum + ")"})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, sha := range slices.Sorted(maps.Keys(refs)) {
		rel, _ := filepath.Rel(s.dir, filepath.Join(files, sha[:2], sha))
		rep.Damage = append(rep.Damage, Damage{File: rel, What: "stored file " + sha, Problem: "is missing (" + refs[sha] + " refers to it)"})
	}
	return nil
}

// verifyValueLogs reads every value log of dir whole: a damaged value
// is an error naming its record, which Badger does not say the file of;
// this names the file. A log Badger closed ends with its last entry (what
// follows it may be zeros, never anything else), so entries that stop
// being whole before its end are damage, whether or not a record points
// past it.
func verifyValueLogs(dir string, rep *VerifyReport) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		return err
	}
	for _, p := range names {
		if err := verifyValueLog(p, rep); err != nil {
			return err
		}
	}
	return nil
}

// verifyValueLog is verifyValueLogs for the log at p, mapped, not read
// into memory: a value log may be a GiB.
func verifyValueLog(p string, rep *VerifyReport) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("value log %s: %w", p, err)
	}
	defer unix.Munmap(b)
	end := walkLog(b, nil)
	if end < len(b) && slices.ContainsFunc(b[end:], func(c byte) bool { return c != 0 }) {
		name := filepath.Base(p)
		rep.Damage = append(rep.Damage, Damage{File: name, What: "value log " + name, Problem: fmt.Sprintf("damaged at byte %d of %d (its entries stop being whole there)", end, len(b))})
	}
	return nil
}

// recordProblem says what is wrong with the record item (under key), or
// "" when nothing is: its value cannot be read (Badger's value-log
// checksum), or does not decode as the record its key says. The stored
// files a run record refers to are added to refs, with the run's name.
func recordProblem(item *badger.Item, key []byte, refs map[string]string) (problem string) {
	defer func() {
		if r := recover(); r != nil {
			problem = fmt.Sprint("reading it panicked: ", r)
		}
	}()
	v, err := item.ValueCopy(nil)
	if err != nil {
		return err.Error()
	}
	if m := recordType(key); m != nil {
		if err := decode(v, m); err != nil {
			return err.Error()
		}
		if r, ok := m.(*storepb.Run); ok && refs != nil {
			for _, f := range r.GetFiles() {
				if sha := f.GetSha256(); len(sha) == 64 {
					refs[sha] = describeKey(key)
				}
			}
		}
	} else if strings.HasPrefix(string(key), "m/schema") && len(v) != 4 {
		return fmt.Sprintf("holds %d bytes, want 4", len(v))
	}
	return ""
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
