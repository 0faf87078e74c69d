package matcher

import (
	"cmp"
	"slices"
	"strings"
)

// Index holds the fingerprints of one agent's sessions, updated as hooks
// report what each session touches, and decides like [Scan] without scoring
// every session: [Index.Decide] returns exactly what Scan returns on
// [Index.Candidates] (same outcome, winner, ranked list with identical
// scores, counts).
//
// An Index is not safe for concurrent use: the host serializes access with
// one lock per agent, which it needs anyway to make a decision and the load
// change that follows it atomic.
//
// Updates name sessions by ID. [Index.Upsert] adds a session or updates its
// State; the other mutators change one set of an existing session and report
// false, doing nothing, for an unknown ID, so that a hook arriving after its
// session was removed does not bring it back.
//
// # How it avoids a scan
//
// Paths and technologies are interned to integer ids; a session keeps
// sorted id slices, and each file keeps a posting: the sorted slots of the
// sessions that hold it. The directories sessions worked in form a tree,
// with their ancestors; each directory keeps two postings, the sessions
// that worked in it and those that know it (worked in it or under it),
// so that the counts of the package doc are posting lengths. A session
// keeps, for each directory it knows, how many of its own directories and
// known children account for it, so that adding or forgetting a directory
// updates only the path above it up to the first directory already known.
//
// Decide walks the postings of the task's files, counting each reached
// session's file hits, and those of its directories, recording each
// reached session's m(d) so far: for each task directory d, the sessions
// that worked in d if there are any, and otherwise those that know d (under
// it) and those that know each of its ancestors (beside it), deepest
// first, with the credit of the package doc.
//
// A session reached through no posting has no file hit and no directory
// credit, so its context agreement is 0 and its total at most
// w_tech·1 / W over the applicable weights: technologies give no
// postings, since nearly every session of a Go agent has "go", and count
// as 1 in the bound. Sessions are kept in a list ordered by last activity,
// most recent first. Decide first ranks the reached sessions, then walks
// that list, scoring the sessions not reached, and stops once their bound,
// which only falls along the list, is strictly below the K-th best total
// so far, or equal to it when the K-th is idle and more recent than the
// rest of the list (an equal total loses the tie to it).
//
// Postings shared by a large part of the sessions (a top-level directory,
// the root, go.mod) would reach nearly everyone and defeat that bound. A
// posting that holds at least 1/32 of the sessions (and 64) also keeps a
// bitmap of them, about the size of its slot list; Decide does not walk it but
// tests the bitmap for each session it scores, and raises the bound of
// unreached sessions by what skipped postings can add: the value of the
// best skipped one for each task directory, one hit per skipped file.
//
// Scoring a session costs a cache miss or two, and a decision is bound by
// memory latency. So the reached sessions are first bounded from what the
// walk recorded and a small per-slot array (their freshness), the K with
// the best bounds scored exactly, and the others only if their bound
// reaches the K-th best total; most are skipped without being read.
//
// Scores are computed by the same functions as Scan's, with the same
// floating-point operations in the same order, so they are equal bit for
// bit; bounds use them too, on upper bounds of each factor, and since
// float rounding is monotone a bound never falls below the score it bounds.
//
// # Owners
//
// Each owner keeps the number of its sessions and of its full ones, and a
// recency list of its own besides the list of all; postings are sorted by
// owner, then slot. So [Index.DecideOwned] takes its counts from the
// owner, walks the owner's recency list, and walks only the owner's run of
// each posting: for the owner "" (the first interned, whose run comes
// first), the posting's count of its slots; for another, a binary search
// for the start of its run, a look at its first slots, and a binary
// search for its end. It skips a posting with a bitmap only if the run is
// as long as a posting of an Index of the owner's sessions alone would be
// to have one; a shorter run is walked. The other owners' sessions are
// never touched: no lookup by ID, no walk past them. What they still cost
// is what they change: the counts that weigh directories, which sessions
// worked in a task's directory (rule 2 of the package doc), the size of
// the tables that intern paths, and the locality of the owner's slots,
// spread among theirs. Owners cost 16 bytes a session (an owner id, and a
// second recency list's links) and 8 a posting (the count of the owner
// ""'s slots); an update of a posting that holds the sessions of more
// than one owner besides "" reads a per-slot owner at each step of its
// binary search.
//
// Memory, measured on 10,000 sessions of 1,000 files each, is about 14
// bytes per (session, file) pair, all included: a 4-byte file id in the
// session's set and a 4-byte slot in the file's posting, slice slack,
// directories, bitmaps, and each distinct path stored once.
type Index struct {
	cfg Config

	slots     map[string]uint32 // session ID to slot
	hot       []slotState       // by slot: what Decide reads to score a session
	marks     []mark            // by slot: what Decide reads to reach and bound a session
	sess      []session         // by slot: the rest of the fingerprint
	freeSlots []uint32
	n, nFull  int // sessions, and those at or above capacity

	// Every session is in two recency lists, most recent first: recent,
	// linked through allLinks, and its owner's, linked through ownLinks.
	recent   list
	allLinks []link // by slot
	ownLinks []link // by slot

	files  table[posting]
	dirs   table[dirNode]
	techs  table[int] // a technology's number of sessions
	owners table[ownerNode]

	// bitmapFloor is the smallest posting that gets a bitmap and may be
	// skipped; tests lower it to exercise skipping on small worlds.
	bitmapFloor int

	// Scratch space for Decide, kept across calls so that a decision does
	// not allocate beyond its result.
	epoch     uint32
	only      uint32 // the owner DecideOwned decides among, or anyOwner
	walkBelow int    // a run of only's shorter than this is walked, bitmap or not
	q         task
	techMask  uint64   // the task's technologies with ids below 64
	techIDs   []uint32 // and the others that some session has
	reached   []reach
	mv        []float64 // m(d) so far: mv[r*len(q.dirs)+j] for reached[r], task dir j
	ms        []float64 // one session's m(d), by task dir
	zeros     []float64
	skips     []skip // skipped directory postings, by task dir, best value first
	skipAt    []int  // task dir j's are skips[skipAt[j]:skipAt[j+1]]
	skipFiles []*posting
	top       []cand
	ubs       []float64 // bounds of reached sessions, by reached index
	first     []int32   // reached indexes with the best bounds
}

