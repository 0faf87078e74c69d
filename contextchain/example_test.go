package contextchain_test

import (
	"fmt"
	"time"

	"github.com/hearth-dev/hearth/contextchain"
)

func Example() {
	// The run: "api" depends on "db", which has finished.
	graph := contextchain.DepMap{"api": {"db"}}
	artifacts := []contextchain.Artifact{{
		Task:             "db",
		Title:            "Database Setup",
		SourceSession:    "session-7",
		CreatedAt:        time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC),
		Version:          1,
		KeyDecisions:     []string{"Used Zod for schema validation."},
		ModifiedFiles:    []string{"src/models/User.ts", "src/db/schema.sql"},
		PotentialGotchas: []string{"The DB migration requires root access, which has been mocked."},
	}}

	r, err := contextchain.New() // the default layout within DefaultBudget
	if err != nil {
		panic(err)
	}
	res, err := r.Build("api", graph, artifacts)
	if err != nil {
		panic(err)
	}
	fmt.Print(contextchain.Prompt("Add a POST /users endpoint.", res.Block))
	fmt.Printf("\n---\nincluded %d of %d items from %s\n", res.Steps[0].Included, res.Steps[0].Items, res.Steps[0].Task)
	// Output:
	// # Context from Previous Steps
	// The following context was learned from the "Database Setup" session:
	//
	// - **Key Decision:** Used Zod for schema validation.
	// - **Modified:** src/models/User.ts, src/db/schema.sql
	// - **Note:** The DB migration requires root access, which has been mocked.
	//
	// *Use this knowledge to maintain consistency.*
	//
	// Add a POST /users endpoint.
	// ---
	// included 4 of 4 items from db
}
