package matcher_test

import (
	"fmt"
	"time"

	"github.com/hearth-dev/hearth/matcher"
)

// Scan scores every candidate: the reference, fine for a few sessions.
func ExampleScan() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sessions := []matcher.Candidate{
		{
			ID:    "s-7",
			State: matcher.State{Capacity: 1, LastActivity: now.Add(-3 * time.Minute)},
			Files: []string{"src/models/user.go", "src/models/order.go"},
			Dirs:  []string{"src/models"}, // where it worked; not their ancestors
			Techs: []string{"go"},
		},
		{
			ID:    "s-9",
			State: matcher.State{Capacity: 1, LastActivity: now},
			Files: []string{"web/app.tsx"},
			Dirs:  []string{"web"},
			Techs: []string{"TypeScript"},
		},
	}
	task := matcher.Hints{
		Files: []string{"./src/models/user.go", "src/models/invoice.go"},
		Techs: []string{"Go"},
	}
	d := matcher.Scan(matcher.DefaultConfig(), sessions, task, now)
	fmt.Println(d)
	for _, r := range d.Ranked {
		fmt.Printf("%s %.2f\n", r.ID, r.Total)
	}
	// Output:
	// reuse s-7 (0.86 > 0.60): dir 1.00 file 0.50 tech 1.00 fresh 0.90 load 1.00
	// s-7 0.86
	// s-9 0.00
}

// An Index follows one agent's sessions as hooks report tool uses, and
// decides without scanning them all.
func ExampleIndex() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ix, err := matcher.NewIndex(matcher.DefaultConfig())
	if err != nil {
		panic(err)
	}
	// A session starts, then reads a file.
	ix.Upsert("s-1", matcher.State{Capacity: 2, LastActivity: now.Add(-10 * time.Minute)})
	ix.AddTechs("s-1", "go")
	ix.AddFiles("s-1", "internal/auth/token.go")
	ix.AddDirs("s-1", "internal/auth")
	ix.Upsert("s-1", matcher.State{Capacity: 2, Load: 1, LastActivity: now.Add(-5 * time.Minute)})

	d := ix.Decide(matcher.Hints{Dirs: []string{"internal/auth/"}, Techs: []string{"go"}}, now)
	fmt.Println(d.Choice, d.Winner)
	fmt.Println(d)

	// A reuse guard vetoed s-1 for this task.
	d = ix.Decide(matcher.Hints{Dirs: []string{"internal/auth"}}, now, "s-1")
	fmt.Println(d)
	// Output:
	// reuse s-1
	// reuse s-1 (0.90 > 0.60): dir 1.00 file - tech 1.00 fresh 0.83 load 0.50
	// spawn: no candidates (1 excluded)
}

// A session that worked in a sibling package loses to the one that knows
// the task's package, however fresh it is: the package's own directory is
// known, so the shared parent "net" earns nothing. When the session that
// knows the package is busy, the sibling is still no match: its total is
// technology alone, and the task waits or gets a new session.
func ExampleScan_sibling() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	http := matcher.Candidate{
		ID:    "s-http",
		State: matcher.State{Capacity: 1, LastActivity: now.Add(-20 * time.Minute)},
		Files: []string{"net/http/server.go", "net/http/client.go"},
		Dirs:  []string{"net/http"},
		Techs: []string{"go"},
	}
	url := matcher.Candidate{
		ID:    "s-url",
		State: matcher.State{Capacity: 1, LastActivity: now},
		Files: []string{"net/url/url.go"},
		Dirs:  []string{"net/url"},
		Techs: []string{"go"},
	}
	task := matcher.Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}}
	d := matcher.Scan(matcher.DefaultConfig(), []matcher.Candidate{http, url}, task, now)
	fmt.Println(d)
	for _, r := range d.Ranked {
		fmt.Printf("%s %.2f\n", r.ID, r.Total)
	}

	http.Load = 1 // busy with another question
	fmt.Println(matcher.Scan(matcher.DefaultConfig(), []matcher.Candidate{http, url}, task, now))
	// Output:
	// reuse s-http (0.87 > 0.60): dir 1.00 file - tech 1.00 fresh 0.33 load 1.00
	// s-http 0.87
	// s-url 0.27
	// spawn: best s-url scored 0.27, not above 0.60: dir 0.00 file - tech 1.00 fresh 1.00 load 1.00
}

