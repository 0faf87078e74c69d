package member_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/member"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/sdk"
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
			forward := func(h *testHost, key string) time.Duration {
				start := time.Now()
				r, err := h.Member.RunForwarded(ctx, "a", key, "", task)
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
			last, err := kept.Member.RunForwarded(ctx, "a", "key-0", "", task)
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]time.Duration, 0, 200)
			var rmu sync.Mutex
			for g := range conc {
				wg.Go(func() {
					for i := range 200 / conc {
						start := time.Now()
						rec := cluster.ForwardRecord{Key: fmt.Sprintf("raw-%d-%d", g, i), From: "a", Agent: "scripted", Accepted: time.Now()}
						err := kept.Store.SaveForward(rec, nil).Wait(ctx)
						if err == nil {
							rec.Done, rec.Finished, rec.Outcome = true, time.Now(), last.Outcome
							err = kept.Store.SaveForward(rec, nil).Wait(ctx)
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
func benchForwardHost(b *testing.B, conc int, memoryOnly bool) *testHost {
	b.Helper()
	a := testAgent(conc)
	a.Pool.MaxSessions = 1
	o := hostOptions{ID: "b", Agent: a}
	if memoryOnly {
		o.Made = member.KeepKeysInMemory
	}
	return startHost(b, o)
}

// BenchmarkClusterSubmit submits a one-step task to host a whose best
// session is on host b (placed across both hosts' sessions, forwarded
// over the TCP API with mutual TLS, run on b, the result back), next to
// a task whose best session is on a itself, in the same run. Both tasks
// run on warm sessions of the scripted agent; per op, p50 and p99.
//
//	go test -run '^$' -bench ClusterSubmit -benchtime 2000x ./host/cluster/member/
func BenchmarkClusterSubmit(b *testing.B) {
	dir := tempDir(b)
	ca, cert, key := testcert.Write(b, dir)
	hb := startHost(b, hostOptions{ID: "b", CA: ca, Cert: cert, Key: key, Daemon: true})
	ha := startHost(b, hostOptions{ID: "a", CA: ca, Cert: cert, Key: key, Daemon: true})
	ctx := context.Background()
	warm := func(h *testHost, file string) string {
		out, err := h.Engine.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:" + file})
		if err != nil {
			b.Fatal(err)
		}
		return out.Session
	}
	remote, local := warm(hb, "pkg/remote/x.go"), warm(ha, "pkg/local/y.go")
	// What etcd's watch would bring a: both records, b's summaries.
	ha.Member.View().Apply(1, append(ha.Record(b), hb.Record(b)...))

	submit := func(dir, wantHost, wantSession string) func() {
		t := hearth.Task{Agent: "scripted", Prompt: "echo:ok", Hints: sdk.Hints{Directories: []string{dir}}}
		return func() {
			out, err := ha.Engine.Submit(ctx, t)
			if err != nil {
				b.Fatal(err)
			}
			if out.Decision.Host != wantHost || out.Session != wantSession || out.Result.Output != "ok" {
				b.Fatalf("ran on %s of %q (%s), want %s of %q", out.Session, out.Decision.Host, out.Decision.Reason, wantSession, wantHost)
			}
		}
	}
	b.Run("best=local", func(b *testing.B) { timed(b, submit("pkg/local", "", local)) })
	b.Run("best=remote", func(b *testing.B) { timed(b, submit("pkg/remote", "b", remote)) })
}

// reportPercentiles adds p50 and p99 of ds, in the unit given, to b's
// results.
func reportPercentiles(b *testing.B, ds []time.Duration, unit time.Duration, name string) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/float64(unit), "p50-"+name)
	b.ReportMetric(float64(ds[len(ds)*99/100])/float64(unit), "p99-"+name)
}

// timed runs fn b.N times and reports its p50 and p99 latency, and the
// rate.
func timed(b *testing.B, fn func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		fn()
		lat = append(lat, time.Since(t0))
	}
	total := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(b.N)/total.Seconds(), "placements/s")
}
