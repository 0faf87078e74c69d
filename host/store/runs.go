package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// SaveRun queues w for run id; it is durable once the Pending's Wait
// returns nil. Writes are committed in the order they are queued.
func (s *Store) SaveRun(id string, w record.RunWrite) *Pending {
	wr := &write{}
	put := func(key []byte, v []byte, err error) error {
		if err != nil {
			return fmt.Errorf("encode run %s: %w", id, err)
		}
		wr.sets = append(wr.sets, kv{key, v})
		return nil
	}
	if w.Graph != nil {
		m, err := graphToPB(w.Graph)
		if err != nil {
			return failed(fmt.Errorf("encode run %s: %w", id, err))
		}
		v, err := encode(m)
		if err := put(runKey("g/", id), v, err); err != nil {
			return failed(err)
		}
	}
	for _, t := range w.Tasks {
		v, err := encode(taskToPB(t))
		if err := put([]byte("rt/"+id+"/"+t.Name), v, err); err != nil {
			return failed(err)
		}
	}
	for _, o := range w.Outputs {
		v, err := encode(outputToPB(o))
		if err := put(outputKey(id, o.Task, o.Version), v, err); err != nil {
			return failed(err)
		}
	}
	if c := w.Checkpoint; c != nil {
		v, err := encode(checkpointToPB(c))
		if err := put(seqKey("c/"+id+"/", c.Seq), v, err); err != nil {
			return failed(err)
		}
	}
	for _, sha := range w.FileRefs {
		wr.sets = append(wr.sets, kv{[]byte("fr/" + sha + "/" + id), nil})
	}
	if len(w.Events) > 0 {
		if s.isClosed() {
			return failed(ErrClosed)
		}
		sets, err := s.eventChunks(w.Events)
		if err != nil {
			return failed(fmt.Errorf("run %s: %w", id, err))
		}
		wr.sets = append(wr.sets, sets...)
	}
	// The head goes last: a reader that sees it sees a consistent run,
	// since the whole write is one transaction anyway.
	if w.Run != nil {
		v, err := encode(runToPB(w.Run))
		if err := put(runKey("r/", id), v, err); err != nil {
			return failed(err)
		}
	}
	if len(wr.sets) == 0 {
		return failed(nil)
	}
	return s.submit(wr)
}

// SaveRunStatus queues run id's head alone, as a status record: it is
// accepted while free space is above half of MinFreeSpace, when ordinary
// writes are refused already (space.go), so that a run stopped by a full
// disk can still record that it paused, and why. It holds the head only:
// the caller gives the head as it is on disk (record.Run), changed in its
// status and reason, so that what is on disk stays a state the run can
// resume from.
func (s *Store) SaveRunStatus(id string, head *record.Run) *Pending {
	v, err := encode(runToPB(head))
	if err != nil {
		return failed(fmt.Errorf("encode run %s: %w", id, err))
	}
	return s.submit(&write{sets: []kv{{runKey("r/", id), v}}, status: true})
}

// eventChunks numbers evs, in order, from one range of sequence numbers
// and encodes them as one chunk per stream. A chunk's numbers increase
// and lie in that range, which no other write's overlaps, so chunks of a
// stream still never overlap.
func (s *Store) eventChunks(evs []hearth.Event) ([]kv, error) {
	first, err := s.nextSeqs(len(evs))
	if err != nil {
		return nil, err
	}
	var order []string
	chunks := map[string]*storepb.EventChunk{}
	for i := range evs {
		if evs[i].Decision != nil {
			return nil, fmt.Errorf("a decision is appended on its own (Append), not with a run's records")
		}
		stream := StreamOf(&evs[i])
		c := chunks[stream]
		if c == nil {
			c = &storepb.EventChunk{}
			chunks[stream] = c
			order = append(order, stream)
		}
		m := &storepb.Event{}
		fillEvent(m, &evs[i])
		m.Seq = first + uint64(i)
		c.Events = append(c.Events, m)
	}
	sets := make([]kv, 0, len(order))
	for _, stream := range order {
		c := chunks[stream]
		v, err := encode(c)
		if err != nil {
			return nil, err
		}
		sets = append(sets, kv{seqKey("e/"+stream+"/", c.Events[0].Seq), v})
	}
	return sets, nil
}

