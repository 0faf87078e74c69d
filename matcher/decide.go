package matcher

import (
	"math/bits"
	"slices"
	"time"
)

// reach is a session met while walking postings.
type reach struct {
	slot uint32
	hits int32 // task files it holds, among walked postings
}

// skip is a directory posting not walked: sessions in it get m(d) = v.
type skip struct {
	p *posting
	v float64
}

// Decide decides where the task described by h runs, at time now, ignoring
// the sessions whose IDs are in exclude. It returns what [Scan] would return
// on [Index.Candidates].
func (ix *Index) Decide(h Hints, now time.Time, exclude ...string) Decision {
	return ix.decide(anyOwner, h, now, exclude)
}

// DecideOwned decides like [Index.Decide] among the sessions of owner
// alone (see [Candidate.Owner]): every other owner's session is left out as
// if its ID were in exclude, so it returns what [Scan] would return on
// [Index.Candidates] with those IDs excluded too. Left-out sessions still
// count in N and n(x), like any excluded session, and in
// [Decision.Excluded].
//
// It costs about what Decide costs on an Index of owner's sessions alone,
// not what excluding the others by ID would: it looks none of them up,
// walks only owner's part of each posting and owner's own recency list,
// and takes its counts from the owner (see "Owners" in the Index's notes).
// In hearth, a host's index holds the other hosts' sessions too, and a
// decision among the host's own is DecideOwned("").
func (ix *Index) DecideOwned(owner string, h Hints, now time.Time, exclude ...string) Decision {
	o, ok := ix.owners.ids[owner]
	if !ok {
		// No session of owner: every session is left out.
		d := Decision{Threshold: ix.cfg.Threshold, Weights: ix.cfg.Weights, Excluded: ix.n}
		d.settle()
		return d
	}
	return ix.decide(o, h, now, exclude)
}

// decide is Decide among the sessions of owner only, or of every owner
// if only is anyOwner.
func (ix *Index) decide(only uint32, h Hints, now time.Time, exclude []string) Decision {
	q := &ix.q
	q.load(h)
	nowNanos := wallNanos(now)
	ix.nextEpoch()
	ix.only = only // for walk and collect

	// Owners' counts spare a decision among one owner's sessions a look at
	// every other session.
	n, nFull := ix.n, ix.nFull
	if only != anyOwner {
		o := &ix.owners.nodes[only]
		n, nFull = o.n, o.nFull
		ix.walkBelow = max(ix.bitmapFloor, o.n/bitmapShare)
	}
	d := Decision{Threshold: ix.cfg.Threshold, Weights: ix.cfg.Weights, Excluded: ix.n - n}
	excluded, excludedEligible := 0, 0
	for _, id := range exclude {
		slot, ok := ix.slots[id]
		if !ok {
			continue
		}
		m := &ix.marks[slot]
		if m.epoch == ix.epoch {
			continue // listed twice
		}
		if only != anyOwner && m.owner != only {
			continue // already left out with its owner
		}
		m.epoch, m.ref = ix.epoch, -1
		excluded++
		if !ix.hot[slot].full {
			excludedEligible++
		}
	}
	d.Excluded += excluded
	d.Considered = n - excluded
	d.Eligible = n - nFull - excludedEligible
	if d.Considered == 0 {
		d.settle()
		return d
	}

	ix.techMask, ix.techIDs = 0, ix.techIDs[:0]
	for _, name := range q.techs {
		switch t, ok := ix.techs.ids[name]; {
		case !ok: // no session has it
		case t < 64:
			ix.techMask |= 1 << t
		default:
			ix.techIDs = append(ix.techIDs, t)
		}
	}
	ix.gather()

	// Eligible sessions rank before full ones, so full ones are looked at
	// only when fewer than TopK sessions are eligible.
	k := ix.cfg.TopK
	d.Ranked = make([]Ranked, 0, min(k, d.Considered))
	if ke := min(k, d.Eligible); ke > 0 {
		d.Ranked = ix.collect(d.Ranked, nowNanos, false, ke)
	}
	if kb := min(k-len(d.Ranked), d.Considered-d.Eligible); kb > 0 {
		d.Ranked = ix.collect(d.Ranked, nowNanos, true, kb)
	}
	// Let go of node arrays that later updates may reallocate.
	clear(ix.skips)
	clear(ix.skipFiles)
	d.settle()
	return d
}

