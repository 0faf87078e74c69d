package matcher

import (
	"math"
	"path"
	"slices"
	"strings"
	"time"
)

// State is the part of a session's fingerprint that changes on every task:
// what it is running and when it last did something.
type State struct {
	// Capacity is how many tasks the session runs at once; below 1 counts
	// as 1.
	Capacity int
	// Load is how many tasks it runs now; negative counts as 0. A session
	// with Load >= Capacity is full and never chosen.
	Load int
	// LastActivity is the time of its last tool use or task.
	LastActivity time.Time
	// Dormant sessions are persisted, not running: reusing one means
	// rehydrating it, so live ones win exact ties.
	Dormant bool
}

// Candidate is one session's fingerprint.
type Candidate struct {
	ID string
	// Owner names the group a session belongs to, for an Index to decide
	// among one group's sessions alone ([Index.DecideOwned]); in hearth,
	// the host a session runs on, "" for the host's own. It plays no part
	// in scores: Scan ignores it.
	Owner string
	State
	Files []string // files accessed
	// Dirs are the directories it worked in: those of its files, the root
	// "." for a file at the root, and those it listed. Their ancestors
	// are not listed: the matcher derives them.
	Dirs  []string
	Techs []string // technologies primed for, e.g. "go", "react"
}

// Hints is what a task says about the context it needs. Any of the three may
// be empty; see the package doc for how empty ones are scored.
type Hints struct {
	Files []string
	Dirs  []string
	Techs []string
}

// Scores holds one value in [0, 1] per factor.
type Scores struct {
	Directory float64
	File      float64
	Tech      float64
	Freshness float64
	Load      float64
}

// Applied says which factors count in the total: those the task gave hints
// for, plus freshness and load, which always apply.
type Applied struct {
	Directory bool
	File      bool
	Tech      bool
	Freshness bool
	Load      bool
}

// NormalizePath returns the canonical form of a slash-separated,
// workspace-relative path: cleaned by path.Clean (no "./" prefix, no trailing
// "/", no "//" or ".."-elements that can be resolved), with "" and "/"
// mapped to "." (the root). An absolute path stays absolute.
func NormalizePath(p string) string {
	p = path.Clean(p) // path.Clean("") is "."
	if p == "/" {
		return "."
	}
	return p
}

// normalizeFile normalizes a file name; ok is false for names that name no
// file ("", ".", "/").
func normalizeFile(f string) (p string, ok bool) {
	p = NormalizePath(f)
	return p, p != "."
}

// normalizeTech trims and lower-cases a technology; ok is false for a blank
// one.
func normalizeTech(t string) (s string, ok bool) {
	s = strings.ToLower(strings.TrimSpace(t))
	return s, s != ""
}

// parentDir is path.Dir for a normalized path, normalized: "." for the
// root's children, absolute ones included.
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "."
	}
	return p[:i]
}

// depth counts the components of a normalized directory: 0 for ".".
func depth(dir string) int {
	if dir == "." {
		return 0
	}
	return strings.Count(strings.TrimPrefix(dir, "/"), "/") + 1
}

// rarity is 1 − n/(N+1): the share of the sessions, counting the one a
// spawn would add (which knows nothing), that did not work in or under a
// directory n of N sessions worked in or under. It is in (0, 1]: 1 for a
// directory nobody knows, 1/(N+1) for one every session knows.
func rarity(n, total int) float64 {
	return 1 - float64(n)/float64(total+1)
}

// insideCredit is m(d) for a session that worked under a task directory of
// depth dd but not in it, when no session worked in it: it knows a part of
// d, as much as one that worked in a child of d would have under the
// depth ratio. The root has depth 0: working somewhere in the workspace
// says nothing about its root.
func insideCredit(dd int) float64 {
	return float64(dd) / float64(dd+1)
}

