package pricing

// Rates are the tax rates, in basis points, by region code.
var Rates = map[string]int64{
	"CA": 725,
	"NY": 400,
	"OR": 0,
}

// Round divides n by d, rounding half up: the rounding tax authorities
// expect on a receipt.
func Round(n, d int64) Price {
	if n < 0 {
		return -Round(-n, d)
	}
	return Price((n + d/2) / d)
}
