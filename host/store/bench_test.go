package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// toolEvent is a tool-use event as the host writes one: about 500 bytes.
func toolEvent(session string) hearth.Event {
	paths := make([]string, 8)
	for i := range paths {
		paths[i] = fmt.Sprintf("services/billing/internal/ledger/reconcile/batch_%02d.go", i)
	}
	return hearth.Event{
		Time: time.Now(), Kind: hearth.EventToolUsed, Agent: "coder", Session: session, Task: "task-0123456789abcdef",
		ToolUse: &sdk.ToolUse{Tool: "Grep", Paths: paths, Technologies: []string{"go"}, Outcome: sdk.OutcomeError, Duration: 1500 * time.Microsecond},
	}
}

// toolRecord is toolEvent as its record, for raw Badger.
func toolRecord(session string) *storepb.Event {
	e := toolEvent(session)
	m := &storepb.Event{}
	fillEvent(m, &e)
	return m
}

// BenchmarkAppend compares durable event appends through the store's group
// commit with raw Badger, same options, writing batches of the same
// records in one transaction each: the best raw Badger can do.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("raw-badger-batch/writers=%d", writers), func(b *testing.B) {
			db, err := badger.Open(badgerOptions(b.TempDir(), false, hclog.NewNullLogger()))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			v, _ := encode(toolRecord("s-1"))
			const batch = 1024
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := w * batch; i < b.N; i += writers * batch {
						txn := db.NewTransaction(true)
						for j := i; j < min(i+batch, b.N); j++ {
							if err := txn.Set(seqKey(fmt.Sprintf("e/s-%d/", w), uint64(j)), v); err != nil {
								b.Error(err)
							}
						}
						if err := txn.Commit(); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("store-batch256/writers=%d", writers), func(b *testing.B) {
			s := MustOpen(b, b.TempDir())
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					// AppendBatch encodes the events before it returns, so
					// one batch of event values can be reused.
					batch := make([]hearth.Event, 256)
					for i := range batch {
						batch[i] = toolEvent(fmt.Sprintf("s-%d", w))
					}
					var last *Pending
					for i := w * 256; i < b.N; i += writers * 256 {
						_, last = s.AppendBatch(batch[:min(256, b.N-i)])
					}
					if last != nil {
						if err := last.Wait(ctx); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("store/writers=%d", writers), func(b *testing.B) {
			s := MustOpen(b, b.TempDir())
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					// Append encodes the event before it returns, so one
					// event value can be reused.
					ev := toolEvent(fmt.Sprintf("s-%d", w))
					var last *Pending
					for i := w; i < b.N; i += writers {
						_, last = s.Append(ev)
					}
					if last != nil {
						if err := last.Wait(ctx); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkPutSession: one durable session write at a time, each waiting
// for its fsync, from 1 and 8 writers: what group commit buys when many
// writers each need their own acknowledgement. Raw Badger does one Update
// per write.
func BenchmarkPutSession(b *testing.B) {
	ctx := context.Background()
	rec := record.Session{ID: "gotour-1a2b3c4d", Agent: "gotour", Files: make([]string, 40)}
	for i := range rec.Files {
		rec.Files[i] = fmt.Sprintf("net/http/file_%02d.go", i)
	}
	v, _ := encode(sessionToPB(rec))
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("raw-badger-update/writers=%d", writers), func(b *testing.B) {
			db, err := badger.Open(badgerOptions(b.TempDir(), false, hclog.NewNullLogger()))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.SetParallelism(writers)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := w; i < b.N; i += writers {
						if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(fmt.Sprintf("s/%d", i)), v) }); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
		})
		b.Run(fmt.Sprintf("store/writers=%d", writers), func(b *testing.B) {
			s := MustOpen(b, b.TempDir())
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := w; i < b.N; i += writers {
						r := record.Session{ID: fmt.Sprint(i), Files: rec.Files}
						if err := s.PutSession(ctx, r); err != nil {
							b.Error(err)
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
		})
	}
}
