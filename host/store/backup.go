package store

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/binary"
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

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"
)

// A backup is a tar stream of three parts, in this order:
//
//	hearth-backup.json   what it is: format, layout, when, how many records,
//	                     and the SHA-256 of badger.kv
//	badger.kv            every record, in Badger's backup format (what
//	                     `badger restore` and DB.Load read: length-prefixed
//	                     KVLists), read in one transaction: a snapshot
//	files/<aa>/<sha256>  the stored files runs refer to
//
// Backup works on a store that is serving: the records are one read
// transaction's view, and stored files are immutable (a file is only
// removed once no run refers to it, and a run that refers to it in the
// snapshot is in the backup with it).

// backupFormat is the version of the backup layout above.
const backupFormat = 1

// maxBackupChunk bounds one KVList a restore reads: a backup never writes
// more than backupBatch records of at most a value-log file each, and a
// damaged or hostile length must not make restore allocate gigabytes.
const (
	backupBatch    = 1000
	maxBackupChunk = 256 << 20
)

type backupHeader struct {
	Format    int       `json:"format"`
	Layout    int       `json:"layout"`
	Created   time.Time `json:"created"`
	Records   int       `json:"records"`
	KVSHA256  string    `json:"badger_kv_sha256"`
	KVBytes   int64     `json:"badger_kv_bytes"`
	FileCount int       `json:"files"`
}

