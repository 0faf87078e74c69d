package protoconv

import (
	"testing"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

func TestTimesRoundTrip(t *testing.T) {
	for _, at := range []time.Time{{}, time.Unix(0, 1), time.Date(2026, 11, 27, 7, 0, 0, 123, time.UTC), time.Unix(-1, 0)} {
		n := UnixNano(at)
		if got := Time(n); !got.Equal(at) || got.IsZero() != at.IsZero() {
			t.Errorf("%v -> %d -> %v", at, n, got)
		}
	}
	if UnixNano(time.Time{}) != 0 {
		t.Error("the zero time is not 0")
	}
}

func TestOutcomesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		o    sdk.ToolOutcome
		code int32
	}{{sdk.OutcomeOK, 0}, {sdk.OutcomeError, 1}, {sdk.OutcomeDenied, 2}, {sdk.OutcomeUnset, 3}} {
		if got := OutcomeCode(tc.o); got != tc.code {
			t.Errorf("OutcomeCode(%v) = %d, want %d", tc.o, got, tc.code)
		}
		if got := Outcome(tc.code); got != tc.o {
			t.Errorf("Outcome(%d) = %v, want %v", tc.code, got, tc.o)
		}
	}
	// A code from a newer writer is not read as ok.
	if Outcome(7) != sdk.OutcomeUnset {
		t.Error("an unknown code reads as an outcome")
	}
}
