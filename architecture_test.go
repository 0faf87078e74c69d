package hearth_test

import (
	"context"
	"os"
	"testing"

	"github.com/hearth-dev/hearth/internal/depgraph"
)

// architecturePage is the page whose tables are the module's import
// rules and its package map.
const architecturePage = "docs/architecture.md"

// TestArchitecture holds the code to docs/architecture.md: every rule of
// its tables, over every package of the module as `go list` sees it, and
// its package map, which must name every package and only packages that
// exist. A known exception that no longer holds fails too: delete its
// row as the change that ends it lands.
func TestArchitecture(t *testing.T) {
	page, err := os.ReadFile(architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	rules, exceptions, err := depgraph.ParseRules(page, architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	g, err := depgraph.Load(context.Background(), ".")
	if err != nil {
		t.Fatal(err)
	}
	violations, err := g.Check(rules)
	if err != nil {
		t.Fatal(err)
	}
	left, stale := depgraph.Apply(violations, exceptions)
	for _, v := range left {
		t.Errorf("%v", v)
	}
	for _, e := range stale {
		t.Errorf("%s: the exception %s reaches %s no longer holds: delete its row", e.At, e.From, e.To)
	}
	rows, err := depgraph.ParseMap(page, architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range g.CheckMap(rows) {
		t.Error(problem)
	}
	if t.Failed() {
		t.Logf("%s states the rules; `go list -deps -json ./...` shows the imports", architecturePage)
	}
}