// slotState is what scoring a session reads, derived from its State by the
// functions Scan uses; 40 bytes, so that scoring a session reads one or two
// cache lines.
type slotState struct {
	last          int64   // wallNanos(State.LastActivity)
	ratio         float64 // loadRatio, the first tie-breaker
	loadFactor    float64
	techs         uint64 // bit t for each technology id t < 64 the session has
	dormant, full bool
}

// list is a recency list of slots, most recent first, threaded through a
// []link indexed by slot.
type list struct {
	head, tail int32 // -1 if empty
}

type link struct {
	prev, next int32 // -1 at the ends
}

// ownerNode is one owner's sessions: their number, those at or above
// capacity, and their recency list, so that a decision among them
// (DecideOwned) counts and walks them alone.
type ownerNode struct {
	recent   list
	n, nFull int
}

// localOwner is the id of the owner "", created with the Index and never
// freed. anyOwner in Index.only means a decision among every owner's
// sessions.
const (
	localOwner = 0
	anyOwner   = ^uint32(0)
)

// mark records whether a slot was reached or excluded in the current
// Decide, with copies of the two slotState fields that bounding a reached
// session needs. Marks are kept apart from slotState, 24 bytes a session,
// so that walking postings and bounding the sessions reached touch a small
// array that stays in cache, and only the sessions that may rank read
// their slotState.
type mark struct {
	last  int64  // slotState.last
	epoch uint32 // the Decide that ref is valid for
	ref   int32  // the slot's index in reached, or -1 if excluded
	owner uint32 // session.owner: postings are sorted by it, and runs found by it
	full  bool   // slotState.full
}

type session struct {
	id    string
	owner uint32 // owner id
	st    State
	files []uint32 // sorted file ids
	dirs  []uint32 // sorted ids of the directories it worked in
	techs []uint32 // sorted technology ids
	// under is the directories it worked in or under, sorted by id, each
	// with its count: 1 if the session worked in it, plus 1 for each of
	// its child directories in under. A directory leaves under when its
	// count falls to 0.
	under []dirCount
}

