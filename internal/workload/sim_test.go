package workload

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/matcher"
)

// toy is a workload of questions about packages, in the order given, each
// package with three files.
func toy(pkgs ...string) Workload { return toyWith(nil, pkgs...) }

// toyWith is toy with the number of files of some packages given.
func toyWith(files map[string]int, pkgs ...string) Workload {
	w := Workload{Name: "toy", Packages: map[string][]string{}}
	for _, p := range pkgs {
		n := files[p]
		if n == 0 {
			n = 3
		}
		w.Packages[p] = nil
		for i := range n {
			w.Packages[p] = append(w.Packages[p], fmt.Sprintf("%s/f%d.go", p, i))
		}
		w.Questions = append(w.Questions, Question{Prompt: "summary " + p, Package: p,
			Hints: matcher.Hints{Dirs: []string{p}, Techs: []string{"go"}}})
	}
	return w
}

// TestSimulateInvariants checks, for every placer on every generated
// workload, what no placement may break: the pool's bounds, every
// question placed once, and the counts adding up.
func TestSimulateInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		w := Deep(DeepOptions{Seed: seed, Prefix: "p", Areas: 2, Groups: 2, Packages: 3, Nested: 2, Interior: 1, MaxFiles: 6}).Interleave(seed)
		for _, pool := range []Pool{DefaultPool, {MaxSessions: 1, Parallel: 1, Spawn: 1, Read: 1, Answer: 1}, {MaxSessions: 2, Parallel: 4, Spawn: 5, Read: 1, Answer: 2}} {
			for _, p := range []Placer{Hearth, Naive, RoundRobin} {
				r, err := Simulate(w, pool, p, newIndex(t))
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("seed %d, %d sessions, %d in flight, %s", seed, pool.MaxSessions, pool.Parallel, p)
				if r.Questions != len(w.Questions) || r.Spawns+r.Reuses != r.Questions || r.Repeats != w.Repeats() || r.Hits > r.Repeats {
					t.Errorf("%s: %d questions, %d spawns + %d reuses, %d hits of %d repeats (want %d)", name, r.Questions, r.Spawns, r.Reuses, r.Hits, r.Repeats, w.Repeats())
				}
				if r.MostInFlight > pool.Parallel || p != Naive && r.MostSessions > pool.MaxSessions {
					t.Errorf("%s: %d in flight, %d sessions at once", name, r.MostInFlight, r.MostSessions)
				}
				if len(r.Misses) != r.Repeats-r.Hits {
					t.Errorf("%s: %d misses described, %d counted", name, len(r.Misses), r.Repeats-r.Hits)
				}
				switch p {
				case Naive:
					if r.Spawns != r.Questions || r.Hits != 0 {
						t.Errorf("%s: %d spawns, %d hits; want a new session per question, none warm", name, r.Spawns, r.Hits)
					}
				case RoundRobin:
					if r.Spawns != min(pool.MaxSessions, r.Questions) {
						t.Errorf("%s: %d spawns, want the pool filled", name, r.Spawns)
					}
				}
			}
		}
	}
	if _, err := Simulate(toy("a"), Pool{}, Naive, nil); err == nil {
		t.Error("an empty pool: got nil error")
	}
	if _, err := Simulate(toy("a"), DefaultPool, Hearth, nil); err == nil || !strings.Contains(err.Error(), "matcher") {
		t.Errorf("hearth without a matcher: got %v", err)
	}
}