// nextEpoch starts a decision: slots marked with an older epoch count as
// neither reached nor excluded, so nothing needs clearing.
func (ix *Index) nextEpoch() {
	ix.epoch++
	if ix.epoch == 0 {
		for i := range ix.marks {
			ix.marks[i].epoch = 0
		}
		ix.epoch = 1
	}
}

// gather weighs the task's directories and walks the postings of its
// files and directories, recording the sessions they reach with their file
// hits and m(d) so far, and sets aside the postings with a bitmap.
func (ix *Index) gather() {
	q := &ix.q
	nd := len(q.dirs)
	ix.reached, ix.mv = ix.reached[:0], ix.mv[:0]
	ix.skips, ix.skipAt, ix.skipFiles = ix.skips[:0], ix.skipAt[:0], ix.skipFiles[:0]
	if len(ix.zeros) < nd {
		ix.zeros = make([]float64, nd)
	}

	for _, name := range q.files {
		f, ok := ix.files.ids[name]
		if !ok {
			continue
		}
		p := &ix.files.nodes[f]
		slots, ok := ix.walk(p)
		if !ok {
			ix.skipFiles = append(ix.skipFiles, p)
			continue
		}
		for _, s := range slots {
			if r := ix.touch(s); r >= 0 {
				ix.reached[r].hits++
			}
		}
	}

	total := ix.n
	q.weigh(func(j int) int {
		if id, ok := ix.dirs.ids[q.dirs[j]]; ok {
			return len(ix.dirs.nodes[id].sub.slots)
		}
		return 0
	}, total)
	for j, name := range q.dirs {
		ix.skipAt = append(ix.skipAt, len(ix.skips))
		dd := q.depths[j]
		// Sources come best value first, which skips rely on: working in
		// d (1), under it (dd/(dd+1)), then beside it through ancestors,
		// deepest first, whose credit only falls going up.
		var a int32 // the deepest indexed proper ancestor of the task dir
		if id, ok := ix.dirs.ids[name]; ok {
			n := &ix.dirs.nodes[id]
			if len(n.slots) > 0 {
				// Someone worked in d: only that counts.
				ix.source(&n.posting, j, 1)
				continue
			}
			if dd > 0 {
				ix.source(&n.sub, j, insideCredit(dd))
			}
			a = n.parent
		} else {
			// Nobody worked in or under the task dir; some may have
			// worked beside it. The root is always indexed, so this ends.
			for p := name; ; {
				p = parentDir(p)
				if id, ok := ix.dirs.ids[p]; ok {
					a = int32(id)
					break
				}
			}
		}
		// The root gives no credit: its depth is 0.
		for ; a > rootDir; a = ix.dirs.nodes[a].parent {
			n := &ix.dirs.nodes[a]
			if len(n.sub.slots) > 0 {
				ix.source(&n.sub, j, besideCredit(int(n.depth), dd, len(n.sub.slots), total))
			}
		}
	}
	ix.skipAt = append(ix.skipAt, len(ix.skips))
}

// source walks a directory posting that gives m(d) = v to task dir j, or
// sets it aside (walk).
func (ix *Index) source(p *posting, j int, v float64) {
	slots, ok := ix.walk(p)
	if !ok {
		ix.skips = append(ix.skips, skip{p: p, v: v})
		return
	}
	nd := len(ix.q.dirs)
	for _, s := range slots {
		if r := ix.touch(s); r >= 0 {
			i := int(r)*nd + j
			ix.mv[i] = max(ix.mv[i], v)
		}
	}
}

// walk returns the slots of p that a decision walks: all of them, or in a
// decision among one owner's sessions, that owner's run. ok is false if
// the decision skips p instead: p has a bitmap and, among one owner's
// sessions, the run is as long as a posting of an Index of that owner's
// sessions alone would need to have one.
func (ix *Index) walk(p *posting) (slots []uint32, ok bool) {
	if ix.only == anyOwner {
		return p.slots, p.bits == nil
	}
	run := p.run(ix.only, ix.marks)
	return run, p.bits == nil || len(run) < ix.walkBelow
}

// touch returns slot's index in reached, adding it if new, or -1 if it is
// excluded.
func (ix *Index) touch(slot uint32) int32 {
	m := &ix.marks[slot]
	if m.epoch != ix.epoch {
		m.epoch, m.ref = ix.epoch, int32(len(ix.reached))
		ix.reached = append(ix.reached, reach{slot: slot})
		ix.mv = append(ix.mv, ix.zeros[:len(ix.q.dirs)]...)
	}
	return m.ref
}

