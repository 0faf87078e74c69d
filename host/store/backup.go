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
	// FilesBytes is the stored files' size in all, for restore to check
	// the free space before it writes (0 in backups older than it).
	FilesBytes int64 `json:"files_bytes,omitempty"`
}

// BackupStats says what a backup or restore carried.
type BackupStats struct {
	Records int   `json:"records"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
}

// Backup writes a consistent backup of the store to w. It writes
// nothing anywhere else: the records are read twice from one read
// transaction, once to learn the size and SHA-256 the header holds, once
// to write them (a backup used to spool them to a temporary file, which
// a backup killed left behind, full size).
func (s *Store) Backup(ctx context.Context, w io.Writer) (BackupStats, error) {
	var st BackupStats
	if s.dir == "" || s.inMemory {
		return st, errors.New("an in-memory store has no backup")
	}
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	sum := sha256.New()
	size := &countWriter{w: sum}
	refs := map[string]string{}
	records, err := s.writeKV(ctx, txn, size, refs)
	if err != nil {
		return st, fmt.Errorf("backup: read the records: %w", err)
	}
	kvSum := hex.EncodeToString(sum.Sum(nil))
	files, err := s.storedFiles()
	if err != nil {
		return st, err
	}
	var filesBytes int64
	for _, f := range files {
		filesBytes += f.size
		delete(refs, filepath.Base(f.rel))
	}
	for sha, by := range refs {
		return st, fmt.Errorf("backup: stored file %s is missing (%s refers to it); hearth verify lists all damage, docs/recovery.md says what to do", filepath.Join(s.FilesDir(), sha[:2], sha), by)
	}
	tw := tar.NewWriter(w)
	hdr, _ := json.MarshalIndent(backupHeader{Format: backupFormat, Layout: Layout, Created: time.Now().UTC(), Records: records,
		KVSHA256: kvSum, KVBytes: size.n, FileCount: len(files), FilesBytes: filesBytes}, "", "  ")
	if err := writeTarFile(tw, "hearth-backup.json", int64(len(hdr)), strings.NewReader(string(hdr))); err != nil {
		return st, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "badger.kv", Mode: 0o600, Size: size.n, ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		return st, err
	}
	sum.Reset()
	if _, err := s.writeKV(ctx, txn, io.MultiWriter(tw, sum), nil); err != nil {
		return st, fmt.Errorf("backup: write the records: %w", err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != kvSum {
		// One snapshot, encoded deterministically: never.
		return st, fmt.Errorf("backup: the records read differently the second time (SHA-256 %s, then %s); nothing usable was written", kvSum, got)
	}
	st.Records, st.Bytes = records, size.n
	for _, sf := range files {
		f, err := os.Open(filepath.Join(s.dir, sf.rel))
		if err == nil {
			// Stored files are named by their SHA-256: one whose bytes
			// do not match it is damaged, and is not copied as if whole.
			h := sha256.New()
			err = writeTarFile(tw, filepath.ToSlash(sf.rel), sf.size, io.TeeReader(&ctxReader{ctx: ctx, r: f}, h))
			f.Close()
			if got := hex.EncodeToString(h.Sum(nil)); err == nil && got != filepath.Base(sf.rel) {
				err = fmt.Errorf("is damaged: its content does not match its SHA-256 (%s); hearth verify lists all damage, docs/recovery.md says what to do", got)
			}
		}
		if err != nil {
			return st, fmt.Errorf("backup: stored file %s: %w", sf.rel, err)
		}
		st.Files++
		st.Bytes += sf.size
	}
	return st, tw.Close()
}

// writeKV writes every record txn sees to w, in Badger's backup format,
// the same bytes every time for the same transaction, and returns how
// many. With refs, it checks every record (recordProblem) and adds the
// stored files the runs refer to.
func (s *Store) writeKV(ctx context.Context, txn *badger.Txn, w io.Writer, refs map[string]string) (int, error) {
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	n := 0
	list := &pb.KVList{}
	for it.Rewind(); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		item := it.Item()
		if refs != nil {
			// The first pass checks each record as verify does: a backup
			// of a damaged record would restore as different data.
			key := item.KeyCopy(nil)
			if p := recordProblem(item, key, refs); p != "" {
				return n, damaged(key, errors.New(p))
			}
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return n, damaged(item.KeyCopy(nil), err)
		}
		list.Kv = append(list.Kv, &pb.KV{Key: item.KeyCopy(nil), Value: v, UserMeta: []byte{item.UserMeta()}, Version: item.Version(), ExpiresAt: item.ExpiresAt()})
		n++
		if len(list.Kv) == backupBatch {
			if err := writeKVList(w, list); err != nil {
				return n, err
			}
			list = &pb.KVList{}
		}
	}
	if len(list.Kv) > 0 {
		return n, writeKVList(w, list)
	}
	return n, nil
}

// countWriter counts what passes to w.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ctxReader is r, failing with ctx's error once ctx is done: a long copy
// that stops when its command is interrupted.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// storedFile is a file of the file store: its path relative to the data
// directory, and its size.
type storedFile struct {
	rel  string
	size int64
}

// storedFiles lists the file store's files.
func (s *Store) storedFiles() ([]storedFile, error) {
	var out []storedFile
	root := s.FilesDir()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, p)
		out = append(out, storedFile{rel: rel, size: fi.Size()})
		return nil
	})
	return out, err
}

func writeKVList(w io.Writer, list *pb.KVList) error {
	// Deterministic: a backup encodes its records twice and compares.
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(list)
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

// loadKV reads Badger's backup format into db with a bound on each
// chunk; before each chunk, room is asked whether there is room for it.
func loadKV(ctx context.Context, db *badger.DB, r io.Reader, room func() error) (int, error) {
	ldr := db.NewKVLoader(16)
	n := 0
	var buf []byte
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if err := room(); err != nil {
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
