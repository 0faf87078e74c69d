package matcher

import (
	"cmp"
	"slices"
)

// posting is the set of sessions (by slot) that hold one file or directory.
// The slots are kept sorted by owner, then by slot: a decision among one
// owner's sessions finds their run and walks it alone (run), and within a
// run, walking the slots touches the per-slot arrays in address order; a
// removal is a binary search. The first owner's run (localOwner's: the
// host's own sessions) is counted, so that finding it reads no owner. A
// posting that holds a large share of all sessions also keeps a bitmap,
// so that Decide can skip walking it and test membership in O(1) for the
// few sessions it scores.
type posting struct {
	slots []uint32
	bits  []uint64 // nil unless the posting is large; see tune
	local int      // slots[:local] are localOwner's
}

// Bitmaps cost one bit per session slot, so a posting gets one only once it
// holds at least 1/32 of the sessions, where the bitmap is no bigger than
// the slot list itself, and never below bitmapFloor sessions, which are
// cheaper to walk than to skip. The bitmap is dropped below half that size,
// so a posting at the border does not flip on every update.
const (
	bitmapFloor = 64
	bitmapShare = 32
)

func (p *posting) has(slot uint32) bool {
	w := slot >> 6
	return int(w) < len(p.bits) && p.bits[w]&(1<<(slot&63)) != 0
}

// find returns where slot is or would be in p.slots; marks give each
// slot's owner.
func (p *posting) find(slot uint32, marks []mark) (int, bool) {
	o := marks[slot].owner
	if o == localOwner {
		return slices.BinarySearch(p.slots[:p.local], slot)
	}
	rest := p.slots[p.local:]
	if n := len(rest); n == 0 || marks[rest[0]].owner == o && marks[rest[n-1]].owner == o {
		// One owner's run, the rest of the posting: slots alone order it.
		i, ok := slices.BinarySearch(rest, slot)
		return p.local + i, ok
	}
	i, ok := slices.BinarySearchFunc(rest, slot, func(e, slot uint32) int {
		if c := cmp.Compare(marks[e].owner, o); c != 0 {
			return c
		}
		return cmp.Compare(e, slot)
	})
	return p.local + i, ok
}

// run returns the slots of owner o, the ids of the owners stored in marks.
// Past the first owner's, whose length is kept, a run is found by a binary
// search for its start, then by looking at its first few slots, since a
// run is usually short, before a binary search for its end.
func (p *posting) run(o uint32, marks []mark) []uint32 {
	if o == localOwner {
		return p.slots[:p.local]
	}
	s := p.slots[p.local:]
	if len(s) > 0 && marks[s[0]].owner < o {
		s = s[ownedFrom(s, o, marks):]
	}
	const look = 4
	for i := range s {
		switch {
		case marks[s[i]].owner != o:
			return s[:i]
		case i == look:
			return s[:i+ownedFrom(s[i:], o+1, marks)]
		}
	}
	return s
}

// ownedFrom returns the first i with an owner of s[i] at or above o.
func ownedFrom(s []uint32, o uint32, marks []mark) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if marks[s[m]].owner < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insert adds a slot that the caller knows is absent.
func (p *posting) insert(slot uint32, marks []mark) {
	i, _ := p.find(slot, marks)
	p.slots = slices.Insert(p.slots, i, slot)
	if marks[slot].owner == localOwner {
		p.local++
	}
	if p.bits != nil {
		w := int(slot >> 6)
		if w >= len(p.bits) {
			p.bits = append(p.bits, make([]uint64, w+1-len(p.bits))...)
		}
		p.bits[w] |= 1 << (slot & 63)
	}
}

// remove drops a slot that the caller knows is present.
func (p *posting) remove(slot uint32, marks []mark) {
	if i, ok := p.find(slot, marks); ok {
		p.slots = slices.Delete(p.slots, i, i+1)
		if marks[slot].owner == localOwner {
			p.local--
		}
	}
	if p.bits != nil {
		p.bits[slot>>6] &^= 1 << (slot & 63)
	}
	if len(p.slots) == 0 {
		p.slots = nil // let an emptied hot posting's array go
	}
}

// tune builds or drops the bitmap after a change; want is the size from
// which a posting has one (see bitmapFloor).
func (p *posting) tune(want int) {
	switch {
	case p.bits == nil && len(p.slots) >= want:
		p.bits = make([]uint64, slices.Max(p.slots)/64+1)
		for _, s := range p.slots {
			p.bits[s>>6] |= 1 << (s & 63)
		}
	case p.bits != nil && len(p.slots) < want/2:
		p.bits = nil
	}
}