// cand is a scored session while Decide looks for the best: what ranking
// needs, read from slotState alone.
type cand struct {
	sc      Scores
	total   float64
	ratio   float64
	last    int64
	slot    uint32
	dormant bool
}

// before is ranksBefore for cands.
func (ix *Index) before(a, b *cand) bool {
	if a.total != b.total {
		return a.total > b.total
	}
	if a.ratio != b.ratio {
		return a.ratio < b.ratio
	}
	if a.last != b.last {
		return a.last > b.last // wallNanos is monotone, so this is Compare's order
	}
	sa, sb := &ix.sess[a.slot], &ix.sess[b.slot]
	if c := sa.st.LastActivity.Compare(sb.st.LastActivity); c != 0 {
		return c > 0 // both saturated: compare the times themselves
	}
	if a.dormant != b.dormant {
		return !a.dormant
	}
	return sa.id < sb.id
}

// collect appends to out the best k sessions that are full (busy) or not.
// Reached sessions are bounded first, from their hits and m(d) so far, the
// skipped postings and their freshness, and the k best bounds scored
// exactly; the others are scored only if their bound reaches the k-th best
// total, which spares most of them a cache miss. Then the recency list is
// walked while the bound of the sessions not reached could still beat the
// k-th best.
func (ix *Index) collect(out []Ranked, now int64, busy bool, k int) []Ranked {
	q := &ix.q
	top := ix.top[:0]
	ubs, first := ix.ubs[:0], ix.first[:0]
	for r := range ix.reached {
		u := -1.0 // not of the class
		if ix.marks[ix.reached[r].slot].full == busy {
			u = ix.reachedBound(r, now, busy)
			// first keeps the indexes of the k best bounds, best first.
			i := len(first)
			for i > 0 && u > ubs[first[i-1]] {
				i--
			}
			if i < k {
				if len(first) < k {
					first = append(first, 0)
				}
				copy(first[i+1:], first[i:len(first)-1])
				first[i] = int32(r)
			}
		}
		ubs = append(ubs, u)
	}
	for _, r := range first {
		top = ix.offer(top, k, ix.reached[r].slot, r, now)
		ubs[r] = -1
	}
	for r, u := range ubs {
		if u >= 0 && (len(top) < k || u >= top[k-1].total) {
			top = ix.offer(top, k, ix.reached[r].slot, int32(r), now)
		}
	}
	ix.ubs, ix.first = ubs, first

	// An unreached session holds no walked posting: its factors are at most
	// the skipped postings' values, any technology, and no load for a full
	// one. Only freshness varies along the list, and it only falls.
	var ub Scores
	if q.applied.Directory {
		m := ix.dirScratch()
		for j := range q.dirs {
			if from := ix.skipAt[j]; from < ix.skipAt[j+1] {
				m[j] = ix.skips[from].v // the best skipped posting bounds m(d)
			}
		}
		ub.Directory = dirFactor(q.weights, q.wsum, m)
	}
	if q.applied.File {
		ub.File = float64(len(ix.skipFiles)) / float64(len(q.files))
	}
	ub.Tech = 1
	if !busy {
		ub.Load = 1
	}
	// A decision among one owner's sessions walks that owner's list: its
	// sessions, by last activity like the list of all, without the
	// others', which would be skipped. Sessions active at the same time
	// may come in another order, which changes nothing: they share a
	// bound, and the walk stops on a bound, offering the rest to a top K
	// kept in the total order of ranking.
	l, links := &ix.recent, ix.allLinks
	if ix.only != anyOwner {
		l, links = &ix.owners.nodes[ix.only].recent, ix.ownLinks
	}
	for s := l.head; s >= 0; s = links[s].next {
		h := &ix.hot[s]
		if h.full != busy || ix.marks[s].epoch == ix.epoch {
			continue
		}
		if len(top) == k {
			ub.Freshness = freshness(now, h.last, ix.cfg.IdleTimeout)
			// A session at the bound ties the k-th at best; the tie goes
			// to the lower load ratio, then the more recent activity. So
			// an idle k-th more recent than this session beats all the
			// rest of the list too, which matters when the bound does not
			// fall: with no context, freshness does not count.
			b, kth := combine(&ix.cfg.Weights, q.applied, &ub), &top[k-1]
			if b < kth.total || b == kth.total && kth.ratio == 0 && kth.last > h.last {
				break
			}
		}
		top = ix.offer(top, k, uint32(s), -1, now)
	}
	ix.top = top

	for i := range top {
		c := &top[i]
		s := &ix.sess[c.slot]
		out = append(out, Ranked{
			ID:       s.id,
			State:    s.st,
			Scores:   c.sc,
			Applied:  q.applied,
			Total:    c.total,
			Eligible: !busy,
		})
	}
	return out
}

