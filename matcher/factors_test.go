package matcher

import (
	"math"
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
	// W = 0.80; A = max(directory, file) = 1 (the session worked in
	// "src", the task's one directory).
	want := []Factor{
		{"directory", "dir", 0.30, 1, true, float64(0.30*1) / 0.8},
		{"file", "file", 0.25, 0.5, true, float64(0.25*0.5) / 0.8},
		{"tech", "tech", 0.20, 0, false, 0},
		{"freshness", "fresh", 0.15, 0.9, true, float64(0.15*0.9) / 0.8},
		{"load", "load", 0.10, 0.5, true, float64(0.10*0.5) / 0.8},
	}
	// The seed's five come first; a factor added since follows them.
	// Shares are compared to within rounding (W is summed at run time).
	same := func(a, b Factor) bool {
		ok := math.Abs(a.Share-b.Share) <= 1e-12
		a.Share, b.Share = 0, 0
		return ok && a == b
	}
	if len(got) != len(FactorNames()) || !slices.EqualFunc(got[:len(want)], want, same) {
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

// TestShares: a candidate's shares split its total as the package doc's
// worked totals do by hand, freshness and load scaled by the context
// agreement A, a factor that did not apply 0; and they add up to the
// total (every decision of the tests is held to that too: checkShares).
func TestShares(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cands := []Candidate{
		{ID: "http", State: State{Capacity: 1, LastActivity: now.Add(-6 * time.Minute)}, Dirs: []string{"net/http"}, Techs: []string{"go"}},
		{ID: "url", State: State{Capacity: 1, LastActivity: now}, Dirs: []string{"net/url"}, Techs: []string{"go"}},
	}
	d := Scan(DefaultConfig(), cands, Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}}, now)
	checkShares(t, d)
	// The doc's worked totals: (0.30 + 0.20 + 0.15·0.8 + 0.10) / 0.75 =
	// 0.96 for "http", in shares 0.40, 0.27, 0.16 and 0.13 (the doc's
	// "Factors and their configuration"), and 0.20/0.75 for "url" (A = 0:
	// another session worked in "net/http").
	want := map[string][]float64{
		"http": {0.40, 0, 0.20 / 0.75, 0.16, 0.10 / 0.75},
		"url":  {0, 0, 0.20 / 0.75, 0, 0},
	}
	for _, r := range d.Ranked {
		for i, f := range r.Factors(d.Weights) {
			if w := want[r.ID][i]; math.Abs(f.Share-w) > 1e-12 {
				t.Errorf("%s: %s's share %v, want %v", r.ID, f.Name, f.Share, w)
			}
		}
	}
	// Weights that all fall on factors that do not apply: a total of 0,
	// and no share (not NaN).
	cfg := DefaultConfig()
	cfg.Weights = Weights{File: 1}
	d = Scan(cfg, cands, Hints{Techs: []string{"go"}}, now)
	checkShares(t, d)
	for _, f := range d.Ranked[0].Factors(d.Weights) {
		if f.Share != 0 {
			t.Errorf("no applied weight: %s's share %v, want 0", f.Name, f.Share)
		}
	}
}

// checkShares holds every ranked candidate of d to what a host draws
// from its factors: one share per factor, 0 for each that did not
// apply, adding up to the candidate's total.
func checkShares(t *testing.T, d Decision) {
	t.Helper()
	for _, r := range d.Ranked {
		var sum float64
		fs := r.Factors(d.Weights)
		if len(fs) != len(factors) {
			t.Fatalf("%s: %d factors, want %d", r.ID, len(fs), len(factors))
		}
		for _, f := range fs {
			if !f.Applied && f.Share != 0 {
				t.Fatalf("%s: %s did not apply, yet has the share %v", r.ID, f.Name, f.Share)
			}
			if f.Share < 0 || math.IsNaN(f.Share) {
				t.Fatalf("%s: %s's share is %v", r.ID, f.Name, f.Share)
			}
			sum += f.Share
		}
		if math.Abs(sum-r.Total) > 1e-12 {
			t.Fatalf("%s: shares %+v add up to %v, not to its total %v (weights %v)", r.ID, fs, sum, r.Total, d.Weights)
		}
	}
}
