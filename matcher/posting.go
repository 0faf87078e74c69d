package matcher

import "slices"

// posting is the set of sessions (by slot) that hold one file or directory.
// The slots are kept sorted: walking them then touches the per-slot arrays
// in address order, and a removal is a binary search. A posting that holds
// a large share of all sessions also keeps a bitmap, so that Decide can skip
// walking it and test membership in O(1) for the few sessions it scores.
type posting struct {
	slots []uint32
	bits  []uint64 // nil unless the posting is large; see tune
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

// insert adds a slot that the caller knows is absent.
func (p *posting) insert(slot uint32) {
	i, _ := slices.BinarySearch(p.slots, slot)
	p.slots = slices.Insert(p.slots, i, slot)
	if p.bits != nil {
		w := int(slot >> 6)
		if w >= len(p.bits) {
			p.bits = append(p.bits, make([]uint64, w+1-len(p.bits))...)
		}
		p.bits[w] |= 1 << (slot & 63)
	}
}

// remove drops a slot that the caller knows is present.
func (p *posting) remove(slot uint32) {
	if i, ok := slices.BinarySearch(p.slots, slot); ok {
		p.slots = slices.Delete(p.slots, i, i+1)
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
		p.bits = make([]uint64, p.slots[len(p.slots)-1]/64+1)
		for _, s := range p.slots {
			p.bits[s>>6] |= 1 << (s & 63)
		}
	case p.bits != nil && len(p.slots) < want/2:
		p.bits = nil
	}
}
