package matcher

// factors lists every factor once, in the order totals add them and
// decisions show them. Everything that names factors reads it: the
// matcher block's weights (block.go), Validate and Weights.String, a
// Decision's explanation and [Ranked.Factors], through which hosts show
// a factor without naming it. So a new factor is a row here, its field
// in Weights, Scores and Applied, how it scores (score.go, and the
// Index's bound in decide.go), and the rule in doc.go; nothing outside
// this package changes.
var factors = [...]struct {
	name  string // as the config file and a Decision name it
	label string // short, for one-line explanations
	// ready: the factor says how ready a session is, not what it knows,
	// so its term is scaled by the context agreement A (package doc,
	// "Total"). shares reads it; combine, the hot path, spells the same
	// out field by field, and the tests hold the two equal.
	ready bool
	// weight, score and applied reach the factor's field.
	weight  func(*Weights) *float64
	score   func(*Scores) float64
	applied func(*Applied) bool
}{
	{"directory", "dir", false, func(w *Weights) *float64 { return &w.Directory }, func(s *Scores) float64 { return s.Directory }, func(a *Applied) bool { return a.Directory }},
	{"file", "file", false, func(w *Weights) *float64 { return &w.File }, func(s *Scores) float64 { return s.File }, func(a *Applied) bool { return a.File }},
	{"tech", "tech", false, func(w *Weights) *float64 { return &w.Tech }, func(s *Scores) float64 { return s.Tech }, func(a *Applied) bool { return a.Tech }},
	{"freshness", "fresh", true, func(w *Weights) *float64 { return &w.Freshness }, func(s *Scores) float64 { return s.Freshness }, func(a *Applied) bool { return a.Freshness }},
	{"load", "load", true, func(w *Weights) *float64 { return &w.Load }, func(s *Scores) float64 { return s.Load }, func(a *Applied) bool { return a.Load }},
}

// Factor is one factor of a ranked candidate's total, as a host shows it:
// the total is the sum of Weight·Score over the applied factors (freshness
// and load scaled by the context agreement, see the package doc) divided
// by the sum of their weights.
type Factor struct {
	// Name is the factor's name in the config file's weights block:
	// "directory", "file", "tech", "freshness", "load".
	Name string
	// Label is its short name in one-line explanations: "dir", "fresh".
	Label   string
	Weight  float64
	Score   float64 // in [0, 1]
	Applied bool    // whether it counted in the total
	// Share is the factor's part of the total: its term of the sum
	// (Weight·Score, times A for freshness and load) over the sum of
	// the applied weights; 0 when it did not apply. A candidate's
	// shares add up to its total (to within rounding: each is divided
	// on its own), so a host draws a total as one part per factor
	// without knowing how the matcher combines them.
	Share float64
}

// Factors returns r's factors, every one in the package's order, with
// their weights in w (the Config's, [Decision.Weights]) and their shares
// of r's total.
func (r *Ranked) Factors(w Weights) []Factor {
	out := make([]Factor, len(factors))
	parts := shares(&w, r.Applied, &r.Scores)
	for i, f := range factors {
		out[i] = Factor{Name: f.name, Label: f.label, Weight: *f.weight(&w), Score: f.score(&r.Scores), Applied: f.applied(&r.Applied), Share: parts[i]}
	}
	return out
}

// FactorNames lists the factors' names in order: the attributes of the
// config file's weights block.
func FactorNames() []string {
	out := make([]string, len(factors))
	for i, f := range factors {
		out[i] = f.name
	}
	return out
}

// Label returns the short name of the factor named name ("dir" for
// "directory"), or name itself for one this package does not know (a
// decision recorded by another version).
func Label(name string) string {
	for _, f := range factors {
		if f.name == name {
			return f.label
		}
	}
	return name
}
