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

	// The directory factor needs, for each directory on the path of a task
	// directory, which candidates worked in it and which in or under it,
	// over all candidates, excluded ones included.
	var paths dirPaths
	if t.applied.Directory {
		paths.learn(&t, cands)
		t.weigh(func(j int) int { return paths.under[paths.at[t.dirs[j]]] }, len(cands))
	}

	d := Decision{Threshold: cfg.Threshold, Weights: cfg.Weights}
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
			for j, dir := range t.dirs {
				m[j] = paths.credit(i, dir, t.depths[j], len(cands))
			}
			r.Scores.Directory = dirFactor(t.weights, t.wsum, m)
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

// dirPaths is what Scan learns about the directories on the paths of a
// task's directories (each task directory and its ancestors, the root
// included): how many candidates worked in each, how many in or under
// it, and which.
type dirPaths struct {
	dirs   []string       // the directories on the paths, each once
	depths []int          // depth of dirs[k]
	at     map[string]int // index in dirs
	in     []int          // candidates that worked in dirs[k]
	under  []int          // candidates that worked in or under dirs[k]
	// Per candidate i and path directory k, at i*len(dirs)+k: whether it
	// worked in dirs[k], and whether in or under it.
	worked, knows []bool
}

func (p *dirPaths) learn(t *task, cands []Candidate) {
	p.at = make(map[string]int)
	for _, d := range t.dirs {
		for {
			if _, ok := p.at[d]; !ok {
				p.at[d] = len(p.dirs)
				p.dirs = append(p.dirs, d)
				p.depths = append(p.depths, depth(d))
			}
			if d == "." {
				break
			}
			d = parentDir(d)
		}
	}
	nk := len(p.dirs)
	p.in, p.under = make([]int, nk), make([]int, nk)
	p.worked, p.knows = make([]bool, len(cands)*nk), make([]bool, len(cands)*nk)
	for i := range cands {
		worked, knows := p.worked[i*nk:(i+1)*nk], p.knows[i*nk:(i+1)*nk]
		for _, s := range cands[i].Dirs {
			s = NormalizePath(s)
			if k, ok := p.at[s]; ok {
				worked[k] = true
			}
			// s and its ancestors are known; once one is marked, so are
			// the rest, by the walk that marked it.
			for a := s; ; a = parentDir(a) {
				if k, ok := p.at[a]; ok {
					if knows[k] {
						break
					}
					knows[k] = true
				}
				if a == "." {
					break
				}
			}
		}
		for k := range nk {
			if worked[k] {
				p.in[k]++
			}
			if knows[k] {
				p.under[k]++
			}
		}
	}
}

// credit is m(d) for candidate i and task directory d of depth dd, total
// candidates in all.
func (p *dirPaths) credit(i int, d string, dd, total int) float64 {
	nk := len(p.dirs)
	worked, knows := p.worked[i*nk:(i+1)*nk], p.knows[i*nk:(i+1)*nk]
	k := p.at[d]
	switch {
	case worked[k]:
		return 1
	case p.in[k] > 0: // someone worked in d: nothing less counts
		return 0
	case knows[k]:
		if dd == 0 {
			return 0
		}
		return insideCredit(dd)
	}
	for a := parentDir(d); a != "."; a = parentDir(a) {
		if c := p.at[a]; knows[c] {
			return besideCredit(p.depths[c], dd, p.under[c], total)
		}
	}
	return 0
}