// NewestCheckpoint returns the number of run id's newest checkpoint on
// disk, 0 when it has none.
func (s *Store) NewestCheckpoint(id string) (uint64, error) {
	prefix := []byte("c/" + id + "/")
	var seq uint64
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		// Reverse iteration starts at the last key not above the seek
		// key: the prefix followed by 0xff sorts after every checkpoint.
		it.Seek(append(prefix, 0xff))
		if it.ValidForPrefix(prefix) {
			if k := it.Item().Key(); len(k) == len(prefix)+8 {
				seq = binary.BigEndian.Uint64(k[len(prefix):])
			}
		}
		return nil
	})
	return seq, err
}

func runKey(prefix, id string) []byte { return []byte(prefix + id) }

func outputKey(run, task string, version int) []byte {
	k := []byte("o/" + run + "/" + task + "/")
	return binary.BigEndian.AppendUint32(k, uint32(version))
}

// RunRecord returns the head of run id, or an error wrapping
// ErrNotFound.
func (s *Store) RunRecord(id string) (*record.Run, error) {
	m := &storepb.Run{}
	if err := s.get(runKey("r/", id), m); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return runFromPB(m), nil
}

// RunRecords returns the head of every run, in ID order.
func (s *Store) RunRecords() ([]*record.Run, error) {
	var out []*record.Run
	err := s.scan([]byte("r/"), func(k, v []byte) error {
		m := &storepb.Run{}
		if err := decodeAt(k, v, m); err != nil {
			return err
		}
		out = append(out, runFromPB(m))
		return nil
	})
	return out, err
}

// RunGraph returns the task graph of run id.
func (s *Store) RunGraph(id string) (*record.Graph, error) {
	m := &storepb.RunGraph{}
	if err := s.get(runKey("g/", id), m); err != nil {
		return nil, fmt.Errorf("graph of run %s: %w", id, err)
	}
	g, err := graphFromPB(m)
	if err != nil {
		return nil, fmt.Errorf("graph of run %s: %w", id, err)
	}
	return g, nil
}

// RunTasks returns the task records of run id, by task name.
func (s *Store) RunTasks(id string) (map[string]*record.Task, error) {
	out := make(map[string]*record.Task)
	err := s.scan([]byte("rt/"+id+"/"), func(k, v []byte) error {
		m := &storepb.RunTask{}
		if err := decodeAt(k, v, m); err != nil {
			return err
		}
		out[m.GetName()] = taskFromPB(m)
		return nil
	})
	return out, err
}

// Checkpoints returns the checkpoints of run id, oldest first.
func (s *Store) Checkpoints(id string) ([]*record.Checkpoint, error) {
	var out []*record.Checkpoint
	err := s.scan([]byte("c/"+id+"/"), func(k, v []byte) error {
		m := &storepb.Checkpoint{}
		if err := decodeAt(k, v, m); err != nil {
			return err
		}
		out = append(out, checkpointFromPB(m))
		return nil
	})
	return out, err
}

// Checkpoint returns checkpoint seq of run id.
func (s *Store) Checkpoint(id string, seq uint64) (*record.Checkpoint, error) {
	m := &storepb.Checkpoint{}
	if err := s.get(seqKey("c/"+id+"/", seq), m); err != nil {
		return nil, fmt.Errorf("checkpoint %d of run %s: %w", seq, id, err)
	}
	return checkpointFromPB(m), nil
}

// TaskOutputs returns every output version of run id, by task name, then
// version.
func (s *Store) TaskOutputs(id string) ([]*record.Output, error) {
	var out []*record.Output
	err := s.scan([]byte("o/"+id+"/"), func(k, v []byte) error {
		m := &storepb.TaskOutput{}
		if err := decodeAt(k, v, m); err != nil {
			return err
		}
		out = append(out, outputFromPB(m))
		return nil
	})
	return out, err
}

