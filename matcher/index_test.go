package matcher

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// world generates random fingerprints, updates and tasks over a small tree,
// small enough that sessions share files and directories and scores tie.
type world struct {
	rng   *rand.Rand
	dirs  []string // normalized, closed under parents (but ".")
	files []string // normalized
	ids   []string
	techs []string
	times []time.Time
	now   time.Time
	idle  bool // sessions are mostly idle, of capacity 1
	// owners are the owners candidates are put with, "" the most often,
	// as a host's own sessions among the cluster's.
	owners []string
}

func newWorld(seed uint64) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 0x6d61746368))}
	w.now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	parts := []string{"a", "b", "src", "models", "x"}
	seen := map[string]bool{}
	var add func(d string)
	add = func(d string) {
		if d == "." || seen[d] {
			return
		}
		seen[d] = true
		w.dirs = append(w.dirs, d)
		add(NormalizePath(path.Dir(d)))
	}
	for range 4 + w.rng.IntN(10) {
		var b strings.Builder
		switch w.rng.IntN(10) {
		case 0:
			b.WriteString("/") // absolute, kept as is
		case 1:
			b.WriteString("../")
		}
		for i := range 1 + w.rng.IntN(4) {
			if i > 0 {
				b.WriteByte('/')
			}
			b.WriteString(parts[w.rng.IntN(len(parts))])
		}
		add(NormalizePath(b.String()))
	}
	for range 3 + w.rng.IntN(20) {
		name := fmt.Sprintf("f%d.go", w.rng.IntN(4))
		if w.rng.IntN(5) == 0 {
			w.files = append(w.files, name) // at the root
			continue
		}
		w.files = append(w.files, w.dirs[w.rng.IntN(len(w.dirs))]+"/"+name)
	}
	n := 3 + w.rng.IntN(25)
	if w.rng.IntN(10) == 0 {
		n = 100 + w.rng.IntN(100) // slots past a bitmap's first word
	}
	for i := range n {
		w.ids = append(w.ids, fmt.Sprintf("s-%d", i))
	}
	w.owners = []string{"", "", "h1", "h2"}
	w.techs = []string{"go", "Go ", "python", "TypeScript", "typescript", "rust", " "}
	if w.rng.IntN(3) == 0 {
		// Past 64 technologies, the Index's per-session bit mask no longer
		// holds them all.
		for i := range 90 {
			w.techs = append(w.techs, fmt.Sprintf("lang%02d", i))
		}
	}
	// Few distinct times, so that freshness ties and the tie-breakers
	// decide; some at and beyond the idle timeout, one in the future.
	for _, ago := range []time.Duration{0, time.Minute, 15 * time.Minute, 30 * time.Minute, 2 * time.Hour, -time.Minute} {
		w.times = append(w.times, w.now.Add(-ago))
	}
	if w.rng.IntN(4) == 0 {
		// Mostly idle sessions, active at one of two times: many equal
		// totals, where the Index stops on ties.
		w.idle = true
		w.times = w.times[:2]
		return w
	}
	// Times outside what int64 nanoseconds hold, where only the times
	// themselves break ties.
	w.times = append(w.times, time.Time{}, time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2900, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	return w
}

// spell writes a path in one of its equivalent spellings.
func (w *world) spell(p string, dir bool) string {
	switch w.rng.IntN(6) {
	case 0:
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "..") {
			return "./" + p
		}
	case 1:
		if dir {
			return p + "/"
		}
	case 2:
		return strings.Replace(p, "/", "//", 1)
	case 3:
		if p == "." && w.rng.IntN(2) == 0 {
			return ""
		}
	}
	return p
}

func (w *world) pick(pool []string, max int, dir bool) []string {
	var out []string
	if len(pool) == 0 {
		return out
	}
	for range w.rng.IntN(max + 1) {
		out = append(out, w.spell(pool[w.rng.IntN(len(pool))], dir))
	}
	return out
}

func (w *world) pickDirs(max int) []string {
	out := w.pick(w.dirs, max, true)
	if w.rng.IntN(8) == 0 {
		out = append(out, w.spell(".", true))
	}
	return out
}