// reachedBound bounds the total of reached[r] without reading its
// slotState: its m(d) so far or the best skipped posting of each task dir,
// its hits plus one per skipped file, any technology, its freshness, no
// load. Like score, it goes through dirFactor and combine, so that
// rounding keeps it above the score.
func (ix *Index) reachedBound(r int, now int64, busy bool) float64 {
	q := &ix.q
	var ub Scores
	if q.applied.Directory {
		nd := len(q.dirs)
		m := ix.dirScratch()
		for j := range nd {
			m[j] = ix.mv[r*nd+j]
			if from := ix.skipAt[j]; from < ix.skipAt[j+1] {
				m[j] = max(m[j], ix.skips[from].v)
			}
		}
		ub.Directory = dirFactor(q.weights, q.wsum, m)
	}
	if q.applied.File {
		ub.File = float64(int(ix.reached[r].hits)+len(ix.skipFiles)) / float64(len(q.files))
	}
	ub.Tech = 1
	ub.Freshness = freshness(now, ix.marks[ix.reached[r].slot].last, ix.cfg.IdleTimeout)
	if !busy {
		ub.Load = 1
	}
	return combine(&ix.cfg.Weights, q.applied, &ub)
}

// offer scores slot (reached[ref], or unreached if ref is -1) and keeps it
// in top, the best k so far, best first.
func (ix *Index) offer(top []cand, k int, slot uint32, ref int32, now int64) []cand {
	h := &ix.hot[slot]
	c := cand{ratio: h.ratio, last: h.last, slot: slot, dormant: h.dormant}
	c.sc, c.total = ix.score(slot, ref, now)
	if len(top) == k && !ix.before(&c, &top[k-1]) {
		return top
	}
	i := len(top)
	for i > 0 && ix.before(&c, &top[i-1]) {
		i--
	}
	if len(top) < k {
		top = append(top, cand{})
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = c
	return top
}

// score computes slot's factors and total exactly as Scan does.
func (ix *Index) score(slot uint32, ref int32, now int64) (Scores, float64) {
	q := &ix.q
	h := &ix.hot[slot]
	var sc Scores
	if q.applied.Directory {
		nd := len(q.dirs)
		m := ix.dirScratch()
		for j := range nd {
			if ref >= 0 {
				m[j] = ix.mv[int(ref)*nd+j]
			}
			for _, sk := range ix.skips[ix.skipAt[j]:ix.skipAt[j+1]] {
				if sk.v <= m[j] {
					break
				}
				if sk.p.has(slot) {
					m[j] = sk.v
					break
				}
			}
		}
		sc.Directory = dirFactor(q.weights, q.wsum, m)
	}
	if q.applied.File {
		var hits int
		if ref >= 0 {
			hits = int(ix.reached[ref].hits)
		}
		for _, p := range ix.skipFiles {
			if p.has(slot) {
				hits++
			}
		}
		sc.File = float64(hits) / float64(len(q.files))
	}
	if q.applied.Tech {
		hits := bits.OnesCount64(h.techs & ix.techMask)
		if len(ix.techIDs) > 0 { // technologies with ids past the mask
			techs := ix.sess[slot].techs
			for _, t := range ix.techIDs {
				if _, ok := slices.BinarySearch(techs, t); ok {
					hits++
				}
			}
		}
		sc.Tech = float64(hits) / float64(len(q.techs))
	}
	sc.Freshness = freshness(now, h.last, ix.cfg.IdleTimeout)
	sc.Load = h.loadFactor
	return sc, combine(&ix.cfg.Weights, q.applied, &sc)
}

// dirScratch returns a zeroed slice of one m(d) per task directory.
func (ix *Index) dirScratch() []float64 {
	nd := len(ix.q.dirs)
	if cap(ix.ms) < nd {
		ix.ms = make([]float64, nd)
	}
	m := ix.ms[:nd]
	clear(m)
	return m
}
