package matcher

import (
	"slices"
	"testing"
	"time"
)

// TestRankedFactors: a ranked candidate's factors are every factor, in
// the package's order, each with its weight, score and whether it
// applied, the same as the Scores and Applied the total was computed
// from; Label gives the short names a Decision's String uses.
func TestRankedFactors(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cfg := DefaultConfig()
	d := Scan(cfg, []Candidate{{ID: "s", State: State{Capacity: 2, Load: 1, LastActivity: now.Add(-3 * time.Minute)}, Dirs: []string{"src"}, Files: []string{"src/a.go"}}},
		Hints{Files: []string{"src/a.go", "src/b.go"}}, now)
	if d.Weights != cfg.Weights {
		t.Errorf("decision weights: got %v, want %v", d.Weights, cfg.Weights)
	}
	r := &d.Ranked[0]
	got := r.Factors(d.Weights)
	want := []Factor{
		{"directory", "dir", 0.30, r.Scores.Directory, true},
		{"file", "file", 0.25, 0.5, true},
		{"tech", "tech", 0.20, 0, false},
		{"freshness", "fresh", 0.15, 0.9, true},
		{"load", "load", 0.10, 0.5, true},
	}
	// The seed's five come first; a factor added since follows them.
	if len(got) != len(FactorNames()) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("factors:\n got %+v\nwant %+v", got, want)
	}
	for i, name := range FactorNames() {
		if got[i].Name != name {
			t.Errorf("factor %d: got %s, want %s (FactorNames' order)", i, got[i].Name, name)
		}
	}
	if Label("freshness") != "fresh" || Label("unknown") != "unknown" {
		t.Errorf("labels: got %q, %q", Label("freshness"), Label("unknown"))
	}
}
