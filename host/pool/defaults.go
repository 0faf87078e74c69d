package pool

import (
	"cmp"
	"time"
)

// Defaults of a Spec: what WithDefaults puts in place of a setting the
// config file left out. They live here, with the part they configure;
// package host/config decodes the file into plain values and leaves an
// unset setting zero (it does not import the pool).
const (
	// DefaultMaxSessions bounds a plugin agent's sessions with a process.
	DefaultMaxSessions = 4
	// DefaultMaxExternalSessions bounds an external agent's live
	// sessions: beyond it, the least recently active one goes dormant.
	// Reports from anyone who can reach the hooks must not grow the host
	// without bound.
	DefaultMaxExternalSessions = 16
	// DefaultIdleTimeout is how long a live session may run nothing
	// before it is retired; the matcher's freshness reaches 0 there too.
	DefaultIdleTimeout = 30 * time.Minute
	// DefaultMaxDormant bounds the retired sessions kept for
	// rehydration.
	DefaultMaxDormant = 64
	// DefaultMaxFiles, DefaultMaxDirectories and DefaultMaxTechnologies
	// bound a session's fingerprint (least recently used evicted first).
	DefaultMaxFiles        = 1000
	DefaultMaxDirectories  = 256
	DefaultMaxTechnologies = 32
)

// WithDefaults returns s with each pool setting left zero replaced by
// its default: MaxSessions (DefaultMaxExternalSessions for an external
// agent), IdleTimeout, MaxDormant, the Fingerprint limits, and the
// Matcher's IdleTimeout (the pool's: freshness reaches 0 when a session
// is retired). MaxDormant is the one setting whose zero is a value a
// person may want ("keep none"): there a negative MaxDormant means 0,
// as the store's negative MinFreeSpace means "off". Apply it once, to
// values as the config file left them: its result's MaxDormant 0 means
// keep none.
func (s Spec) WithDefaults() Spec {
	if s.MaxSessions == 0 {
		s.MaxSessions = DefaultMaxSessions
		if s.External != "" {
			s.MaxSessions = DefaultMaxExternalSessions
		}
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	switch {
	case s.MaxDormant == 0:
		s.MaxDormant = DefaultMaxDormant
	case s.MaxDormant < 0:
		s.MaxDormant = 0
	}
	f := &s.Fingerprint
	f.MaxFiles = cmp.Or(f.MaxFiles, DefaultMaxFiles)
	f.MaxDirectories = cmp.Or(f.MaxDirectories, DefaultMaxDirectories)
	f.MaxTechnologies = cmp.Or(f.MaxTechnologies, DefaultMaxTechnologies)
	if s.Matcher.IdleTimeout == 0 {
		s.Matcher.IdleTimeout = s.IdleTimeout
	}
	return s
}
