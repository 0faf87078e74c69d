// Package testenv is what tests share about the machine they run on: a
// test that needs something this machine lacks skips with a message that
// says what and how to get it, except in CI (CI=true), where the missing
// part is a failure, because .ci/run installs everything the suite needs.
package testenv

import (
	"os"
	"testing"
)

// Missing skips t, or fails it when CI=true, saying what is missing and
// how to get it.
func Missing(t testing.TB, what, fix string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is a failure: .ci/run should have provided it; %s)", what, fix)
	}
	t.Skipf("skipping: %s; %s", what, fix)
}
