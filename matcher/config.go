package matcher

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// Weights weighs the five factors. Each weight is non-negative and the five
// sum to 1; see the package doc for how factors that do not apply are left
// out of the total.
type Weights struct {
	Directory float64 `json:"directory"`
	File      float64 `json:"file"`
	Tech      float64 `json:"tech"`
	Freshness float64 `json:"freshness"`
	Load      float64 `json:"load"`
}

// DefaultWeights returns the seed's weights: directory 0.30, file 0.25,
// tech 0.20, freshness 0.15, load 0.10.
func DefaultWeights() Weights {
	return Weights{Directory: 0.30, File: 0.25, Tech: 0.20, Freshness: 0.15, Load: 0.10}
}

// Config tunes the matcher. The zero Config is not valid; start from
// [DefaultConfig].
type Config struct {
	Weights Weights
	// Threshold is the total a session must score strictly above to be
	// reused, within [0, 1].
	Threshold float64
	// IdleTimeout is the idle time at which freshness reaches 0.
	IdleTimeout time.Duration
	// TopK is how many ranked candidates a Decision reports.
	TopK int
}

// DefaultConfig returns the default weights, threshold 0.6, an idle timeout of
// 30 minutes and a top 5.
func DefaultConfig() Config {
	return Config{
		Weights:     DefaultWeights(),
		Threshold:   0.6,
		IdleTimeout: 30 * time.Minute,
		TopK:        5,
	}
}

// ErrInvalidConfig is wrapped by every error [Config.Validate] returns, so
// callers can test for it with errors.Is.
var ErrInvalidConfig = errors.New("invalid matcher config")

// ConfigError reports one unusable Config field.
type ConfigError struct {
	Field   string // as written in the config file: "weights.file", "threshold", "idle_timeout", "top_k"
	Problem string // what is wrong, e.g. "is -0.10"
	Fix     string // what to do about it
}

func (e *ConfigError) Error() string {
	return "matcher " + e.Field + " " + e.Problem + ": " + e.Fix
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// weightSumTolerance absorbs the rounding of decimal weights such as
// 0.3+0.25+0.2+0.15+0.1, which is not exactly 1 in binary.
const weightSumTolerance = 1e-9

// Validate reports every unusable field, joined: a weight that is negative,
// NaN or infinite; weights that do not sum to 1 (within 1e-9); a threshold
// outside [0, 1]; an idle timeout that is not positive; a TopK below 1. Each
// error is a *ConfigError wrapping [ErrInvalidConfig].
func (c Config) Validate() error {
	var errs []error
	weightsOK := true
	for _, w := range c.Weights.named() {
		if w.v < 0 || math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			weightsOK = false
			errs = append(errs, &ConfigError{
				Field:   "weights." + w.name,
				Problem: "is " + formatFloat(w.v),
				Fix:     "weights must be finite and non-negative; set it to 0 to ignore the factor",
			})
		}
	}
	if weightsOK {
		var sum float64
		for _, w := range c.Weights.named() {
			sum += w.v
		}
		if math.Abs(sum-1) > weightSumTolerance {
			verb := "raise"
			if sum > 1 {
				verb = "lower"
			}
			errs = append(errs, &ConfigError{
				Field:   "weights",
				Problem: "sum to " + formatSum(sum) + ", not 1",
				Fix:     verb + " some of " + c.Weights.String(),
			})
		}
	}
	if !(c.Threshold >= 0 && c.Threshold <= 1) { // also catches NaN
		errs = append(errs, &ConfigError{
			Field:   "threshold",
			Problem: "is " + formatFloat(c.Threshold),
			Fix:     "set it within [0, 1]; 0.6 is the default",
		})
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, &ConfigError{
			Field:   "idle_timeout",
			Problem: "is " + c.IdleTimeout.String(),
			Fix:     "set it above 0, e.g. 30m, the idle time at which freshness reaches 0",
		})
	}
	if c.TopK < 1 {
		errs = append(errs, &ConfigError{
			Field:   "top_k",
			Problem: "is " + strconv.Itoa(c.TopK),
			Fix:     "set it to 1 or more; 5 is the default",
		})
	}
	return errors.Join(errs...)
}

type namedWeight struct {
	name string
	v    float64
}

func (w Weights) named() [len(factors)]namedWeight {
	var out [len(factors)]namedWeight
	for i, f := range factors {
		out[i] = namedWeight{f.name, *f.weight(&w)}
	}
	return out
}

// String renders the weights as "directory=0.30, file=0.25, ...". A
// factor whose default weight is 0 (one added after the seed's five) is
// left out while its weight is 0, so that configurations that do not use
// it read as they always did.
func (w Weights) String() string {
	var b []byte
	def := DefaultWeights().named()
	for i, nw := range w.named() {
		if nw.v == 0 && def[i].v == 0 {
			continue
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, nw.name...)
		b = append(b, '=')
		b = append(b, formatFloat(nw.v)...)
	}
	return string(b)
}

// formatFloat prints two decimals, as weights are written by hand, or all
// the digits the value needs when two would misstate it ("0.001", not
// "0.00").
func formatFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if p, _ := strconv.ParseFloat(s, 64); p != v && !math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return s
}

// formatSum prints a sum that failed the check so that it does not read as
// "1.00, not 1".
func formatSum(v float64) string {
	for prec := 2; ; prec++ {
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if p, _ := strconv.ParseFloat(s, 64); p != 1 || prec >= 17 {
			return s
		}
	}
}
