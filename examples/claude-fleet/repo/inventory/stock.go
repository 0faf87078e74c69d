// Package inventory tracks what the shop has on its shelves, and what is
// promised to carts that are checking out.
package inventory

import "sync"

// Stock counts units on hand by SKU. It is safe for concurrent use.
type Stock struct {
	mu     sync.Mutex
	onHand map[string]int
	held   map[string]int
}

// NewStock returns an empty stock.
func NewStock() *Stock {
	return &Stock{onHand: map[string]int{}, held: map[string]int{}}
}

// Receive adds n units of sku to the shelves.
func (s *Stock) Receive(sku string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onHand[sku] += n
}

// Available is what is on hand and not held for a checkout.
func (s *Stock) Available(sku string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.onHand[sku] - s.held[sku]
}
