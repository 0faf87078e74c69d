package workload

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/matcher"
)

// oldMatcher is the matcher as it was before issue 12 (commit a8d8c98), a
// reference for measuring what the new definition changed: the directory
// factor is the mean over task directories of the best closeness, 1 for
// the same directory, depth(s)/depth(d) for an ancestor s, depth(d)/depth(s)
// for a descendant; freshness and load count in full; and the host
// recorded the ancestors of every directory but never the root ".".
type oldMatcher struct {
	cfg   matcher.Config
	cands map[string]matcher.Candidate
}

func newOldMatcher() *oldMatcher {
	return &oldMatcher{cfg: matcher.DefaultConfig(), cands: map[string]matcher.Candidate{}}
}

// Put records c as the old host would have: its directories with all their
// ancestors, the root left out.
func (m *oldMatcher) Put(c matcher.Candidate) {
	var dirs []string
	for _, d := range c.Dirs {
		for d = matcher.NormalizePath(d); d != "." && d != "/"; d = path.Dir(d) {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	c.Dirs = dirs
	m.cands[c.ID] = c
}

func oldDepth(d string) int {
	if d == "." {
		return 0
	}
	return strings.Count(strings.TrimPrefix(d, "/"), "/") + 1
}

func oldCloseness(s, d string) float64 {
	switch {
	case s == d:
		return 1
	case strings.HasPrefix(d, s+"/"):
		return float64(oldDepth(s)) / float64(oldDepth(d))
	case strings.HasPrefix(s, d+"/"):
		return float64(oldDepth(d)) / float64(oldDepth(s))
	}
	return 0
}

// Decide scores every session as the old Scan did.
func (m *oldMatcher) Decide(h matcher.Hints, now time.Time, exclude ...string) matcher.Decision {
	var files, dirs, techs []string
	for _, f := range h.Files {
		f = matcher.NormalizePath(f)
		files = append(files, f)
		dirs = append(dirs, path.Dir(f))
	}
	for _, d := range h.Dirs {
		dirs = append(dirs, matcher.NormalizePath(d))
	}
	for _, t := range h.Techs {
		techs = append(techs, strings.ToLower(strings.TrimSpace(t)))
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	applied := matcher.Applied{Directory: len(dirs) > 0, File: len(files) > 0, Tech: len(techs) > 0, Freshness: true, Load: true}
	w := m.cfg.Weights
	d := matcher.Decision{Threshold: m.cfg.Threshold}
	var ranked []matcher.Ranked
	for id, c := range m.cands {
		if slices.Contains(exclude, id) {
			d.Excluded++
			continue
		}
		r := matcher.Ranked{ID: id, State: c.State, Applied: applied, Eligible: c.Load < max(c.Capacity, 1)}
		var num, den float64
		if applied.Directory {
			var sum float64
			for _, td := range dirs {
				best := 0.0
				for _, s := range c.Dirs {
					best = max(best, oldCloseness(s, td))
				}
				sum += best
			}
			r.Scores.Directory = sum / float64(len(dirs))
			num, den = num+w.Directory*r.Scores.Directory, den+w.Directory
		}
		if applied.File {
			hits := 0
			for _, f := range files {
				if slices.Contains(c.Files, f) {
					hits++
				}
			}
			r.Scores.File = float64(hits) / float64(len(files))
			num, den = num+w.File*r.Scores.File, den+w.File
		}
		if applied.Tech {
			hits := 0
			for _, t := range techs {
				if slices.Contains(c.Techs, t) {
					hits++
				}
			}
			r.Scores.Tech = float64(hits) / float64(len(techs))
			num, den = num+w.Tech*r.Scores.Tech, den+w.Tech
		}
		r.Scores.Freshness = max(0, 1-float64(now.Sub(c.LastActivity))/float64(m.cfg.IdleTimeout))
		r.Scores.Load = max(0, 1-float64(c.Load)/float64(max(c.Capacity, 1)))
		num += w.Freshness*r.Scores.Freshness + w.Load*r.Scores.Load
		den += w.Freshness + w.Load
		r.Total = num / den
		ranked = append(ranked, r)
	}
	slices.SortFunc(ranked, func(a, b matcher.Ranked) int {
		switch {
		case a.Eligible != b.Eligible:
			if a.Eligible {
				return -1
			}
			return 1
		case a.Total != b.Total:
			if a.Total > b.Total {
				return -1
			}
			return 1
		case a.Load != b.Load:
			return a.Load - b.Load
		case !a.LastActivity.Equal(b.LastActivity):
			return b.LastActivity.Compare(a.LastActivity)
		}
		return strings.Compare(a.ID, b.ID)
	})
	d.Considered = len(ranked)
	for _, r := range ranked {
		if r.Eligible {
			d.Eligible++
		}
	}
	d.Ranked = ranked[:min(len(ranked), m.cfg.TopK)]
	switch {
	case d.Considered == 0:
		d.Choice = matcher.SpawnNoCandidates
	case d.Eligible == 0:
		d.Choice = matcher.SpawnAllBusy
	case d.Ranked[0].Total > d.Threshold:
		d.Choice, d.Winner = matcher.Reuse, d.Ranked[0].ID
	default:
		d.Choice = matcher.SpawnBelowThreshold
	}
	return d
}
