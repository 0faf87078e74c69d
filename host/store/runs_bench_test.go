package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
	"google.golang.org/protobuf/proto"
)

// checkpointBytes is the size of the write a finished task makes in the
// benchmarks below: the DESIGN's 1 KiB checkpoints.
const checkpointBytes = 1024

// runFixture is what the run engine writes when a task succeeds
// (runExec.outcome, then checkpointLocked): the task's output
// with its context artifact, the task's record, a checkpoint of the
// run's head and the task, and the head, in one record.RunWrite. The state
// document is padded so that the four encoded values come to about
// checkpointBytes.
type runFixture struct {
	id   string
	head *record.Run
	task *record.Task
	out  *record.Output
	cp   *record.Checkpoint
}

func newRunFixture(tb testing.TB, id string) *runFixture {
	tb.Helper()
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	f := &runFixture{id: id}
	f.head = &record.Run{
		ID: id, Pipeline: "essay", Status: hearth.RunRunning, Created: now, Updated: now,
		LastActivity: now, Started: now, Budget: 5, Cost: 0.42, Stage: "writing",
		TasksTotal: 12, TasksSucceeded: 5,
	}
	f.task = &record.Task{
		Name: "draft-outline", Status: hearth.TaskSucceeded, Round: 1, Attempts: 1, Cost: 0.07,
		Session: "writer-1a2b3c4d", TaskID: id + "/draft-outline/1/1", Started: now, Finished: now, Version: 1,
	}
	f.out = &record.Output{
		Task: "draft-outline", Version: 1, Output: "Outline: 1. The problem 2. Three approaches 3. What we chose",
		Metrics: map[string]float64{"quality": 0.82}, Cost: 0.07, Session: "writer-1a2b3c4d", Attempt: 1, Round: 1,
		Time: now, Duration: 3 * time.Second, Action: "reused", Score: 0.71,
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{"three sections"}, ModifiedFiles: []string{"essay/outline.md"}},
	}
	f.cp = &record.Checkpoint{Label: "task draft-outline succeeded", Task: "draft-outline", Time: now,
		Run: f.head, Tasks: []*record.Task{f.task}}
	f.setSeq(1)
	// The head is written twice (as itself and in the checkpoint), so
	// each byte of state adds two to the write.
	for pad, range4 := 0, 0; range4 < 4; range4++ {
		f.head.State = fmt.Appendf(nil, `{"notes":%q}`, strings.Repeat("x", pad))
		d := (checkpointBytes - f.size(tb)) / 2
		if d == 0 {
			break
		}
		pad += d
	}
	return f
}

// setSeq makes the fixture checkpoint seq of its run.
func (f *runFixture) setSeq(seq uint64) {
	f.head.Checkpoint = seq
	f.cp.Seq, f.cp.Parent = seq, seq-1
}

// write is the fixture as SaveRun takes it.
func (f *runFixture) write() record.RunWrite {
	return record.RunWrite{Run: f.head, Tasks: []*record.Task{f.task}, Outputs: []*record.Output{f.out}, Checkpoint: f.cp}
}

// Where the checkpoint and the head are in kvs.
const (
	kvCheckpoint = 2
	kvHead       = 3
)

// kvs are the keys and values SaveRun writes for the fixture, in its
// order.
func (f *runFixture) kvs(tb testing.TB) []kv {
	tb.Helper()
	var out []kv
	for _, x := range []struct {
		key []byte
		m   proto.Message
	}{
		{[]byte("rt/" + f.id + "/" + f.task.Name), taskToPB(f.task)},
		{outputKey(f.id, f.out.Task, f.out.Version), outputToPB(f.out)},
		{seqKey("c/"+f.id+"/", f.cp.Seq), checkpointToPB(f.cp)},
		{runKey("r/", f.id), runToPB(f.head)},
	} {
		v, err := encode(x.m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, kv{x.key, v})
	}
	return out
}

// settle flushes the file systems before a side starts: the side before
// it closed its database and removed its directory, and the writeback
// and journal work that leaves must not land on the next side's syncs.
func settle() { syscall.Sync() }

func (f *runFixture) size(tb testing.TB) int {
	n := 0
	for _, e := range f.kvs(tb) {
		n += len(e.value)
	}
	return n
}