// TaskOutput returns version of task's output in run id.
func (s *Store) TaskOutput(id, task string, version int) (*record.Output, error) {
	m := &storepb.TaskOutput{}
	if err := s.get(outputKey(id, task, version), m); err != nil {
		return nil, fmt.Errorf("output v%d of task %s of run %s: %w", version, task, id, err)
	}
	return outputFromPB(m), nil
}

// DeleteRun deletes run id: its task records, checkpoints, outputs, file
// references, graph and, last, its head, in as many writes as they need.
// Until the head goes the run is listed, so an interrupted delete is
// simply done again. Its events stay: they are the record of what
// happened, deletion included. It returns the files no run refers to any
// more; RemoveFiles removes them.
func (s *Store) DeleteRun(ctx context.Context, id string) (unreferenced []string, err error) {
	r, err := s.RunRecord(id)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for _, prefix := range []string{"rt/" + id + "/", "c/" + id + "/", "o/" + id + "/"} {
		if err := s.scanKeys([]byte(prefix), func(k []byte) error {
			keys = append(keys, k)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	for _, f := range r.Files {
		keys = append(keys, []byte("fr/"+f.SHA256+"/"+id))
	}
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		if err := s.apply(ctx, &write{deletes: keys[:n]}); err != nil {
			return nil, fmt.Errorf("delete run %s: %w", id, err)
		}
		keys = keys[n:]
	}
	if err := s.apply(ctx, &write{deletes: [][]byte{runKey("g/", id), runKey("r/", id)}}); err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, err)
	}
	for _, f := range r.Files {
		used := false
		if err := s.scanKeys([]byte("fr/"+f.SHA256+"/"), func([]byte) error {
			used = true
			return nil
		}); err != nil {
			return nil, err
		}
		if !used {
			unreferenced = append(unreferenced, f.SHA256)
		}
	}
	return unreferenced, nil
}

// FilesDir is the directory of the content-addressed file store, beside
// Badger's files in the data directory; "" for an in-memory store.
func (s *Store) FilesDir() string {
	if s.inMemory {
		return ""
	}
	return filepath.Join(s.dir, "files")
}

// BlobPath is where the file with the given SHA-256 is kept.
func (s *Store) BlobPath(sha string) string {
	return filepath.Join(s.FilesDir(), sha[:2], sha)
}

// PutFile copies r into the file store and returns its SHA-256 and size.
// Content is stored once: a file with the same SHA-256 and size is kept
// as it is (idempotent by content, per the study planner seed). The
// stored file is read-only and durable (fsynced, then renamed into
// place) when PutFile returns.
func (s *Store) PutFile(r io.Reader) (sha string, size int64, err error) {
	dir := s.FilesDir()
	if dir == "" {
		return "", 0, ErrNoFileStore
	}
	if s.readOnly {
		return "", 0, ErrReadOnly
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".incoming-*")
	if err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	h := sha256.New()
	size, err = io.Copy(io.MultiWriter(tmp, h), r)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	sha = hex.EncodeToString(h.Sum(nil))
	dst := s.BlobPath(sha)
	if fi, err := os.Stat(dst); err == nil {
		if fi.Size() != size {
			return "", 0, fmt.Errorf("file store: %s holds %d bytes where %d were expected; the file store is damaged", dst, fi.Size(), size)
		}
		return sha, size, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o400); err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", 0, fmt.Errorf("file store: %w", err)
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return sha, size, nil
}

// RemoveFiles removes the stored files with the given SHA-256s, unless a
// run refers to one again.
func (s *Store) RemoveFiles(shas []string) error {
	if s.readOnly {
		return ErrReadOnly
	}
	var errs []error
	for _, sha := range shas {
		used := false
		if err := s.scanKeys([]byte("fr/"+sha+"/"), func([]byte) error {
			used = true
			return nil
		}); err != nil {
			return err
		}
		if used || !validSHA(sha) {
			continue
		}
		if err := os.Remove(s.BlobPath(sha)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