// besideCredit is m(d) for a session whose deepest knowledge on d's path is
// the proper ancestor c (depth dc, known by n of total sessions), when no
// session worked in d: the share of d's depth c covers, times c's rarity.
func besideCredit(dc, dd, n, total int) float64 {
	return float64(float64(dc)/float64(dd)) * rarity(n, total)
}

// dirFactor is the directory factor from the m(d) of each task directory:
// their mean weighted by w, the task directories' rarities, whose sum is
// wsum. One directory is its m(d) itself, without rounding through the
// weights. Scan and Index both call it, so that they add in one order.
func dirFactor(w []float64, wsum float64, m []float64) float64 {
	if len(m) == 1 {
		return m[0]
	}
	var sum float64
	for j, v := range m {
		sum += float64(w[j] * v)
	}
	return sum / wsum
}

// wallNanos is t on the wall clock, in nanoseconds since 1970, saturated
// outside the years 1678 to 2262, where no idle time of interest lies. It
// is monotone in t, which the Index's recency bound relies on, and cheaper
// to subtract than a time.Time.
func wallNanos(t time.Time) int64 {
	const maxSec = math.MaxInt64 / int64(time.Second)
	switch sec := t.Unix(); {
	case sec <= -maxSec:
		return math.MinInt64
	case sec >= maxSec:
		return math.MaxInt64
	}
	return t.UnixNano()
}

// freshness decays linearly from 1 at idle 0 to 0 at the idle timeout; now
// and last are wallNanos. A non-positive timeout (an unvalidated Config)
// scores 0 rather than NaN.
func freshness(now, last int64, timeout time.Duration) float64 {
	if timeout <= 0 {
		return 0
	}
	var idle int64 // activity after now (clock skew) counts as idle 0
	if now > last {
		idle = now - last
		if idle < 0 { // overflowed: idle for centuries
			idle = math.MaxInt64
		}
	}
	f := 1 - float64(idle)/float64(timeout)
	if f < 0 {
		return 0
	}
	return f
}

// loadRatio is load/capacity with the documented clamps; it is also the
// first tie-breaker.
func loadRatio(st *State) float64 {
	capacity, load := st.Capacity, st.Load
	if capacity < 1 {
		capacity = 1
	}
	if load < 0 {
		load = 0
	}
	return float64(load) / float64(capacity)
}

// loadFactor is 1 − load/capacity, 0 for a full session.
func loadFactor(st *State) float64 {
	r := loadRatio(st)
	if r >= 1 {
		return 0
	}
	return 1 - r
}

// full reports whether a session is at or above capacity: the hard gate.
func full(st *State) bool {
	return max(st.Load, 0) >= max(st.Capacity, 1)
}

// agreement is A, how much of the task's context a session knows: the
// larger of its directory and file factors among those that apply, and 1
// when the task names neither directories nor files.
func agreement(a Applied, s *Scores) float64 {
	switch {
	case a.Directory && a.File:
		return max(s.Directory, s.File)
	case a.Directory:
		return s.Directory
	case a.File:
		return s.File
	}
	return 1
}