// TestHearthPolicy pins the host's policy around the matcher on small
// cases, with unit costs: a spawn takes 10, a file read 1, an answer 1.
func TestHearthPolicy(t *testing.T) {
	unit := Pool{Spawn: 10, Read: 1, Answer: 1}
	for _, tc := range []struct {
		name             string
		w                Workload
		sessions, flight int
		spawns, hits     int
		waits, below     int
	}{
		// a, then b: b is nobody's, so it gets a session of its own; a
		// again goes back to the first.
		{"sequential", toy("a", "b", "a", "b"), 5, 1, 2, 2, 0, 0},
		// With one session, b takes it below the threshold.
		{"one session", toy("a", "b", "a"), 1, 1, 1, 1, 0, 1},
		// The second question about a comes while a's session is busy
		// and the pool is full: it waits for it, even once b's session is
		// free.
		{"waits for the busy winner", toyWith(map[string]int{"a": 30, "b": 1}, "a", "b", "a"), 2, 3, 2, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := unit
			pool.MaxSessions, pool.Parallel = tc.sessions, tc.flight
			r, err := Simulate(tc.w, pool, Hearth, newIndex(t))
			if err != nil {
				t.Fatal(err)
			}
			if r.Spawns != tc.spawns || r.Hits != tc.hits || r.Waits != tc.waits || r.Below != tc.below {
				t.Errorf("got %d spawns, %d hits, %d waits, %d below the threshold; want %d, %d, %d, %d\n%s",
					r.Spawns, r.Hits, r.Waits, r.Below, tc.spawns, tc.hits, tc.waits, tc.below, strings.Join(r.Misses, "\n"))
			}
		})
	}
}

// TestSiblingIsNoMatch is the case on a small tree: a session that
// worked in a sibling package stands in for the busy session that knows
// the package under the old factor, not under the new one, which waits.
func TestSiblingIsNoMatch(t *testing.T) {
	w := toyWith(map[string]int{"a/b/c/d": 30, "a/b/c/e": 1, "x/y": 1}, "a/b/c/d", "a/b/c/e", "x/y", "a/b/c/d")
	pool := Pool{MaxSessions: 3, Parallel: 3, Spawn: 10, Read: 1, Answer: 1}
	// The three first questions fill the pool; the fourth, about d, comes
	// when e's session is done and d's still busy reading.
	now, err := Simulate(w, pool, Hearth, newIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	old, err := Simulate(w, pool, Hearth, newOldMatcher())
	if err != nil {
		t.Fatal(err)
	}
	if now.Hits != 1 || now.Waits != 1 {
		t.Errorf("new factor: %d hits, %d waits; want the repeat to wait for d's session: %v", now.Hits, now.Waits, now.Misses)
	}
	if old.Hits != 0 || !strings.Contains(strings.Join(old.Misses, ""), "reused s-02") {
		t.Errorf("old factor: %d hits, misses %v; want the repeat on e's session, lifted by the shared parent", old.Hits, old.Misses)
	}
}

// TestOldMatcher pins the reference of the old factor to the old
// package's examples.
func TestOldMatcher(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	m := newOldMatcher()
	m.Put(matcher.Candidate{ID: "s-7", State: matcher.State{Capacity: 1, LastActivity: now.Add(-3 * time.Minute)},
		Files: []string{"src/models/user.go", "src/models/order.go"}, Dirs: []string{"src/models"}, Techs: []string{"go"}})
	m.Put(matcher.Candidate{ID: "s-9", State: matcher.State{Capacity: 1, LastActivity: now},
		Files: []string{"web/app.tsx"}, Dirs: []string{"web"}, Techs: []string{"typescript"}})
	d := m.Decide(matcher.Hints{Files: []string{"./src/models/user.go", "src/models/invoice.go"}, Techs: []string{"Go"}}, now)
	if d.Choice != matcher.Reuse || d.Winner != "s-7" || math.Abs(d.Ranked[0].Total-0.86) > 1e-9 || math.Abs(d.Ranked[1].Total-0.25) > 1e-9 {
		t.Errorf("got %s, %v; want s-7 0.86, s-9 0.25", d, d.Ranked)
	}
	m = newOldMatcher()
	m.Put(matcher.Candidate{ID: "s-3", State: matcher.State{Capacity: 1, LastActivity: now.Add(-25 * time.Minute)}, Dirs: []string{"src"}})
	if d := m.Decide(matcher.Hints{Dirs: []string{"src/models"}}, now); math.Abs(d.Ranked[0].Total-0.5) > 1e-9 || d.Ranked[0].Scores.Directory != 0.5 {
		t.Errorf("ancestor: got %s, want 0.50, dir 0.50", d)
	}
}
