package matcher

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	with := func(f func(*Config)) Config {
		c := DefaultConfig()
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		fields []string // of the *ConfigErrors, in order
		msg    string
	}{
		{name: "default", cfg: DefaultConfig()},
		{name: "all on one factor", cfg: with(func(c *Config) { c.Weights = Weights{Directory: 1} })},
		{name: "threshold bounds", cfg: with(func(c *Config) { c.Threshold = 1 })},
		{name: "decimal rounding within tolerance", cfg: with(func(c *Config) {
			c.Weights = Weights{Directory: 0.1, File: 0.2, Tech: 0.3, Freshness: 0.3, Load: 0.1}
		})},
		{
			name:   "sum above 1",
			cfg:    with(func(c *Config) { c.Weights.Directory = 0.40 }),
			fields: []string{"weights"},
			msg:    "matcher weights sum to 1.10, not 1: lower some of directory=0.40, file=0.25, tech=0.20, freshness=0.15, load=0.10",
		},
		{
			name:   "sum below 1",
			cfg:    with(func(c *Config) { c.Weights.Load = 0 }),
			fields: []string{"weights"},
			msg:    "matcher weights sum to 0.90, not 1: raise some of directory=0.30, file=0.25, tech=0.20, freshness=0.15, load=0.00",
		},
		{
			name:   "sum just off 1",
			cfg:    with(func(c *Config) { c.Weights.Load = 0.1000001 }),
			fields: []string{"weights"},
			msg:    "matcher weights sum to 1.0000001, not 1: lower some of directory=0.30, file=0.25, tech=0.20, freshness=0.15, load=0.1000001",
		},
		{
			name:   "negative weight",
			cfg:    with(func(c *Config) { c.Weights.File = -0.1; c.Weights.Directory = 0.65 }),
			fields: []string{"weights.file"},
			msg:    "matcher weights.file is -0.10: weights must be finite and non-negative; set it to 0 to ignore the factor",
		},
		{
			name:   "NaN and Inf weights",
			cfg:    with(func(c *Config) { c.Weights.Tech = math.NaN(); c.Weights.Load = math.Inf(1) }),
			fields: []string{"weights.tech", "weights.load"},
		},
		{
			name:   "threshold above 1",
			cfg:    with(func(c *Config) { c.Threshold = 1.5 }),
			fields: []string{"threshold"},
			msg:    "matcher threshold is 1.50: set it within [0, 1]; 0.6 is the default",
		},
		{name: "negative threshold", cfg: with(func(c *Config) { c.Threshold = -0.1 }), fields: []string{"threshold"}},
		{name: "NaN threshold", cfg: with(func(c *Config) { c.Threshold = math.NaN() }), fields: []string{"threshold"}},
		{
			name:   "zero idle timeout",
			cfg:    with(func(c *Config) { c.IdleTimeout = 0 }),
			fields: []string{"idle_timeout"},
			msg:    "matcher idle_timeout is 0s: set it above 0, e.g. 30m, the idle time at which freshness reaches 0",
		},
		{name: "negative idle timeout", cfg: with(func(c *Config) { c.IdleTimeout = -time.Second }), fields: []string{"idle_timeout"}},
		{
			name:   "top k 0",
			cfg:    with(func(c *Config) { c.TopK = 0 }),
			fields: []string{"top_k"},
			msg:    "matcher top_k is 0: set it to 1 or more; 5 is the default",
		},
		{name: "zero config", cfg: Config{}, fields: []string{"weights", "idle_timeout", "top_k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want an error wrapping ErrInvalidConfig", err)
			}
			var fields []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *ConfigError
				if !errors.As(e, &ce) {
					t.Fatalf("got %T (%v), want *ConfigError", e, e)
				}
				fields = append(fields, ce.Field)
			}
			if len(fields) != len(tc.fields) {
				t.Fatalf("fields: got %q, want %q", fields, tc.fields)
			}
			for i := range fields {
				if fields[i] != tc.fields[i] {
					t.Fatalf("fields: got %q, want %q", fields, tc.fields)
				}
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message:\n got %q\nwant %q", err.Error(), tc.msg)
			}
		})
	}
}

func TestWeightsString(t *testing.T) {
	w := Weights{Directory: 0.001, File: 0.999}
	if got, want := w.String(), "directory=0.001, file=0.999, tech=0.00, freshness=0.00, load=0.00"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