// combine computes the renormalized weighted total, freshness and load
// scaled by the context A. Scan and Index both call it, in this order, so
// their totals agree bit for bit; the float64 conversions forbid the
// compiler to fuse a multiply and an add into one FMA instruction, which
// would round differently. Since every operation is monotone in each
// factor, combine of upper bounds is an upper bound of combine, which the
// Index's pruning relies on.
func combine(w *Weights, a Applied, s *Scores) float64 {
	ctx := agreement(a, s)
	var num, den float64
	if a.Directory {
		num += float64(w.Directory * s.Directory)
		den += w.Directory
	}
	if a.File {
		num += float64(w.File * s.File)
		den += w.File
	}
	if a.Tech {
		num += float64(w.Tech * s.Tech)
		den += w.Tech
	}
	if a.Freshness {
		num += float64(w.Freshness * float64(ctx*s.Freshness))
		den += w.Freshness
	}
	if a.Load {
		num += float64(w.Load * float64(ctx*s.Load))
		den += w.Load
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// shares splits combine's total into the factors' parts, in the
// factors' order: each applied factor's term of combine's sum (scaled by
// A for a ready factor, as combine scales freshness and load) over W, 0
// for a factor that did not apply. Terms and W are computed as combine
// computes them, so the parts add up to its total to within rounding
// (TestShares and every decision of the matcher's tests hold them within
// 1e-12). It walks the factors' table: a new factor needs no line here.
func shares(w *Weights, a Applied, s *Scores) [len(factors)]float64 {
	var out [len(factors)]float64
	ctx := agreement(a, s)
	var den float64
	for i, f := range factors {
		if !f.applied(&a) {
			continue
		}
		v := f.score(s)
		if f.ready {
			v = float64(ctx * v)
		}
		out[i] = float64(*f.weight(w) * v)
		den += *f.weight(w)
	}
	if den == 0 {
		return [len(factors)]float64{}
	}
	for i := range out {
		out[i] /= den
	}
	return out
}

// task is a Hints normalized, deduplicated and sorted, so that both
// implementations sum over the same sequence.
type task struct {
	files   []string
	dirs    []string // T_d
	depths  []int    // depth of dirs[i]
	techs   []string
	applied Applied

	// Set per decision by weigh, from how many sessions know each
	// directory of T_d.
	weights []float64 // rarity of dirs[i]
	wsum    float64
}

// weigh sets the task directories' weights: n(j) of total sessions
// worked in or under dirs[j].
func (t *task) weigh(n func(j int) int, total int) {
	t.weights, t.wsum = t.weights[:0], 0
	for j := range t.dirs {
		w := rarity(n(j), total)
		t.weights = append(t.weights, w)
		t.wsum += w
	}
}

// load replaces t's content with h's, reusing t's slices.
func (t *task) load(h Hints) {
	t.files, t.dirs, t.techs = t.files[:0], t.dirs[:0], t.techs[:0]
	for _, f := range h.Files {
		if p, ok := normalizeFile(f); ok {
			t.files = append(t.files, p)
		}
	}
	slices.Sort(t.files)
	t.files = slices.Compact(t.files)
	for _, d := range h.Dirs {
		t.dirs = append(t.dirs, NormalizePath(d))
	}
	for _, f := range t.files {
		t.dirs = append(t.dirs, parentDir(f))
	}
	slices.Sort(t.dirs)
	t.dirs = slices.Compact(t.dirs)
	t.depths = t.depths[:0]
	for _, d := range t.dirs {
		t.depths = append(t.depths, depth(d))
	}
	for _, s := range h.Techs {
		if s, ok := normalizeTech(s); ok {
			t.techs = append(t.techs, s)
		}
	}
	slices.Sort(t.techs)
	t.techs = slices.Compact(t.techs)
	t.applied = Applied{
		Directory: len(t.dirs) > 0,
		File:      len(t.files) > 0,
		Tech:      len(t.techs) > 0,
		Freshness: true,
		Load:      true,
	}
}

// Ranked is one scored candidate of a Decision.
type Ranked struct {
	ID string
	// State is the candidate's, LastActivity without its monotonic clock
	// reading.
	State
	Scores   Scores
	Applied  Applied
	Total    float64
	Eligible bool // false for a full session, which is never chosen
}

// ranksBefore is the ranking order among candidates of the same
// eligibility: total descending, then lower load ratio, more recent
// activity, live before dormant, smaller ID.
func ranksBefore(a, b *Ranked) bool {
	if a.Total != b.Total {
		return a.Total > b.Total
	}
	if ra, rb := loadRatio(&a.State), loadRatio(&b.State); ra != rb {
		return ra < rb
	}
	if c := a.LastActivity.Compare(b.LastActivity); c != 0 {
		return c > 0
	}
	if a.Dormant != b.Dormant {
		return !a.Dormant
	}
	return a.ID < b.ID
}
