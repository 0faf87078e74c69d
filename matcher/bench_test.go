package matcher

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchWorld is a realistic, clustered workload: one large repository and
// the sessions of one agent working in it.
//
// The tree has 16 top-level directories of 16 areas each (256 areas, depth
// 2), each area 6 files and 8 leaf directories of 30 files (62,976 files),
// plus go.mod, README.md and Makefile at the root. Each top-level directory
// has a language. The last top-level directory is new code no session has
// seen. A session works in 3 to 5 areas, chosen near its home area (in the
// same top-level directory) 60% of the time, and has accessed
// filesPer files drawn from them, plus go.mod (80%) and README.md (50%); its
// directories are those of its files (the root for go.mod), its
// technologies its areas' languages. A sixth of the sessions are full, a fifth dormant; last
// activity is spread over the past hour.
//
// A task comes from the area of a random session (70%) or from a random
// area (30%, so 2% in new code): 1 to 3 directories (the area or its
// leaves) and 5 to 20 files from them, go.mod in a fifth of the tasks, the
// area's language in 80%.
type benchWorld struct {
	cands []Candidate
	tasks []Hints
	areas []benchArea
	home  []int // each session's first area
	now   time.Time
	clock time.Time // the last activity BenchmarkIndexUpdate stamped

	ix         *Index
	bytesPerSF float64 // heap bytes of the Index per (session, file) pair
}

type benchArea struct {
	dir    string
	leaves []string
	files  []string
	tech   string
}

var benchWorlds = map[[2]int]*benchWorld{}