// pickClosedDirs picks directories with all their ancestors, as the host
// records them.
func (w *world) pickClosedDirs(max int) []string {
	var out []string
	for _, d := range w.pick(w.dirs, max, false) {
		for d = NormalizePath(d); d != "."; d = NormalizePath(path.Dir(d)) {
			out = append(out, w.spell(d, true))
		}
		if w.rng.IntN(2) == 0 {
			out = append(out, ".")
		}
	}
	return out
}

func (w *world) pickTechs(max int) []string {
	var out []string
	n := w.rng.IntN(max + 1)
	if len(w.techs) > 64 {
		n *= 8
	}
	for range n {
		out = append(out, w.techs[w.rng.IntN(len(w.techs))])
	}
	return out
}

func (w *world) state() State {
	if w.idle && w.rng.IntN(8) > 0 {
		return State{Capacity: 1, LastActivity: w.times[w.rng.IntN(len(w.times))], Dormant: w.rng.IntN(3) == 0}
	}
	return State{
		Capacity:     w.rng.IntN(5) - 1,
		Load:         w.rng.IntN(6) - 1,
		LastActivity: w.times[w.rng.IntN(len(w.times))],
		Dormant:      w.rng.IntN(3) == 0,
	}
}

func (w *world) candidate(id string) Candidate {
	c := Candidate{ID: id, Owner: w.owners[w.rng.IntN(len(w.owners))], State: w.state(), Files: w.pick(w.files, 6, false), Techs: w.pickTechs(3)}
	switch w.rng.IntN(3) {
	case 0:
		c.Dirs = w.pickClosedDirs(4)
	case 1:
		c.Dirs = w.pickDirs(5)
	default:
		// As the host records them: the directories of its files.
		c.Dirs = fileDirs(c.Files)
	}
	return c
}

// fileDirs returns the directories of files.
func fileDirs(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, path.Dir(f))
	}
	return out
}

func (w *world) hints() Hints {
	h := Hints{}
	if w.rng.IntN(4) > 0 {
		h.Files = w.pick(w.files, 4, false)
	}
	if w.rng.IntN(4) > 0 {
		h.Dirs = w.pickDirs(3)
		switch w.rng.IntN(4) {
		case 0: // a directory nobody worked in or under
			h.Dirs = append(h.Dirs, w.dirs[w.rng.IntN(len(w.dirs))]+"/new")
		case 1: // one more level, so that some worked beside it
			h.Dirs = append(h.Dirs, w.dirs[w.rng.IntN(len(w.dirs))]+"/"+[]string{"a", "b", "x"}[w.rng.IntN(3)])
		}
	}
	if w.rng.IntN(3) > 0 {
		h.Techs = w.pickTechs(3)
	}
	return h
}

func (w *world) exclude() []string {
	var out []string
	for range w.rng.IntN(4) {
		out = append(out, w.ids[w.rng.IntN(len(w.ids))])
	}
	if w.rng.IntN(4) == 0 {
		out = append(out, "unknown")
	}
	return out
}

// decider returns a decision function, by Index.Decide or, half the time,
// Index.DecideOwned of a random owner (sometimes one with no session),
// with its description and the IDs among cands that it leaves out besides
// those it is given: the other owners' sessions.
func (w *world) decider(ix *Index, cands []Candidate) (how string, decide func(Hints, time.Time, ...string) Decision, others []string) {
	if w.rng.IntN(2) == 0 {
		return "Decide", ix.Decide, nil
	}
	owner := "h9" // owns no session
	if i := w.rng.IntN(len(w.owners) + 1); i < len(w.owners) {
		owner = w.owners[i]
	}
	for _, c := range cands {
		if c.Owner != owner {
			others = append(others, c.ID)
		}
	}
	return fmt.Sprintf("DecideOwned(%q)", owner), func(h Hints, now time.Time, excl ...string) Decision {
		return ix.DecideOwned(owner, h, now, excl...)
	}, others
}