type dirCount struct {
	dir uint32
	n   uint32
}

// dirNode is one directory of the tree of every directory a session worked
// in, with all their ancestors.
type dirNode struct {
	posting         // the sessions that worked in it
	sub     posting // the sessions that worked in it or under it
	parent  int32   // -1 for the root "."
	depth   int32
	kids    int32 // child directories; a node is freed when it has none and no session
}

// rootDir is the id of ".", created with the Index and never freed.
const rootDir = 0

// table interns names to dense ids, reusing the ids of freed names so that
// the arrays indexed by id stay as large as the live set.
type table[N any] struct {
	ids   map[string]uint32
	names []string // "" for a free id
	nodes []N
	free  []uint32
}

func (t *table[N]) add(name string, node N) uint32 {
	// Clone, so that an interned path does not pin the caller's buffer
	// (a hook payload) for as long as the path is in use.
	name = strings.Clone(name)
	var id uint32
	if k := len(t.free); k > 0 {
		id = t.free[k-1]
		t.free = t.free[:k-1]
		t.names[id], t.nodes[id] = name, node
	} else {
		id = uint32(len(t.nodes))
		t.names = append(t.names, name)
		t.nodes = append(t.nodes, node)
	}
	t.ids[name] = id
	return id
}

func (t *table[N]) drop(id uint32) {
	delete(t.ids, t.names[id])
	var zero N
	t.names[id], t.nodes[id] = "", zero
	t.free = append(t.free, id)
}

// NewIndex returns an empty Index deciding with cfg, or cfg's validation
// error.
func NewIndex(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ix := &Index{
		cfg:         cfg,
		slots:       make(map[string]uint32),
		recent:      list{head: -1, tail: -1},
		only:        anyOwner,
		bitmapFloor: bitmapFloor,
		files:       table[posting]{ids: make(map[string]uint32)},
		dirs:        table[dirNode]{ids: make(map[string]uint32)},
		techs:       table[int]{ids: make(map[string]uint32)},
		owners:      table[ownerNode]{ids: make(map[string]uint32)},
	}
	ix.dirs.add(".", dirNode{parent: -1})
	ix.owners.add("", ownerNode{recent: list{head: -1, tail: -1}})
	return ix, nil
}

// Config returns the Config the Index decides with.
func (ix *Index) Config() Config { return ix.cfg }

// Len returns the number of sessions.
func (ix *Index) Len() int { return ix.n }

// bitmapWant is the posting size from which postings keep a bitmap.
func (ix *Index) bitmapWant() int { return max(ix.bitmapFloor, ix.n/bitmapShare) }

// Upsert adds the session id with state st, or replaces the State of an
// existing one. A new LastActivity at or after every other session's (the
// usual update: activity now) or before all of them costs O(1); any other
// walks the recency list from its most recent end past every session that
// is more recent. A new session's owner is "" (see [Candidate.Owner]); an
// existing one keeps its owner. To restore many sessions, use
// [Index.PutAll].
func (ix *Index) Upsert(id string, st State) { ix.upsert(id, "", st) }

// upsert is Upsert, with the owner of a new session.
func (ix *Index) upsert(id, owner string, st State) {
	st.LastActivity = st.LastActivity.Round(0)
	slot, ok := ix.slots[id]
	if !ok {
		slot = ix.newSlot(id, owner)
		ix.n++
		ix.owners.nodes[ix.sess[slot].owner].n++
		ix.setState(slot, st)
		ix.link(slot)
		return
	}
	h := &ix.hot[slot]
	moved := h.last != wallNanos(st.LastActivity)
	if moved {
		ix.unlink(slot)
	}
	if h.full {
		ix.nFull--
		ix.owners.nodes[ix.sess[slot].owner].nFull--
	}
	ix.setState(slot, st)
	if moved {
		ix.link(slot)
	}
}

func (ix *Index) setState(slot uint32, st State) {
	h := &ix.hot[slot]
	ix.sess[slot].st = st
	h.last, h.ratio, h.loadFactor = wallNanos(st.LastActivity), loadRatio(&st), loadFactor(&st)
	h.dormant, h.full = st.Dormant, full(&st)
	ix.marks[slot].last, ix.marks[slot].full = h.last, h.full
	if h.full {
		ix.nFull++
		ix.owners.nodes[ix.sess[slot].owner].nFull++
	}
}

