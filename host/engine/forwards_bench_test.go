package engine

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
)

// BenchmarkForwardAccept: what keeping forwarded tasks' keys in the
// store costs on the forward path. Two hosts in the same run, each on
// its own data directory with a warm session of the scripted agent: one
// keeps accepted keys in memory only (as before they were stored), the
// other writes each acceptance and each result durably (two group-
// committed writes). Every iteration forwards one task with a new key to
// each, alternately, so that the machine's load falls on both alike;
// "conc" forwards from that many goroutines at once (a session of that
// capacity), where concurrent acceptances share fsyncs. Reported: p50
// and p99 of a forward (accept, run echo on the warm session, return the
// result) on each host, the ratio of the p50s, and the raw layer
// underneath: the two SaveForwards of a forward on the stored host's
// store alone.
func BenchmarkForwardAccept(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run("conc="+strconv.Itoa(conc), func(b *testing.B) {
			mem, kept := benchForwardHost(b, conc, true), benchForwardHost(b, conc, false)
			ctx := context.Background()
			task := hearth.Task{Agent: "scripted", Prompt: "echo:x"}
			forward := func(h *Engine, key string) time.Duration {
				start := time.Now()
				r, err := h.RunForwarded(ctx, "a", key, "", task)
				if err != nil || r.Err != nil {
					b.Fatalf("forward %s: %v %v", key, err, r.Err)
				}
				return time.Since(start)
			}
			// Warm both: sessions started, first writes done.
			for i := range conc {
				forward(mem, fmt.Sprintf("warm-%d", i))
				forward(kept, fmt.Sprintf("warm-%d", i))
			}
			var (
				mu          sync.Mutex
				dMem, dKept []time.Duration
			)
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range conc {
				wg.Go(func() {
					var m, k []time.Duration
					for i := g; i < b.N; i += conc {
						key := fmt.Sprintf("key-%d", i)
						m = append(m, forward(mem, key))
						k = append(k, forward(kept, key))
					}
					mu.Lock()
					dMem, dKept = append(dMem, m...), append(dKept, k...)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.StopTimer()
			reportPercentiles(b, dMem, time.Microsecond, "memory-µs")
			reportPercentiles(b, dKept, time.Microsecond, "stored-µs")
			b.ReportMetric(float64(dKept[len(dKept)/2])/float64(dMem[len(dMem)/2]), "stored/memory-p50")

			// The raw layer: the two durable writes each forward adds
			// (accepted; done, with a real outcome), from as many
			// writers, on the stored host's store alone.
			last, err := kept.RunForwarded(ctx, "a", "key-0", "", task)
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]time.Duration, 0, 200)
			var rmu sync.Mutex
			for g := range conc {
				wg.Go(func() {
					for i := range 200 / conc {
						start := time.Now()
						rec := store.ForwardRecord{Key: fmt.Sprintf("raw-%d-%d", g, i), From: "a", Agent: "scripted", Accepted: time.Now()}
						err := kept.store.SaveForward(rec, nil).Wait(ctx)
						if err == nil {
							rec.Done, rec.Finished, rec.Outcome = true, time.Now(), last.Outcome
							err = kept.store.SaveForward(rec, nil).Wait(ctx)
						}
						if err != nil {
							b.Error(err)
							return
						}
						rmu.Lock()
						raw = append(raw, time.Since(start))
						rmu.Unlock()
					}
				})
			}
			wg.Wait()
			reportPercentiles(b, raw, time.Microsecond, "twowrites-µs")
		})
	}
}

// benchForwardHost is a host in a static cluster whose scripted agent has
// one session of capacity conc; memoryOnly keeps accepted keys as before
// they were stored.
func benchForwardHost(b *testing.B, conc int, memoryOnly bool) *Engine {
	b.Helper()
	a := testAgent("scripted", "agent")
	a.Capacity, a.Pool.MaxSessions = conc, 1
	a.Env[envCapacity] = strconv.Itoa(conc)
	h, err := New(Options{
		Config: &config.Config{DataDir: b.TempDir(), Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher()},
		Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	v := h.ClusterView(ClusterInfo{ID: "b", Addr: "127.0.0.1:1"})
	h.cl().memoryOnly = memoryOnly
	if err := h.JoinCluster(staticMembership{v}, nil); err != nil {
		b.Fatal(err)
	}
	return h
}
