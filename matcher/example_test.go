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
			Dirs:  []string{".", "src", "src/models"},
			Techs: []string{"go"},
		},
		{
			ID:    "s-9",
			State: matcher.State{Capacity: 1, LastActivity: now},
			Files: []string{"web/app.tsx"},
			Dirs:  []string{".", "web"},
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
	// s-9 0.25
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
	ix.AddDirs("s-1", ".", "internal", "internal/auth")
	ix.Upsert("s-1", matcher.State{Capacity: 2, Load: 1, LastActivity: now.Add(-5 * time.Minute)})

	d := ix.Decide(matcher.Hints{Dirs: []string{"internal/auth/"}, Techs: []string{"go"}}, now)
	fmt.Println(d.Outcome, d.Winner)
	fmt.Println(d)

	// A reuse guard vetoed s-1 for this task.
	d = ix.Decide(matcher.Hints{Dirs: []string{"internal/auth"}}, now, "s-1")
	fmt.Println(d)
	// Output:
	// reuse s-1
	// reuse s-1 (0.90 > 0.60): dir 1.00 file - tech 1.00 fresh 0.83 load 0.50
	// spawn: no candidates (1 excluded)
}

// A session that worked in src covers half of a task in src/models.
func ExampleScan_ancestor() {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := matcher.Candidate{ID: "s-3", State: matcher.State{Capacity: 1, LastActivity: now.Add(-25 * time.Minute)}, Dirs: []string{"src"}}
	d := matcher.Scan(matcher.DefaultConfig(), []matcher.Candidate{s}, matcher.Hints{Dirs: []string{"src/models"}}, now)
	fmt.Println(d)
	// Output:
	// spawn: best s-3 scored 0.50, not above 0.60: dir 0.50 file - tech - fresh 0.17 load 1.00
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