func (ix *Index) newSlot(id, owner string) uint32 {
	id = strings.Clone(id)
	o, known := ix.owners.ids[owner]
	if !known {
		o = ix.owners.add(owner, ownerNode{recent: list{head: -1, tail: -1}})
	}
	var slot uint32
	if k := len(ix.freeSlots); k > 0 {
		slot = ix.freeSlots[k-1]
		ix.freeSlots = ix.freeSlots[:k-1]
	} else {
		slot = uint32(len(ix.hot))
		ix.hot = append(ix.hot, slotState{})
		ix.marks = append(ix.marks, mark{})
		ix.sess = append(ix.sess, session{})
		ix.allLinks = append(ix.allLinks, link{})
		ix.ownLinks = append(ix.ownLinks, link{})
	}
	ix.hot[slot] = slotState{}
	ix.marks[slot] = mark{owner: o}
	ix.sess[slot] = session{id: id, owner: o}
	ix.allLinks[slot] = link{prev: -1, next: -1}
	ix.ownLinks[slot] = link{prev: -1, next: -1}
	ix.slots[id] = slot
	return slot
}

// link puts slot in the recency lists, its owner's and every session's.
func (ix *Index) link(slot uint32) {
	ix.linkIn(&ix.recent, ix.allLinks, slot)
	ix.linkIn(&ix.owners.nodes[ix.sess[slot].owner].recent, ix.ownLinks, slot)
}

func (ix *Index) unlink(slot uint32) {
	unlinkFrom(&ix.recent, ix.allLinks, slot)
	unlinkFrom(&ix.owners.nodes[ix.sess[slot].owner].recent, ix.ownLinks, slot)
}

// linkIn puts slot in the recency list l, threaded through links, after
// every session with more recent activity.
func (ix *Index) linkIn(l *list, links []link, slot uint32) {
	s := int32(slot)
	k := &links[slot]
	t := ix.hot[slot].last
	if l.head < 0 || t >= ix.hot[l.head].last {
		k.prev, k.next = -1, l.head
		if l.head >= 0 {
			links[l.head].prev = s
		} else {
			l.tail = s
		}
		l.head = s
		return
	}
	after := l.tail
	if t > ix.hot[l.tail].last {
		after = l.head
		for {
			next := links[after].next
			if ix.hot[next].last <= t {
				break // the tail is older than t, so next is never -1 here
			}
			after = next
		}
	}
	k.prev, k.next = after, links[after].next
	if k.next >= 0 {
		links[k.next].prev = s
	} else {
		l.tail = s
	}
	links[after].next = s
}

func unlinkFrom(l *list, links []link, slot uint32) {
	k := &links[slot]
	if k.prev >= 0 {
		links[k.prev].next = k.next
	} else {
		l.head = k.next
	}
	if k.next >= 0 {
		links[k.next].prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next = -1, -1
}

// Remove deletes the session id and reports whether it was there.
func (ix *Index) Remove(id string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	s := &ix.sess[slot]
	want := ix.bitmapWant()
	for _, f := range s.files {
		ix.files.nodes[f].remove(slot, ix.marks)
		ix.fileChanged(f, want)
	}
	for _, u := range s.under {
		n := &ix.dirs.nodes[u.dir]
		n.sub.remove(slot, ix.marks)
		n.sub.tune(want)
	}
	for _, d := range s.dirs {
		n := &ix.dirs.nodes[d]
		n.remove(slot, ix.marks)
		n.tune(want)
	}
	for _, d := range s.dirs {
		ix.releaseDir(d)
	}
	for _, t := range s.techs {
		ix.releaseTech(t)
	}
	ix.unlink(slot)
	ix.n--
	o := s.owner
	on := &ix.owners.nodes[o]
	on.n--
	if ix.hot[slot].full {
		ix.nFull--
		on.nFull--
	}
	if on.n == 0 && o != localOwner {
		ix.owners.drop(o)
	}
	delete(ix.slots, id)
	ix.hot[slot] = slotState{}
	ix.sess[slot] = session{}
	ix.freeSlots = append(ix.freeSlots, slot)
	return true
}

// AddFiles records that session id accessed files. It does not add their
// directories: the host does, with AddDirs.
func (ix *Index) AddFiles(id string, files ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	want := ix.bitmapWant()
	for _, raw := range files {
		p, ok := normalizeFile(raw)
		if !ok {
			continue
		}
		f, known := ix.files.ids[p]
		if !known {
			f = ix.files.add(p, posting{})
		}
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.files, f)
		if found {
			continue
		}
		s.files = slices.Insert(s.files, i, f)
		n := &ix.files.nodes[f]
		n.insert(slot, ix.marks)
		n.tune(want)
	}
	return true
}

