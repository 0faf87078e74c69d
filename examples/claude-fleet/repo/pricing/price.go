// Package pricing says what things cost: prices in cents, and the tax on
// them.
package pricing

import "fmt"

// Price is an amount of money in cents: whole numbers, so that sums are
// exact.
type Price int64

// String prints the price in dollars, as "$12.34".
func (p Price) String() string {
	sign := ""
	if p < 0 {
		sign, p = "-", -p
	}
	return fmt.Sprintf("%s$%d.%02d", sign, p/100, p%100)
}

// WithTax returns p with tax at rate (in basis points) added, rounded
// half up to the cent by Round.
func (p Price) WithTax(rateBP int64) Price {
	return p + Round(int64(p)*rateBP, 10000)
}
