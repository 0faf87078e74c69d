// Package protoconv holds what hearth's three protobuf codecs of one
// vocabulary share: the agent protocol's (sdk/plugin/wire.go), the
// daemon API's (host/internal/wire) and the store's records
// (host/store/convert.go).
//
// They share the encodings that must agree across them: a time as Unix
// nanoseconds with 0 for none, and a tool use's outcome as the daemon
// API and the store number it. The messages themselves stay three: the
// agent protocol is versioned for plugins in any language
// (docs/protocol.md), the store's records are versioned on disk and
// packed for it (a decision's factors as bits), and the API's messages
// follow the vocabulary for clients. Sharing one message between any two
// would tie a disk format to a wire format, so each codec keeps its own
// and calls these for what they have in common.
package protoconv

import (
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// UnixNano is t in nanoseconds since the epoch, 0 for the zero time: a
// message's unset time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time is the inverse of UnixNano, in the local time zone.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// OutcomeCode encodes a tool use's outcome as the daemon API and the
// store number it: 0 ok, 1 error, 2 denied, the numbering both had
// before sdk.OutcomeUnset became the zero value, so that clients,
// daemons and records of either age agree. An unset outcome, which no
// report should carry, is 3 and never reads as ok. (The agent protocol
// has an enum of its own.)
func OutcomeCode(o sdk.ToolOutcome) int32 {
	switch o {
	case sdk.OutcomeOK:
		return 0
	case sdk.OutcomeError:
		return 1
	case sdk.OutcomeDenied:
		return 2
	}
	return 3
}

// Outcome is the inverse of OutcomeCode.
func Outcome(n int32) sdk.ToolOutcome {
	switch n {
	case 0:
		return sdk.OutcomeOK
	case 1:
		return sdk.OutcomeError
	case 2:
		return sdk.OutcomeDenied
	}
	return sdk.OutcomeUnset
}

// LegacyFactors names the placement factors that the daemon API's and
// the store's Candidate messages carry as fields of their own, in the
// order of those fields: the seed's five, from before a candidate's
// factors were a list. Both codecs still write those fields, for
// clients and records of that age, and read them only from a message
// without its list. The list is closed: a factor added since is in the
// list alone.
var LegacyFactors = [...]string{"directory", "file", "tech", "freshness", "load"}