// mutate applies one random update through the Index's incremental API.
func (w *world) mutate(ix *Index) {
	id := w.ids[w.rng.IntN(len(w.ids))]
	switch w.rng.IntN(12) {
	case 0, 1:
		ix.Upsert(id, w.state())
	case 2, 3:
		ix.AddFiles(id, w.pick(w.files, 4, false)...)
	case 4:
		ix.RemoveFiles(id, w.pick(w.files, 4, false)...)
	case 5:
		if w.rng.IntN(2) == 0 {
			ix.AddDirs(id, w.pickDirs(3)...)
		} else {
			// A tool use as the host reports it: files and their directories.
			files := w.pick(w.files, 3, false)
			ix.AddFiles(id, files...)
			ix.AddDirs(id, fileDirs(files)...)
		}
	case 6:
		ix.AddDirs(id, w.pickClosedDirs(2)...)
	case 7:
		ix.RemoveDirs(id, w.pickDirs(3)...)
	case 8:
		ix.AddTechs(id, w.pickTechs(2)...)
	case 9:
		ix.RemoveTechs(id, w.pickTechs(2)...)
	case 10:
		ix.Remove(id)
	case 11:
		ix.Put(w.candidate(id))
	}
}

// propertyConfigs are the configurations the Index is checked under.
func propertyConfigs() map[string]Config {
	topK1 := DefaultConfig()
	topK1.TopK = 1
	topK2 := DefaultConfig()
	topK2.TopK = 2
	return map[string]Config{
		"default": DefaultConfig(),
		"topk=1":  topK1,
		"topk=2":  topK2,
		"weights": {
			Weights:     Weights{Directory: 0.5, File: 0, Tech: 0.1, Freshness: 0.3, Load: 0.1},
			Threshold:   0.45,
			IdleTimeout: 10 * time.Minute,
			TopK:        3,
		},
		"affinity-only": { // a task without hints totals 0
			Weights:     Weights{Directory: 0.4, File: 0.4, Tech: 0.2},
			Threshold:   0,
			IdleTimeout: time.Hour,
			TopK:        4,
		},
		"topk=50": {
			Weights:     DefaultWeights(),
			Threshold:   0.6,
			IdleTimeout: 30 * time.Minute,
			TopK:        50,
		},
	}
}

// TestIndexMatchesScan is the property test: on random worlds changed by
// random updates, Index.Decide returns exactly Scan's decision on
// Index.Candidates, for random tasks and exclusions; Index.DecideOwned
// returns Scan's decision with the other owners' sessions excluded too.
func TestIndexMatchesScan(t *testing.T) {
	worlds := 400
	if testing.Short() {
		worlds = 60
	}
	for name, cfg := range propertyConfigs() {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(worlds) {
				checkWorld(t, cfg, seed)
			}
		})
	}
}

func checkWorld(t *testing.T, cfg Config, seed uint64) {
	t.Helper()
	w := newWorld(seed)
	ix, err := NewIndex(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Small floors give bitmaps to small postings, so that skipping and the
	// raised bound are exercised too; the default floor exercises walking.
	ix.bitmapFloor = []int{bitmapFloor, 1, 2, 3}[w.rng.IntN(4)]
	for step := range 40 + w.rng.IntN(120) {
		w.mutate(ix)
		if step%16 == 0 {
			checkUnder(t, ix, seed)
			checkLists(t, ix, seed)
		}
		if w.rng.IntN(3) > 0 {
			continue
		}
		h, excl := w.hints(), w.exclude()
		now := w.now.Add(time.Duration(w.rng.IntN(3)) * time.Minute)
		cands := ix.Candidates()
		how, decide, others := w.decider(ix, cands)
		got := decide(h, now, excl...)
		want := Scan(cfg, cands, h, now, append(others, excl...)...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d, step %d, bitmap floor %d: Index.%s differs from Scan\nhints %q, exclude %q\n got %s\nwant %s",
				seed, step, ix.bitmapFloor, how, h, excl, dump(got), dump(want))
		}
		checkShares(t, want)
	}
	checkLists(t, ix, seed)

	// Fingerprints put whole, in raw spellings, decide as Scan does on
	// those same raw candidates: both normalize alike.
	raw := make([]Candidate, 0, len(w.ids))
	fresh, _ := NewIndex(cfg)
	fresh.bitmapFloor = ix.bitmapFloor
	for _, id := range w.ids {
		if w.rng.IntN(4) > 0 {
			raw = append(raw, w.candidate(id))
		}
	}
	fresh.PutAll(raw)
	h, excl := w.hints(), w.exclude()
	how, decide, others := w.decider(fresh, raw)
	if got, want := decide(h, w.now, excl...), Scan(cfg, raw, h, w.now, append(others, excl...)...); !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d, raw candidates: Index.%s differs from Scan\nhints %q, exclude %q\n got %s\nwant %s",
			seed, how, h, excl, dump(got), dump(want))
	}

	// Removing every session leaves nothing behind.
	for _, id := range w.ids {
		ix.Remove(id)
	}
	checkEmpty(t, ix, seed)
}