// RemoveFiles forgets files of session id (an evicted part of its
// fingerprint). Files it does not hold are ignored.
func (ix *Index) RemoveFiles(id string, files ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	want := ix.bitmapWant()
	for _, raw := range files {
		p, ok := normalizeFile(raw)
		if !ok {
			continue
		}
		f, known := ix.files.ids[p]
		if !known {
			continue
		}
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.files, f)
		if !found {
			continue
		}
		s.files = slices.Delete(s.files, i, i+1)
		ix.files.nodes[f].remove(slot, ix.marks)
		ix.fileChanged(f, want)
	}
	return true
}

func (ix *Index) fileChanged(f uint32, want int) {
	if n := &ix.files.nodes[f]; len(n.slots) == 0 {
		ix.files.drop(f)
	} else {
		n.tune(want)
	}
}

// AddDirs records directories session id worked in: where it read or
// wrote files, or listed. Their ancestors are the Index's to derive.
func (ix *Index) AddDirs(id string, dirs ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	want := ix.bitmapWant()
	for _, raw := range dirs {
		d := ix.internDir(NormalizePath(raw))
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.dirs, d)
		if found {
			continue
		}
		s.dirs = slices.Insert(s.dirs, i, d)
		n := &ix.dirs.nodes[d]
		n.insert(slot, ix.marks)
		n.tune(want)
		ix.enter(slot, d, want)
	}
	return true
}

// RemoveDirs forgets directories of session id. Directories it does not hold
// are ignored.
func (ix *Index) RemoveDirs(id string, dirs ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	want := ix.bitmapWant()
	for _, raw := range dirs {
		d, known := ix.dirs.ids[NormalizePath(raw)]
		if !known {
			continue
		}
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.dirs, d)
		if !found {
			continue
		}
		s.dirs = slices.Delete(s.dirs, i, i+1)
		n := &ix.dirs.nodes[d]
		n.remove(slot, ix.marks)
		n.tune(want)
		ix.leave(slot, d, want)
		ix.releaseDir(d)
	}
	return true
}

// enter counts one more reason for d to be in slot's under set: the
// session worked in d, or a child of d entered the set. A directory new to
// the set joins its sub posting and counts as a reason for its parent.
func (ix *Index) enter(slot, d uint32, want int) {
	for {
		s := &ix.sess[slot]
		i, found := slices.BinarySearchFunc(s.under, d, cmpDirCount)
		if found {
			s.under[i].n++
			return
		}
		s.under = slices.Insert(s.under, i, dirCount{dir: d, n: 1})
		n := &ix.dirs.nodes[d]
		n.sub.insert(slot, ix.marks)
		n.sub.tune(want)
		if d == rootDir {
			return
		}
		d = uint32(n.parent)
	}
}

// leave undoes enter.
func (ix *Index) leave(slot, d uint32, want int) {
	for {
		s := &ix.sess[slot]
		i, _ := slices.BinarySearchFunc(s.under, d, cmpDirCount)
		if s.under[i].n--; s.under[i].n > 0 {
			return
		}
		s.under = slices.Delete(s.under, i, i+1)
		n := &ix.dirs.nodes[d]
		n.sub.remove(slot, ix.marks)
		n.sub.tune(want)
		if d == rootDir {
			return
		}
		d = uint32(n.parent)
	}
}

func cmpDirCount(c dirCount, d uint32) int { return cmp.Compare(c.dir, d) }