func getBenchWorld(b *testing.B, sessions, filesPer int) *benchWorld {
	key := [2]int{sessions, filesPer}
	if w, ok := benchWorlds[key]; ok {
		return w
	}
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(sessions), uint64(filesPer)))
	w := &benchWorld{now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	langs := []string{"go", "typescript", "python", "sql", "proto"}
	for t := range 16 {
		for a := range 16 {
			ar := benchArea{dir: fmt.Sprintf("t%02d/a%02d", t, a), tech: langs[t%len(langs)]}
			for f := range 6 {
				ar.files = append(ar.files, fmt.Sprintf("%s/f%02d.x", ar.dir, f))
			}
			for l := range 8 {
				leaf := fmt.Sprintf("%s/l%d", ar.dir, l)
				ar.leaves = append(ar.leaves, leaf)
				for f := range 30 {
					ar.files = append(ar.files, fmt.Sprintf("%s/f%02d.x", leaf, f))
				}
			}
			w.areas = append(w.areas, ar)
		}
	}
	known := len(w.areas) - 16 // the last top-level directory is new code
	for i := range sessions {
		home := rng.IntN(known)
		areas := []int{home}
		for len(areas) < 3+rng.IntN(3) {
			a := rng.IntN(known)
			if rng.IntN(10) < 6 {
				a = home/16*16 + rng.IntN(16)
			}
			if !slices.Contains(areas, a) {
				areas = append(areas, a)
			}
		}
		var pool []string
		techs := map[string]bool{}
		for _, a := range areas {
			pool = append(pool, w.areas[a].files...)
			techs[w.areas[a].tech] = true
		}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		c := Candidate{ID: fmt.Sprintf("s-%06d", i), Files: pool[:min(filesPer, len(pool))]}
		if rng.IntN(10) < 8 {
			c.Files = append(c.Files, "go.mod")
		}
		if rng.IntN(2) == 0 {
			c.Files = append(c.Files, "README.md")
		}
		// The directories it worked in, as the host records them: those
		// of its files ("." for go.mod); the Index derives the rest.
		dirs := map[string]bool{}
		for _, f := range c.Files {
			dirs[dirOf(f)] = true
		}
		for d := range dirs {
			c.Dirs = append(c.Dirs, d)
		}
		slices.Sort(c.Dirs)
		for t := range techs {
			c.Techs = append(c.Techs, t)
		}
		slices.Sort(c.Techs)
		c.Capacity = 1 + rng.IntN(4)
		c.Load = rng.IntN(c.Capacity)
		if rng.IntN(6) == 0 {
			c.Load = c.Capacity
		}
		c.LastActivity = w.now.Add(-time.Duration(rng.Int64N(int64(time.Hour))))
		if rng.IntN(5) == 0 {
			c.Dormant, c.Load = true, 0
		}
		w.cands = append(w.cands, c)
		w.home = append(w.home, home)
	}
	for range 1000 {
		a := rng.IntN(len(w.areas))
		if rng.IntN(10) < 7 {
			a = w.home[rng.IntN(sessions)]
		}
		ar := &w.areas[a]
		var h Hints
		var files []string
		for range 1 + rng.IntN(3) {
			if rng.IntN(3) == 0 {
				h.Dirs = append(h.Dirs, ar.dir)
				files = append(files, ar.files[:6]...)
			} else {
				l := rng.IntN(len(ar.leaves))
				h.Dirs = append(h.Dirs, ar.leaves[l])
				files = append(files, ar.files[6+30*l:6+30*(l+1)]...)
			}
		}
		for range 5 + rng.IntN(16) {
			h.Files = append(h.Files, files[rng.IntN(len(files))])
		}
		if rng.IntN(5) == 0 {
			h.Files = append(h.Files, "go.mod")
		}
		if rng.IntN(5) < 4 {
			h.Techs = []string{ar.tech}
		}
		w.tasks = append(w.tasks, h)
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix, err := NewIndex(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	ix.PutAll(w.cands)
	pairs := 0
	for _, c := range w.cands {
		pairs += len(c.Files)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	w.ix = ix
	w.bytesPerSF = float64(after.HeapAlloc-before.HeapAlloc) / float64(pairs)
	benchWorlds[key] = w
	return w
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

var benchSizes = []struct{ sessions, filesPer int }{
	{1000, 1000},
	{10000, 1000},
	{100000, 100}, // 100 files each, to fit in memory
}

// BenchmarkDecide measures single decisions on the clustered workload, by
// the Index and by Scan on the same world, and reports the median and 99th
// percentile of single decisions, and the Index's heap bytes per
// (session, file) pair.
func BenchmarkDecide(b *testing.B) {
	cfg := DefaultConfig()
	for _, impl := range []string{"index", "scan"} {
		b.Run(impl, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(fmt.Sprintf("sessions=%d", size.sessions), func(b *testing.B) {
					w := getBenchWorld(b, size.sessions, size.filesPer)
					decide := func(h Hints) Decision { return w.ix.Decide(h, w.now) }
					if impl == "scan" {
						decide = func(h Hints) Decision { return Scan(cfg, w.cands, h, w.now) }
					}
					var took []time.Duration
					reuse := 0
					b.ResetTimer()
					for i := 0; b.Loop(); i++ {
						start := time.Now()
						d := decide(w.tasks[i%len(w.tasks)])
						took = append(took, time.Since(start))
						if d.Choice == Reuse {
							reuse++
						}
					}
					slices.SortFunc(took, cmp.Compare)
					b.ReportMetric(float64(took[len(took)/2])/1e3, "p50-µs")
					b.ReportMetric(float64(took[len(took)*99/100])/1e3, "p99-µs")
					b.ReportMetric(float64(reuse)/float64(len(took)), "reuse-ratio")
					if impl == "index" {
						b.ReportMetric(w.bytesPerSF, "B/session-file")
					}
				})
			}
		})
	}
}

// BenchmarkIndexUpdate measures one tool use reported by a hook: a file
// access and the new last activity, on the 10,000-session index.
func BenchmarkIndexUpdate(b *testing.B) {
	w := getBenchWorld(b, 10000, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	ix := w.ix
	// Activity only moves forward, also across runs of the benchmark: each
	// update moves a session to the head of the recency list.
	at := w.now
	if w.clock.After(at) {
		at = w.clock
	}
	defer func() { w.clock = at }()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := rng.IntN(len(w.cands))
		c := &w.cands[s]
		ar := &w.areas[w.home[s]]
		at = at.Add(time.Millisecond)
		ix.AddFiles(c.ID, ar.files[rng.IntN(len(ar.files))])
		ix.Upsert(c.ID, State{Capacity: c.Capacity, Load: c.Load, LastActivity: at, Dormant: c.Dormant})
	}
}

// BenchmarkDecideLocal measures a host's decision among its own 100
// sessions when its index also holds the sessions of other hosts of a
// cluster, 100 each, owned by their host: sessions of the clustered
// workload, 100 files each, the first 100 the host's own. "exclude" leaves
// the other hosts' sessions out as the pool did before DecideOwned: their
// IDs, gathered from a map, passed to Decide; "owned" is DecideOwned("").
// Besides the median and 99th percentile of single decisions, it reports
// the median's ratio to the same way's with no other host (the median of
// its runs so far: with -count, each sub-benchmark runs count times in a
// row).
func BenchmarkDecideLocal(b *testing.B) {
	const perHost = 100
	w := getBenchWorld(b, perHost*101, 100)
	indexes := map[int]*Index{}
	for _, how := range []string{"exclude", "owned"} {
		var alone []float64 // the medians with no other host
		for _, hosts := range []int{0, 10, 100} {
			b.Run(fmt.Sprintf("%s/hosts=%d", how, hosts), func(b *testing.B) {
				ix, remote := indexes[hosts], map[string]struct{}{}
				cands := make([]Candidate, 0, perHost*(hosts+1))
				for i, c := range w.cands[:perHost*(hosts+1)] {
					if h := i / perHost; h > 0 {
						c.Owner = fmt.Sprintf("h%03d", h)
						c.ID = c.Owner + "/" + c.ID
						remote[c.ID] = struct{}{}
					}
					cands = append(cands, c)
				}
				if ix == nil {
					var err error
					if ix, err = NewIndex(DefaultConfig()); err != nil {
						b.Fatal(err)
					}
					ix.PutAll(cands)
					indexes[hosts] = ix
				}
				decide := func(h Hints) Decision { return ix.DecideOwned("", h, w.now) }
				if how == "exclude" {
					decide = func(h Hints) Decision {
						var exclude []string
						for id := range remote {
							exclude = append(exclude, id)
						}
						return ix.Decide(h, w.now, exclude...)
					}
				}
				runtime.GC()
				var took []time.Duration
				reuse := 0
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					d := decide(w.tasks[i%len(w.tasks)])
					took = append(took, time.Since(start))
					if d.Choice == Reuse {
						reuse++
					}
				}
				slices.SortFunc(took, cmp.Compare)
				p50 := float64(took[len(took)/2]) / 1e3
				if hosts == 0 {
					alone = append(alone, p50)
				}
				sorted := slices.Sorted(slices.Values(alone))
				b.ReportMetric(p50, "p50-µs")
				b.ReportMetric(float64(took[len(took)*99/100])/1e3, "p99-µs")
				b.ReportMetric(p50/sorted[len(sorted)/2], "x-alone")
				b.ReportMetric(float64(reuse)/float64(len(took)), "reuse-ratio")
			})
		}
	}
}