// checkEmpty verifies that an Index whose sessions were all removed holds
// no path, technology or orphan any more.
func checkEmpty(t *testing.T, ix *Index, seed uint64) {
	t.Helper()
	if ix.Len() != 0 || ix.nFull != 0 || ix.recent != (list{-1, -1}) {
		t.Fatalf("seed %d: emptied index has len %d, full %d, recency list %v", seed, ix.Len(), ix.nFull, ix.recent)
	}
	if len(ix.owners.ids) != 1 || ix.owners.nodes[localOwner] != (ownerNode{recent: list{-1, -1}}) {
		t.Fatalf("seed %d: emptied index keeps owners %v, local owner %+v", seed, ix.owners.ids, ix.owners.nodes[localOwner])
	}
	if len(ix.files.ids) != 0 || len(ix.techs.ids) != 0 || len(ix.dirs.ids) != 1 {
		t.Fatalf("seed %d: emptied index keeps %d files, %d techs, %d dirs (want 0, 0, 1)",
			seed, len(ix.files.ids), len(ix.techs.ids), len(ix.dirs.ids))
	}
	if root := ix.dirs.nodes[rootDir]; root.kids != 0 || len(root.slots) != 0 || len(root.sub.slots) != 0 {
		t.Fatalf("seed %d: emptied index root has %d kids, %d sessions in it, %d under it", seed, root.kids, len(root.slots), len(root.sub.slots))
	}
}

// checkUnder verifies each session's under set and counts against its
// directories, and the sub postings against the under sets.
func checkUnder(t *testing.T, ix *Index, seed uint64) {
	t.Helper()
	subs := map[uint32][]uint32{}
	for _, slot := range ix.slots {
		s := &ix.sess[slot]
		// A directory's count is 1 if the session worked in it, plus its
		// children in the set.
		want := map[uint32]uint32{}
		known := map[uint32]bool{}
		for _, d := range s.dirs {
			for a := int32(d); a >= 0; a = ix.dirs.nodes[a].parent {
				known[uint32(a)] = true
			}
		}
		for d := range known {
			if slices.Contains(s.dirs, d) {
				want[d]++
			}
			if p := ix.dirs.nodes[d].parent; p >= 0 {
				want[uint32(p)]++
			}
		}
		got := map[uint32]uint32{}
		for i, u := range s.under {
			if i > 0 && s.under[i-1].dir >= u.dir {
				t.Fatalf("seed %d: session %s under set not sorted: %v", seed, s.id, s.under)
			}
			got[u.dir] = u.n
			subs[u.dir] = append(subs[u.dir], slot)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: session %s under counts %v, want %v", seed, s.id, got, want)
		}
	}
	for id, name := range ix.dirs.names {
		if name == "" && id != rootDir {
			continue
		}
		want := subs[uint32(id)]
		sortPosting(ix, want)
		if got := ix.dirs.nodes[id].sub.slots; !slices.Equal(got, want) {
			t.Fatalf("seed %d: directory %q has sessions %v under it, want %v", seed, name, got, want)
		}
	}
}