// BenchmarkCheckpoint: what a run does when a task succeeds, from 1 run
// and from 8 runs at once, next to raw Badger doing the same in the same
// run.
//
//   - op=put: one durable write of the task's output, its record, a
//     checkpoint and the run's head (about 1 KiB together), waited for.
//   - op=put+get: the same, then the newest checkpoint read back the way
//     a resume finds it: the run's head (Store.Run), then the checkpoint
//     it names (Store.Checkpoint).
//   - side=store: SaveRun (the store's group commit: the writes waiting
//     share one transaction and one sync), then Run and Checkpoint,
//     which decode the records.
//   - side=raw: Badger with the store's options (SyncWrites on), one
//     Update per write with the same keys and value sizes, then one View
//     that gets the head's and the checkpoint's values.
//
// checkpoints/s counts acknowledged writes (with their reads, for
// put+get). Read the ratio with benchstat -col /side. Targets: store >=
// 80% of raw; for 8 runs, >= 24.2k checkpoints/s (2x LangGraph.js's
// SqliteSaver with one writer, per the DESIGN).
func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	for _, op := range []string{"put", "put+get"} {
		read := op == "put+get"
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("op=%s/writers=%d/side=raw", op, writers), func(b *testing.B) {
				db, err := badger.Open(RawOptions(b.TempDir()))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				fixtures := make([]*runFixture, writers)
				for w := range fixtures {
					fixtures[w] = newRunFixture(b, fmt.Sprintf("essay-20260102-150405-%06x", w))
				}
				settle()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w, f := range fixtures {
					// The values of checkpoint 1 for every checkpoint: the
					// sizes stay within a byte or two of the store's.
					sets := f.kvs(b)
					prefix := "c/" + f.id + "/"
					wg.Go(func() {
						for i := w; i < b.N; i += writers {
							ck := seqKey(prefix, uint64(i/writers+1))
							sets[kvCheckpoint].key = ck
							if err := db.Update(func(txn *badger.Txn) error {
								for _, e := range sets {
									if err := txn.Set(e.key, e.value); err != nil {
										return err
									}
								}
								return nil
							}); err != nil {
								b.Error(err)
								return
							}
							if !read {
								continue
							}
							if err := db.View(func(txn *badger.Txn) error {
								for _, e := range []kv{sets[kvHead], sets[kvCheckpoint]} {
									it, err := txn.Get(e.key)
									if err != nil {
										return err
									}
									if err := it.Value(func(v []byte) error {
										if len(v) != len(e.value) {
											return fmt.Errorf("read %d bytes, wrote %d", len(v), len(e.value))
										}
										return nil
									}); err != nil {
										return err
									}
								}
								return nil
							}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "checkpoints/s")
				b.ReportMetric(float64(fixtures[0].size(b)), "B/write")
			})
			b.Run(fmt.Sprintf("op=%s/writers=%d/side=store", op, writers), func(b *testing.B) {
				s := MustOpen(b, b.TempDir())
				fixtures := make([]*runFixture, writers)
				for w := range fixtures {
					fixtures[w] = newRunFixture(b, fmt.Sprintf("essay-20260102-150405-%06x", w))
				}
				settle()
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w, f := range fixtures {
					wg.Go(func() {
						for i := w; i < b.N; i += writers {
							seq := uint64(i/writers + 1)
							// SaveRun encodes before it returns: the
							// fixture can change for the next write.
							f.setSeq(seq)
							if err := s.SaveRun(f.id, f.write()).Wait(ctx); err != nil {
								b.Error(err)
								return
							}
							if !read {
								continue
							}
							head, err := s.RunRecord(f.id)
							if err != nil {
								b.Error(err)
								return
							}
							c, err := s.Checkpoint(f.id, head.Checkpoint)
							if err != nil {
								b.Error(err)
								return
							}
							if c.Seq != seq {
								b.Errorf("read checkpoint %d, want %d", c.Seq, seq)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "checkpoints/s")
				b.ReportMetric(float64(fixtures[0].size(b)), "B/write")
			})
		}
	}
}

// BenchmarkOpenCheck is the cost of accounting for a data directory's
// files before Badger opens it (open.go), on a directory with 1,000 runs
// of four checkpoints each (outputs of 2 KiB, in the value log), next to
// what it guards in the same run:
//
//   - side=check: inspectDir alone: the MANIFEST parsed, every table
//     read in full and its value pointers followed to their value logs'
//     lengths;
//   - side=store: Open(Read) (the check, then Badger), every run's head
//     read and decoded (RunRecords, what runs list reads), Close;
//   - side=raw: Badger opened read-only with the store's options, every
//     head's value read, closed: no check, no decoding.
func BenchmarkOpenCheck(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	f := newRunFixture(b, "r")
	f.out.Output = strings.Repeat("x", 2048)
	var pend []*Pending
	for i := range 1000 {
		id := fmt.Sprintf("essay-%04d", i)
		f.head.ID = id
		for seq := uint64(1); seq <= 4; seq++ {
			f.setSeq(seq)
			f.out.Version = int(seq)
			pend = append(pend, s.SaveRun(id, f.write()))
		}
	}
	for _, p := range pend {
		if err := p.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("side=check", func(b *testing.B) {
		for b.Loop() {
			if err := checkDir(dir, Read, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("side=store", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(dir, Read, Options{})
			if err != nil {
				b.Fatal(err)
			}
			heads, err := s.RunRecords()
			if err != nil || len(heads) != 1000 {
				b.Fatalf("%d runs, %v", len(heads), err)
			}
			s.Close()
		}
	})
	b.Run("side=raw", func(b *testing.B) {
		for b.Loop() {
			db, err := badger.Open(RawOptions(dir).WithReadOnly(true))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			err = db.View(func(txn *badger.Txn) error {
				it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("r/"), PrefetchValues: true})
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					if _, err := it.Item().ValueCopy(nil); err != nil {
						return err
					}
					n++
				}
				return nil
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil || n != 1000 {
				b.Fatalf("raw: %d runs, %v", n, err)
			}
		}
	})
}
