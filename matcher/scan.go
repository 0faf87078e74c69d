package matcher

import (
	"slices"
	"time"
)

// Scan decides by scoring every candidate, straight from the definitions in
// the package doc. It is the reference the [Index] is tested against. Its
// cost grows with the total size of the fingerprints (about 50 ns per
// path, each normalized on every call): fine for a few small sessions;
// beyond that, use an Index. Scan keeps no state and may be called
// concurrently.
//
// Candidates whose ID is in exclude are skipped. Candidate IDs must be
// unique. Scan does not validate cfg (call [Config.Validate] once, when the
// config is loaded); with an invalid Config it still returns, but what it
// returns is unspecified.
func Scan(cfg Config, cands []Candidate, h Hints, now time.Time, exclude ...string) Decision {
	var t task
	t.load(h)
	nowNanos := wallNanos(now)
	var skip map[string]bool
	if len(exclude) > 0 {
		skip = make(map[string]bool, len(exclude))
		for _, id := range exclude {
			skip[id] = true
		}
	}
	fileAt := make(map[string]int, len(t.files))
	for i, f := range t.files {
		fileAt[f] = i
	}
	techAt := make(map[string]int, len(t.techs))
	for i, s := range t.techs {
		techAt[s] = i
	}
	// seen marks task files and techs already counted for the current
	// candidate, since a fingerprint may list one twice ("a.go", "./a.go").
	fileSeen := make([]bool, len(t.files))
	techSeen := make([]bool, len(t.techs))
	m := make([]float64, len(t.dirs))

	d := Decision{Threshold: cfg.Threshold}
	var eligible, busy []Ranked
	for i := range cands {
		c := &cands[i]
		if skip[c.ID] {
			d.Excluded++
			continue
		}
		r := Ranked{ID: c.ID, State: c.State, Applied: t.applied}
		r.LastActivity = r.LastActivity.Round(0) // as the Index stores it

		if t.applied.Directory {
			clear(m)
			for _, s := range c.Dirs {
				s = NormalizePath(s)
				ds := depth(s)
				for j, dir := range t.dirs {
					m[j] = max(m[j], closeness(s, ds, dir, t.depths[j]))
				}
			}
			var sum float64
			for _, v := range m {
				sum += v
			}
			r.Scores.Directory = sum / float64(len(t.dirs))
		}
		if t.applied.File {
			clear(fileSeen)
			hits := 0
			for _, f := range c.Files {
				f, ok := normalizeFile(f)
				if !ok {
					continue
				}
				if j, ok := fileAt[f]; ok && !fileSeen[j] {
					fileSeen[j] = true
					hits++
				}
			}
			r.Scores.File = float64(hits) / float64(len(t.files))
		}
		if t.applied.Tech {
			clear(techSeen)
			hits := 0
			for _, s := range c.Techs {
				s, ok := normalizeTech(s)
				if !ok {
					continue
				}
				if j, ok := techAt[s]; ok && !techSeen[j] {
					techSeen[j] = true
					hits++
				}
			}
			r.Scores.Tech = float64(hits) / float64(len(t.techs))
		}
		r.Scores.Freshness = freshness(nowNanos, wallNanos(r.LastActivity), cfg.IdleTimeout)
		r.Scores.Load = loadFactor(&r.State)
		r.Total = combine(&cfg.Weights, t.applied, &r.Scores)
		r.Eligible = !full(&r.State)
		if r.Eligible {
			eligible = append(eligible, r)
		} else {
			busy = append(busy, r)
		}
	}
	d.Considered = len(eligible) + len(busy)
	d.Eligible = len(eligible)
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
