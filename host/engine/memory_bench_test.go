package engine

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSessionMemory measures the host's heap per session. dormant:
// sessions restored from the store with fingerprints of F files drawn from
// one repository of 48,000 files, in clustered areas; a dormant
// session keeps its fingerprint only in the matcher's index. live: the
// heap a live session adds, with its plugin connection and its
// fingerprint sets (about 100 bytes a file more, measured before dormant
// sessions dropped them).
func BenchmarkSessionMemory(b *testing.B) {
	for _, files := range []int{100, 1000} {
		b.Run(fmt.Sprintf("dormant/files=%d", files), func(b *testing.B) {
			const sessions = 2000
			dir := b.TempDir()
			st, err := store.Open(dir, store.Write, store.Options{GCInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range sessions {
				rec := record.Session{ID: fmt.Sprintf("scripted-%08x", i), Agent: "scripted", Status: record.SessionDormant,
					HasState: true, Capacity: 1, LastActivity: time.Now(), Techs: []string{"go"}}
				seen := map[string]bool{}
				// One repository of 40 areas x 60 packages x 20 files
				// (48,000 files); each session works in a few areas.
				for f := range files {
					d := fmt.Sprintf("area%02d/pkg%02d", (i+f/300)%40, (i*7+f/20)%60)
					rec.Files = append(rec.Files, fmt.Sprintf("%s/file_%02d.go", d, f%20))
					for p := d; p != "."; p = path.Dir(p) {
						if !seen[p] {
							seen[p] = true
							rec.Dirs = append(rec.Dirs, p)
						}
					}
				}
				rec.Dirs = rec.Dirs[:min(len(rec.Dirs), pool.DefaultMaxDirectories)]
				st.SaveSession(rec)
			}
			if err := st.PutSession(ctx, record.Session{ID: "zz-flush", Agent: "other"}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var per float64
			for i := 0; i < b.N; i++ {
				a := testAgent("scripted", "agent")
				a.Pool.MaxDormant = sessions
				before := heapInUse()
				h, err := New(Options{Store: st, Config: &config.Config{Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher()}, Logger: hclog.NewNullLogger()})
				if err != nil {
					b.Fatal(err)
				}
				after := heapInUse()
				per += float64(after-before) / sessions
				if st := h.agents()[0]; st.Dormant != sessions {
					b.Fatalf("restored %d dormant sessions, want %d", st.Dormant, sessions)
				}
				runtime.KeepAlive(h)
				if err := h.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(per/float64(b.N), "bytes/session")
			b.ReportMetric(per/float64(b.N)/float64(files), "bytes/file")
			st.Close()
		})
	}
	b.Run("live", func(b *testing.B) {
		const sessions = 8
		var per float64
		for i := 0; i < b.N; i++ {
			a := testAgent("scripted", "agent")
			a.Pool.MaxSessions = sessions
			h := newTestHost(b, a)
			before := heapInUse()
			for s := range sessions {
				prompt, hints := reads(fmt.Sprintf("area%d/x.go", s))
				// Distinct areas spawn distinct sessions.
				if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt, Hints: hints}); err != nil {
					b.Fatal(err)
				}
			}
			after := heapInUse()
			per += float64(after-before) / sessions
			if err := h.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(per/float64(b.N), "bytes/session")
	})
}
