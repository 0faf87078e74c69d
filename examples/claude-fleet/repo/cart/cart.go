// Package cart holds a shopper's cart: its lines, and what they add up to.
package cart

import "example.com/shop/pricing"

// Line is one product in the cart, with how many of it.
type Line struct {
	SKU      string
	Quantity int
	Unit     pricing.Price
}

// Cart is the lines a shopper has picked, in the order picked.
type Cart struct {
	Lines []Line
}

// Add puts quantity more of sku in the cart, at unit price.
func (c *Cart) Add(sku string, quantity int, unit pricing.Price) {
	for i := range c.Lines {
		if c.Lines[i].SKU == sku {
			c.Lines[i].Quantity += quantity
			return
		}
	}
	c.Lines = append(c.Lines, Line{SKU: sku, Quantity: quantity, Unit: unit})
}

// Subtotal is the sum of the lines, before discounts and tax.
func (c *Cart) Subtotal() pricing.Price {
	var sum pricing.Price
	for _, l := range c.Lines {
		sum += l.Unit * pricing.Price(l.Quantity)
	}
	return sum
}