// When nobody worked in the task's directory, a session that worked beside
// it gets credit for the ancestor they share, in proportion to how much of
// the path it covers and how rare it is among the sessions.
func ExampleScan_newDirectory() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	mk := func(id string, dirs ...string) matcher.Candidate {
		return matcher.Candidate{ID: id, State: matcher.State{Capacity: 1, LastActivity: now}, Dirs: dirs}
	}
	sessions := []matcher.Candidate{
		mk("s-1", "a/b/c/e"),   // knows a/b/c, which 2 of 4 sessions know
		mk("s-2", "a/b/c/f/g"), // knows a/b/c too
		mk("s-3", "a/x"),       // knows a
		mk("s-4", "z"),
	}
	d := matcher.Scan(matcher.DefaultConfig(), sessions, matcher.Hints{Dirs: []string{"a/b/c/d"}}, now)
	for _, r := range d.Ranked {
		fmt.Printf("%s dir %.4f total %.4f\n", r.ID, r.Scores.Directory, r.Total)
	}
	fmt.Println(d.Choice)
	// Output:
	// s-1 dir 0.4500 total 0.4500
	// s-2 dir 0.4500 total 0.4500
	// s-3 dir 0.1000 total 0.1000
	// s-4 dir 0.0000 total 0.0000
	// spawn-below-threshold
}

// A total a hair above the threshold prints with the digits that show it.
func ExampleFormatScore() {
	for _, total := range []float64{0.625, 0.6004, 0.6, 0.5996} {
		s, th := matcher.FormatScore(total, 0.6)
		fmt.Println(s, th)
	}
	// Output:
	// 0.62 0.60
	// 0.6004 0.6000
	// 0.60 0.60
	// 0.5996 0.6000
}

func ExampleConfig_Validate() {
	cfg := matcher.DefaultConfig()
	cfg.Weights.Directory = 0.40
	fmt.Println(cfg.Validate())
	// Output:
	// matcher weights sum to 1.10, not 1: lower some of directory=0.40, file=0.25, tech=0.20, freshness=0.15, load=0.10
}

func ExampleNormalizePath() {
	for _, p := range []string{"./src/a.go", "src//a.go", "src/", "", "/"} {
		fmt.Printf("%q\n", matcher.NormalizePath(p))
	}
	// Output:
	// "src/a.go"
	// "src/a.go"
	// "src"
	// "."
	// "."
}

// A host's index holds its own sessions (owner "") and, in a cluster, the
// other hosts' (owned by their host). A decision among its own leaves the
// others out whole, as if each were excluded by ID: they are neither
// ranked nor considered, but count as excluded, and in how rare a
// directory is, like every session.
func ExampleIndex_DecideOwned() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ix, err := matcher.NewIndex(matcher.DefaultConfig())
	if err != nil {
		panic(err)
	}
	st := matcher.State{Capacity: 1, LastActivity: now}
	ix.PutAll([]matcher.Candidate{
		{ID: "s-1", State: st, Dirs: []string{"net/http"}},
		{ID: "b/s-7", Owner: "b", State: st, Dirs: []string{"net/http"}, Files: []string{"net/http/server.go"}},
		{ID: "b/s-8", Owner: "b", State: st, Dirs: []string{"net/url"}},
	})
	task := matcher.Hints{Dirs: []string{"net/http"}, Files: []string{"net/http/server.go"}}
	for _, d := range []matcher.Decision{ix.Decide(task, now), ix.DecideOwned("", task, now)} {
		fmt.Printf("considered %d, excluded %d: %s\n", d.Considered, d.Excluded, d)
	}
	// Output:
	// considered 3, excluded 0: reuse b/s-7 (1.00 > 0.60): dir 1.00 file 1.00 tech - fresh 1.00 load 1.00
	// considered 1, excluded 2: reuse s-1 (0.69 > 0.60): dir 1.00 file 0.00 tech - fresh 1.00 load 1.00
}
