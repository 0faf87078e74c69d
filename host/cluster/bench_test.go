package cluster

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

// simWorld is the simulation the placement figure is measured on: hosts
// hosts of perHost sessions each, all of one agent working in one large
// repository (16 top-level directories of 16 areas, each area 6 files and
// 8 leaf directories of 30 files). A session works in 3 areas, two of
// them near its home, and publishes what a summary holds: its 32 most
// recent files and 32 most recent directories, and its areas' languages.
// A task names 1 or 2 directories and 5 to 10 files of one area, the area
// of a random session 70% of the time, and the area's language.
type simWorld struct {
	local *matcher.Index // host 0's own sessions, as its pool holds them
	view  *View          // the other hosts' sessions
	// union is a host's index of its own and the cluster's sessions: what
	// placement decides over.
	union *matcher.Index
	all   []matcher.Candidate
	// remote are the IDs of the other hosts' sessions in all, owned by
	// their host.
	remote []string
	tasks  []matcher.Hints
	now    time.Time
}

func newSimWorld(tb testing.TB, hosts, perHost int) *simWorld {
	rng := rand.New(rand.NewPCG(uint64(hosts), uint64(perHost)))
	w := &simWorld{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	type area struct {
		dir   string
		files []string
		tech  string
	}
	var areas []area
	langs := []string{"go", "typescript", "python", "sql", "proto"}
	for t := range 16 {
		for a := range 16 {
			ar := area{dir: fmt.Sprintf("t%02d/a%02d", t, a), tech: langs[t%len(langs)]}
			for f := range 6 {
				ar.files = append(ar.files, fmt.Sprintf("%s/f%02d.x", ar.dir, f))
			}
			for l := range 8 {
				for f := range 30 {
					ar.files = append(ar.files, fmt.Sprintf("%s/l%d/f%02d.x", ar.dir, l, f))
				}
			}
			areas = append(areas, ar)
		}
	}
	cfg := matcher.DefaultConfig()
	local, err := matcher.NewIndex(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	w.local = local
	w.view = NewView("h000", func(string) matcher.Config { return cfg })
	var homes []int
	var changes []Change
	for h := range hosts {
		host := fmt.Sprintf("h%03d", h)
		changes = append(changes, Change{Kind: KeyHost, Host: host, Info: hearth.Member{ID: host, Addr: host + ":7420"}})
		for i := range perHost {
			home := rng.IntN(len(areas))
			homes = append(homes, home)
			mine := []int{home, home - home%16 + rng.IntN(16), rng.IntN(len(areas))}
			var files, dirs, techs []string
			for range 32 {
				ar := areas[mine[rng.IntN(len(mine))]]
				f := ar.files[rng.IntN(len(ar.files))]
				files = append(files, f)
				dirs = append(dirs, parentDir(f))
			}
			for _, a := range mine {
				dirs = append(dirs, areas[a].dir)
				techs = append(techs, areas[a].tech)
			}
			s := Summary{
				Session: fmt.Sprintf("coder-%04d", i), Agent: "coder", Files: files, Dirs: dirs, Techs: techs,
				Capacity: 1, Load: rng.IntN(6) / 5, LastActivity: w.now.Add(-time.Duration(rng.IntN(3600)) * time.Second),
			}
			// What goes through etcd: encoded and decoded, cut to bounds.
			b, err := EncodeSummary(s)
			if err != nil {
				tb.Fatal(err)
			}
			s, err = DecodeSummary(s.Session, b)
			if err != nil {
				tb.Fatal(err)
			}
			if h == 0 {
				c := s.Candidate("")
				c.ID = s.Session // a local session, as a pool indexes it
				w.local.Put(c)
				w.all = append(w.all, c)
				continue
			}
			changes = append(changes, Change{Kind: KeySession, Host: host, Summary: s})
			c := s.Candidate(host)
			w.all = append(w.all, c)
			w.remote = append(w.remote, c.ID)
		}
	}
	w.view.Apply(1, changes)
	union, err := matcher.NewIndex(local.Config())
	if err != nil {
		tb.Fatal(err)
	}
	union.PutAll(w.all)
	w.union = union
	for range 1000 {
		a := rng.IntN(len(areas))
		if rng.IntN(10) < 7 {
			a = homes[rng.IntN(len(homes))]
		}
		ar := areas[a]
		h := matcher.Hints{Dirs: []string{ar.dir}, Techs: []string{ar.tech}}
		if rng.IntN(2) == 0 {
			h.Dirs = append(h.Dirs, parentDir(ar.files[6+rng.IntN(len(ar.files)-6)]))
		}
		for range 5 + rng.IntN(6) {
			h.Files = append(h.Files, ar.files[rng.IntN(len(ar.files))])
		}
		w.tasks = append(w.tasks, h)
	}
	return w
}

func (w *simWorld) place(h matcher.Hints) matcher.Decision {
	return w.union.Decide(h, w.now)
}

// TestSimulationDecides checks, on a smaller simulation, that placement
// over a host's index of its own and the cluster's sessions is Scan's
// decision over every host's sessions, and that a decision among the
// host's own (DecideOwned) is Scan's with the other hosts' excluded.
func TestSimulationDecides(t *testing.T) {
	w := newSimWorld(t, 8, 12)
	for i, h := range w.tasks[:100] {
		got, want := w.place(h), matcher.Scan(w.local.Config(), w.all, h, w.now)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("task %d: placed %v, Scan over all hosts %v", i, got, want)
		}
		got, want = w.union.DecideOwned("", h, w.now), matcher.Scan(w.local.Config(), w.all, h, w.now, w.remote...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("task %d: placed here %v, Scan without the other hosts' %v", i, got, want)
		}
		if got.Considered != 12 || got.Excluded != len(w.remote) {
			t.Fatalf("task %d: placed here considering %d, excluding %d; want 12, %d", i, got.Considered, got.Excluded, len(w.remote))
		}
	}
}

// BenchmarkClusterPlacement is one placement decision on a host of a
// cluster of 100 hosts with 100 sessions each: the host's index holds its
// own sessions and, from the watch, the other 9,900; per-decision p50 and
// p99 are reported beside the mean. BenchmarkClusterPlacementOneIndex
// decides the same tasks over a fresh index of all 10,000 sessions.
func BenchmarkClusterPlacement(b *testing.B) {
	w := newSimWorld(b, 100, 100)
	benchDecisions(b, w.tasks, w.place)
}

func BenchmarkClusterPlacementOneIndex(b *testing.B) {
	w := newSimWorld(b, 100, 100)
	ix, err := matcher.NewIndex(w.local.Config())
	if err != nil {
		b.Fatal(err)
	}
	ix.PutAll(w.all)
	benchDecisions(b, w.tasks, func(h matcher.Hints) matcher.Decision { return ix.Decide(h, w.now) })
}

// BenchmarkClusterPlacementHere is a decision among the host's own 100
// sessions, for the work that stays on it: on its index of the cluster's
// 10,000 (DecideOwned, the other hosts' sessions left out by owner), and
// on an index of its 100 alone.
func BenchmarkClusterPlacementHere(b *testing.B) {
	w := newSimWorld(b, 100, 100)
	b.Run("beside=9900", func(b *testing.B) {
		benchDecisions(b, w.tasks, func(h matcher.Hints) matcher.Decision { return w.union.DecideOwned("", h, w.now) })
	})
	b.Run("alone", func(b *testing.B) {
		benchDecisions(b, w.tasks, func(h matcher.Hints) matcher.Decision { return w.local.Decide(h, w.now) })
	})
}

func benchDecisions(b *testing.B, tasks []matcher.Hints, decide func(matcher.Hints) matcher.Decision) {
	lat := make([]time.Duration, 0, b.N)
	reuse := 0
	runtime.GC() // the world's garbage is not the decisions'
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		d := decide(tasks[i%len(tasks)])
		lat = append(lat, time.Since(start))
		if d.Choice == matcher.Reuse {
			reuse++
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(reuse)/float64(b.N), "reuse-ratio")
}