// BackupStats says what a backup or restore carried.
type BackupStats struct {
	Records int   `json:"records"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
}

// Backup writes a consistent backup of the store to w.
func (s *Store) Backup(ctx context.Context, w io.Writer) (BackupStats, error) {
	var st BackupStats
	if s.dir == "" || s.inMemory {
		return st, errors.New("an in-memory store has no backup")
	}
	kv, err := os.CreateTemp("", "hearth-backup-*.kv")
	if err != nil {
		return st, err
	}
	defer os.Remove(kv.Name())
	defer kv.Close()
	h := sha256.New()
	mw := io.MultiWriter(kv, h)
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: false})
		defer it.Close()
		list := &pb.KVList{}
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return damaged(item.KeyCopy(nil), err)
			}
			list.Kv = append(list.Kv, &pb.KV{Key: item.KeyCopy(nil), Value: v, UserMeta: []byte{item.UserMeta()}, Version: item.Version(), ExpiresAt: item.ExpiresAt()})
			st.Records++
			if len(list.Kv) == backupBatch {
				if err := writeKVList(mw, list); err != nil {
					return err
				}
				list = &pb.KVList{}
			}
		}
		if len(list.Kv) > 0 {
			return writeKVList(mw, list)
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("backup: read the records: %w", err)
	}
	size, err := kv.Seek(0, io.SeekCurrent)
	if err != nil {
		return st, err
	}
	if _, err := kv.Seek(0, io.SeekStart); err != nil {
		return st, err
	}
	files, err := s.storedFiles()
	if err != nil {
		return st, err
	}
	tw := tar.NewWriter(w)
	hdr, _ := json.MarshalIndent(backupHeader{Format: backupFormat, Layout: Layout, Created: time.Now().UTC(), Records: st.Records,
		KVSHA256: hex.EncodeToString(h.Sum(nil)), KVBytes: size, FileCount: len(files)}, "", "  ")
	if err := writeTarFile(tw, "hearth-backup.json", int64(len(hdr)), strings.NewReader(string(hdr))); err != nil {
		return st, err
	}
	if err := writeTarFile(tw, "badger.kv", size, kv); err != nil {
		return st, err
	}
	st.Bytes = size
	for _, rel := range files {
		f, err := os.Open(filepath.Join(s.dir, rel))
		if err != nil {
			return st, fmt.Errorf("backup: %w", err)
		}
		fi, err := f.Stat()
		if err == nil {
			err = writeTarFile(tw, filepath.ToSlash(rel), fi.Size(), f)
			st.Bytes += fi.Size()
		}
		f.Close()
		if err != nil {
			return st, fmt.Errorf("backup: %s: %w", rel, err)
		}
		st.Files++
	}
	return st, tw.Close()
}

// storedFiles lists the file store's files, relative to the data
// directory.
func (s *Store) storedFiles() ([]string, error) {
	var out []string
	root := s.FilesDir()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		out = append(out, rel)
		return nil
	})
	return out, err
}

func writeKVList(w io.Writer, list *pb.KVList) error {
	b, err := proto.Marshal(list)
	if err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, uint64(len(b))); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeTarFile(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := io.CopyN(tw, r, size)
	return err
}

// RestoreError is a backup that cannot be restored; what restore had
// written is removed.
type RestoreError struct {
	Problem string
}

func (e *RestoreError) Error() string { return "restore: " + e.Problem }

// Restore writes the backup r into dir, which must not exist or be
// empty. Every part is checked (the records against the SHA-256 the
// backup holds, each file against its name); on any failure what was
// written is removed.
func Restore(ctx context.Context, r io.Reader, dir string) (st BackupStats, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return st, err
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return st, &RestoreError{Problem: abs + " is not empty; restore into a new directory (--data-dir NEW)"}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return st, err
	}
	defer func() {
		if err != nil {
			entries, _ := os.ReadDir(abs)
			for _, e := range entries {
				os.RemoveAll(filepath.Join(abs, e.Name()))
			}
		}
	}()
	tr := tar.NewReader(r)
	next := func(want string) (*tar.Header, error) {
		h, err := tr.Next()
		if err != nil {
			return nil, &RestoreError{Problem: fmt.Sprintf("not a hearth backup: reading %s: %v", want, err)}
		}
		if want != "" && h.Name != want {
			return nil, &RestoreError{Problem: fmt.Sprintf("not a hearth backup: found %q where %s should be", h.Name, want)}
		}
		return h, nil
	}
	h, err := next("hearth-backup.json")
	if err != nil {
		return st, err
	}
	var hdr backupHeader
	if h.Size > 1<<20 {
		return st, &RestoreError{Problem: "hearth-backup.json is too large"}
	}
	if err := json.NewDecoder(io.LimitReader(tr, h.Size)).Decode(&hdr); err != nil {
		return st, &RestoreError{Problem: "hearth-backup.json does not read: " + err.Error()}
	}
	if hdr.Format != backupFormat || hdr.Layout > Layout {
		return st, &RestoreError{Problem: fmt.Sprintf("backup format %d, layout %d: this hearth restores format %d up to layout %d; use a newer hearth", hdr.Format, hdr.Layout, backupFormat, Layout)}
	}
	if _, err := next("badger.kv"); err != nil {
		return st, err
	}
	db, err := openBadger(badgerOptions(abs, false, hclog.NewNullLogger()))
	if err != nil {
		return st, err
	}
	sum := sha256.New()
	n, loadErr := loadKV(ctx, db, io.TeeReader(tr, sum))
	closeErr := db.Close()
	if loadErr != nil {
		return st, &RestoreError{Problem: "badger.kv: " + loadErr.Error()}
	}
	if closeErr != nil {
		return st, closeErr
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != hdr.KVSHA256 || n != hdr.Records {
		return st, &RestoreError{Problem: fmt.Sprintf("badger.kv does not match the backup's header (%d records, SHA-256 %s; the header says %d, %s): the backup is damaged", n, got, hdr.Records, hdr.KVSHA256)}
	}
	st.Records = n
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, &RestoreError{Problem: "reading the stored files: " + err.Error()}
		}
		name := filepath.FromSlash(h.Name)
		parts := strings.Split(h.Name, "/")
		if len(parts) != 3 || parts[0] != "files" || len(parts[2]) != 64 || parts[1] != parts[2][:2] || h.Typeflag != tar.TypeReg {
			return st, &RestoreError{Problem: fmt.Sprintf("unexpected entry %q", h.Name)}
		}
		dst := filepath.Join(abs, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return st, err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o400)
		if err != nil {
			return st, err
		}
		fh := sha256.New()
		_, err = io.Copy(io.MultiWriter(f, fh), tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return st, err
		}
		if hex.EncodeToString(fh.Sum(nil)) != parts[2] {
			return st, &RestoreError{Problem: fmt.Sprintf("stored file %s does not match its SHA-256: the backup is damaged", parts[2])}
		}
		st.Files++
		st.Bytes += h.Size
	}
	if st.Files != hdr.FileCount {
		return st, &RestoreError{Problem: fmt.Sprintf("the backup holds %d stored files, its header says %d: it is incomplete", st.Files, hdr.FileCount)}
	}
	return st, nil
}

// loadKV reads Badger's backup format into db with a bound on each chunk.
func loadKV(ctx context.Context, db *badger.DB, r io.Reader) (int, error) {
	ldr := db.NewKVLoader(16)
	n := 0
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		var sz uint64
		if err := binary.Read(r, binary.LittleEndian, &sz); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return n, err
		}
		if sz > maxBackupChunk {
			return n, fmt.Errorf("a chunk of %d bytes, more than a backup writes", sz)
		}
		if cap(buf) < int(sz) {
			buf = make([]byte, sz)
		}
		if _, err := io.ReadFull(r, buf[:sz]); err != nil {
			return n, err
		}
		var list pb.KVList
		if err := proto.Unmarshal(buf[:sz], &list); err != nil {
			return n, err
		}
		for _, kv := range list.Kv {
			// Badger's internal flags (value pointers, deletes) are not
			// a backup's to set: a backup holds values.
			kv.Meta = nil
			if len(kv.Key) == 0 || kv.Version == 0 {
				return n, errors.New("a record without a key or a version")
			}
			if err := ldr.Set(kv); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, ldr.Finish()
}
