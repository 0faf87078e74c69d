package cart

import "example.com/shop/pricing"

// Discount is a percentage taken off a cart's subtotal once it reaches a
// threshold.
type Discount struct {
	Percent   int
	Threshold pricing.Price
}

// Apply returns the subtotal less the discount, when the subtotal reaches
// the threshold; the discount is rounded down to the cent, so the shopper
// never pays a fraction of a cent more than the percentage says.
func (d Discount) Apply(subtotal pricing.Price) pricing.Price {
	if subtotal < d.Threshold || d.Percent <= 0 {
		return subtotal
	}
	off := subtotal * pricing.Price(d.Percent) / 100
	return subtotal - off
}