// sortPosting sorts slots as a posting keeps them: by owner, then slot.
func sortPosting(ix *Index, slots []uint32) {
	slices.SortFunc(slots, func(a, b uint32) int {
		if c := cmp.Compare(ix.marks[a].owner, ix.marks[b].owner); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// checkLists verifies the recency lists and the owners' counts: the list
// of all sessions and each owner's list hold exactly their sessions, from
// the most to the least recently active, linked both ways.
func checkLists(t *testing.T, ix *Index, seed uint64) {
	t.Helper()
	walk := func(name string, l list, links []link) []uint32 {
		var out []uint32
		prev := int32(-1)
		for s := l.head; s >= 0; s = links[s].next {
			if links[s].prev != prev {
				t.Fatalf("seed %d: %s list: slot %d links back to %d, want %d", seed, name, s, links[s].prev, prev)
			}
			if prev >= 0 && ix.hot[prev].last < ix.hot[s].last {
				t.Fatalf("seed %d: %s list: slot %d (%d) after the less recent %d (%d)", seed, name, s, ix.hot[s].last, prev, ix.hot[prev].last)
			}
			if len(out) > ix.n {
				t.Fatalf("seed %d: %s list: longer than the %d sessions", seed, name, ix.n)
			}
			out = append(out, uint32(s))
			prev = s
		}
		if l.tail != prev {
			t.Fatalf("seed %d: %s list ends at %d, its tail is %d", seed, name, prev, l.tail)
		}
		slices.Sort(out)
		return out
	}
	var all []uint32
	byOwner := map[uint32][]uint32{}
	full := map[uint32]int{}
	for _, slot := range ix.slots {
		all = append(all, slot)
		o := ix.sess[slot].owner
		if ix.marks[slot].owner != o {
			t.Fatalf("seed %d: slot %d marked with owner %d, want %d", seed, slot, ix.marks[slot].owner, o)
		}
		byOwner[o] = append(byOwner[o], slot)
		if ix.hot[slot].full {
			full[o]++
		}
	}
	slices.Sort(all)
	if got := walk("all", ix.recent, ix.allLinks); !slices.Equal(got, all) {
		t.Fatalf("seed %d: the list of all has slots %v, want %v", seed, got, all)
	}
	for name, o := range ix.owners.ids {
		want := byOwner[o]
		slices.Sort(want)
		node := ix.owners.nodes[o]
		if got := walk(fmt.Sprintf("owner %q", name), node.recent, ix.ownLinks); !slices.Equal(got, want) {
			t.Fatalf("seed %d: owner %q's list has slots %v, want %v", seed, name, got, want)
		}
		if node.n != len(want) || node.nFull != full[o] {
			t.Fatalf("seed %d: owner %q counts %d sessions, %d full; want %d, %d", seed, name, node.n, node.nFull, len(want), full[o])
		}
		if len(want) == 0 && o != localOwner {
			t.Fatalf("seed %d: owner %q has no session left but is kept", seed, name)
		}
		delete(byOwner, o)
	}
	if len(byOwner) > 0 {
		t.Fatalf("seed %d: sessions of unknown owners %v", seed, byOwner)
	}
	// Postings are sorted by owner, then slot, each owner's run where
	// run finds it.
	var ps []*posting
	for i := range ix.files.nodes {
		ps = append(ps, &ix.files.nodes[i])
	}
	for i := range ix.dirs.nodes {
		ps = append(ps, &ix.dirs.nodes[i].posting, &ix.dirs.nodes[i].sub)
	}
	for _, p := range ps {
		want := slices.Clone(p.slots)
		sortPosting(ix, want)
		if !slices.Equal(p.slots, want) {
			t.Fatalf("seed %d: posting %v, want %v, by owner and slot", seed, p.slots, want)
		}
		local := 0
		for _, s := range p.slots {
			if ix.marks[s].owner == localOwner {
				local++
			}
		}
		if p.local != local {
			t.Fatalf("seed %d: posting %v counts %d slots of the local owner, want %d", seed, p.slots, p.local, local)
		}
		for _, o := range ix.owners.ids {
			var want []uint32
			for _, s := range p.slots {
				if ix.marks[s].owner == o {
					want = append(want, s)
				}
			}
			if got := p.run(o, ix.marks); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("seed %d: owner %d's run in %v is %v, want %v", seed, o, p.slots, got, want)
			}
		}
	}
}

func dump(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (outcome %s, winner %q, dormant %t, considered %d, eligible %d, excluded %d)",
		d, d.Choice, d.Winner, d.Dormant, d.Considered, d.Eligible, d.Excluded)
	for _, r := range d.Ranked {
		fmt.Fprintf(&b, "\n\t%s total %v eligible %t load %d/%d last %s dormant %t %+v %+v",
			r.ID, r.Total, r.Eligible, r.Load, r.Capacity, r.LastActivity.Format(time.TimeOnly), r.Dormant, r.Scores, r.Applied)
	}
	return b.String()
}

// TestIndexIncrementalEqualsPut checks that a fingerprint built by many
// small updates equals the one Put whole.
func TestIndexIncrementalEqualsPut(t *testing.T) {
	for seed := range uint64(50) {
		w := newWorld(seed)
		inc, _ := NewIndex(DefaultConfig())
		for range 200 {
			w.mutate(inc)
		}
		whole, _ := NewIndex(DefaultConfig())
		for _, c := range inc.Candidates() {
			whole.Put(c)
		}
		if got, want := whole.Candidates(), inc.Candidates(); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: Put of Candidates gives\n%+v\nwant\n%+v", seed, got, want)
		}
		for _, want := range inc.Candidates() {
			if got, ok := inc.Candidate(want.ID); !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: Candidate(%q) gives %+v, %t, want %+v", seed, want.ID, got, ok, want)
			}
		}
	}
}

