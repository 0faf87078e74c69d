package inventory

import "errors"

// ErrShort is returned when a reservation asks for more than is
// available.
var ErrShort = errors.New("not enough stock")

// Reserve holds n units of sku for a checkout, so that two carts cannot
// both buy the last unit. Release gives them back; a completed checkout
// calls Ship instead.
func (s *Stock) Reserve(sku string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onHand[sku]-s.held[sku] < n {
		return ErrShort
	}
	s.held[sku] += n
	return nil
}

// Release gives back n held units of sku.
func (s *Stock) Release(sku string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[sku] -= n
}

// Ship takes n held units of sku off the shelves.
func (s *Stock) Ship(sku string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[sku] -= n
	s.onHand[sku] -= n
}