// internDir returns the id of a normalized directory, creating it and its
// missing ancestors.
func (ix *Index) internDir(p string) uint32 {
	if id, ok := ix.dirs.ids[p]; ok {
		return id
	}
	parent := ix.internDir(parentDir(p))
	ix.dirs.nodes[parent].kids++
	return ix.dirs.add(p, dirNode{parent: int32(parent), depth: ix.dirs.nodes[parent].depth + 1})
}

// releaseDir frees d and then its ancestors while no session worked in or
// under them and they have no children left.
func (ix *Index) releaseDir(d uint32) {
	for d != rootDir {
		n := &ix.dirs.nodes[d]
		if ix.dirs.names[d] == "" || len(n.slots) > 0 || len(n.sub.slots) > 0 || n.kids > 0 {
			return
		}
		parent := n.parent
		ix.dirs.drop(d)
		ix.dirs.nodes[parent].kids--
		d = uint32(parent)
	}
}

// AddTechs records technologies session id is primed for.
func (ix *Index) AddTechs(id string, techs ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	for _, raw := range techs {
		name, ok := normalizeTech(raw)
		if !ok {
			continue
		}
		t, known := ix.techs.ids[name]
		if !known {
			t = ix.techs.add(name, 0)
		}
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.techs, t)
		if found {
			continue
		}
		s.techs = slices.Insert(s.techs, i, t)
		ix.techs.nodes[t]++
		if t < 64 {
			ix.hot[slot].techs |= 1 << t
		}
	}
	return true
}

// RemoveTechs forgets technologies of session id.
func (ix *Index) RemoveTechs(id string, techs ...string) bool {
	slot, ok := ix.slots[id]
	if !ok {
		return false
	}
	for _, raw := range techs {
		name, ok := normalizeTech(raw)
		if !ok {
			continue
		}
		t, known := ix.techs.ids[name]
		if !known {
			continue
		}
		s := &ix.sess[slot]
		i, found := slices.BinarySearch(s.techs, t)
		if !found {
			continue
		}
		s.techs = slices.Delete(s.techs, i, i+1)
		if t < 64 {
			ix.hot[slot].techs &^= 1 << t
		}
		ix.releaseTech(t)
	}
	return true
}

func (ix *Index) releaseTech(t uint32) {
	if ix.techs.nodes[t]--; ix.techs.nodes[t] == 0 {
		ix.techs.drop(t)
	}
}

// Put replaces the whole fingerprint of session c.ID with c, its owner
// included, for instance when restoring persisted sessions.
func (ix *Index) Put(c Candidate) {
	ix.Remove(c.ID)
	ix.upsert(c.ID, c.Owner, c.State)
	ix.AddFiles(c.ID, c.Files...)
	ix.AddDirs(c.ID, c.Dirs...)
	ix.AddTechs(c.ID, c.Techs...)
}

// PutAll puts every candidate, oldest activity first, so that restoring
// sessions into an empty Index costs O(1) each in the recency list,
// whatever their order in cands (Badger returns them by key).
func (ix *Index) PutAll(cands []Candidate) {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cands[a].LastActivity.Compare(cands[b].LastActivity)
	})
	for _, i := range order {
		ix.Put(cands[i])
	}
}

// Candidate returns the fingerprint of session id, normalized, its sets
// sorted.
func (ix *Index) Candidate(id string) (Candidate, bool) {
	slot, ok := ix.slots[id]
	if !ok {
		return Candidate{}, false
	}
	return ix.candidate(slot), true
}

// Candidates returns every fingerprint, by ID, normalized, with sorted sets:
// for persistence, and for checking Decide against Scan.
func (ix *Index) Candidates() []Candidate {
	out := make([]Candidate, 0, ix.n)
	for _, slot := range ix.slots {
		out = append(out, ix.candidate(slot))
	}
	slices.SortFunc(out, func(a, b Candidate) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (ix *Index) candidate(slot uint32) Candidate {
	s := &ix.sess[slot]
	names := func(ids []uint32, names []string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = names[id]
		}
		slices.Sort(out)
		return out
	}
	return Candidate{
		ID:    s.id,
		Owner: ix.owners.names[s.owner],
		State: s.st,
		Files: names(s.files, ix.files.names),
		Dirs:  names(s.dirs, ix.dirs.names),
		Techs: names(s.techs, ix.techs.names),
	}
}