func TestIndexUnknownSession(t *testing.T) {
	ix, _ := NewIndex(DefaultConfig())
	for name, f := range map[string]func() bool{
		"AddFiles":    func() bool { return ix.AddFiles("ghost", "a.go") },
		"RemoveFiles": func() bool { return ix.RemoveFiles("ghost", "a.go") },
		"AddDirs":     func() bool { return ix.AddDirs("ghost", "src") },
		"RemoveDirs":  func() bool { return ix.RemoveDirs("ghost", "src") },
		"AddTechs":    func() bool { return ix.AddTechs("ghost", "go") },
		"RemoveTechs": func() bool { return ix.RemoveTechs("ghost", "go") },
		"Remove":      func() bool { return ix.Remove("ghost") },
	} {
		if f() {
			t.Errorf("%s on an unknown session: got true, want false", name)
		}
	}
	if ix.Len() != 0 {
		t.Errorf("Len after updates of an unknown session: got %d, want 0", ix.Len())
	}
	if _, ok := ix.Candidate("ghost"); ok {
		t.Errorf("Candidate(ghost): got ok, want not found")
	}
}

func TestNewIndexValidates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TopK = 0
	if _, err := NewIndex(cfg); err == nil {
		t.Fatal("NewIndex with TopK 0: got nil error")
	}
	cfg = DefaultConfig()
	cfg.Threshold = 0.75
	ix, err := NewIndex(cfg)
	if err != nil || ix.Config() != cfg {
		t.Fatalf("NewIndex(%+v): got config %+v, error %v", cfg, ix.Config(), err)
	}
}

// TestIndexEpochWrap checks that decisions stay right when the epoch
// counter wraps around.
func TestIndexEpochWrap(t *testing.T) {
	w := newWorld(7)
	ix, _ := NewIndex(DefaultConfig())
	for range 100 {
		w.mutate(ix)
	}
	ix.epoch = ^uint32(0) - 2
	for range 6 {
		h := w.hints()
		if got, want := ix.Decide(h, w.now), Scan(ix.cfg, ix.Candidates(), h, w.now); !reflect.DeepEqual(got, want) {
			t.Fatalf("epoch %d: got %s, want %s", ix.epoch, dump(got), dump(want))
		}
	}
}
