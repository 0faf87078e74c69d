package matcher

import "slices"

// Merge combines decisions made with cfg over disjoint sets of candidates
// (a host's own sessions and other hosts' sessions, each in its own
// [Index]) into the decision [Scan] would make with cfg over their union:
// the same outcome, winner, ranked list and counts.
//
// It is exact because each decision's ranked list holds its best TopK
// eligible candidates, and its best full ones only when fewer than TopK
// are eligible: the union's best TopK eligible are among the lists' eligible
// entries, and full ones are needed only when fewer than TopK are eligible
// in the union, hence in every part, which then listed its best full ones.
// The decisions must come from the same Config (threshold and TopK) and
// the same task and time, and candidate IDs must be unique across them.
func Merge(cfg Config, ds ...Decision) Decision {
	d := Decision{Threshold: cfg.Threshold}
	var eligible, busy []Ranked
	for i := range ds {
		d.Considered += ds[i].Considered
		d.Eligible += ds[i].Eligible
		d.Excluded += ds[i].Excluded
		for _, r := range ds[i].Ranked {
			if r.Eligible {
				eligible = append(eligible, r)
			} else {
				busy = append(busy, r)
			}
		}
	}
	order := func(a, b Ranked) int {
		switch {
		case ranksBefore(&a, &b):
			return -1
		case ranksBefore(&b, &a):
			return 1
		}
		return 0
	}
	slices.SortFunc(eligible, order)
	slices.SortFunc(busy, order)
	k := max(cfg.TopK, 1)
	if d.Considered > 0 {
		d.Ranked = make([]Ranked, 0, min(k, d.Considered))
		d.Ranked = append(d.Ranked, eligible[:min(k, len(eligible))]...)
		d.Ranked = append(d.Ranked, busy[:min(k-len(d.Ranked), len(busy))]...)
	}
	d.settle()
	return d
}
