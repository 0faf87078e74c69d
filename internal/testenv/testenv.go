// Package testenv is what tests share about the machine they run on: a
// test that needs something this machine lacks skips with a message that
// says what and how to get it, except in CI (CI=true), where the missing
// part is a failure, because .ci/run installs everything the suite needs.
package testenv

import (
	"os"
	"os/exec"
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

// Chromium finds the headless browser the dashboard's tests drive:
// $HEARTH_CHROMIUM, or Debian's chromium (.ci/run installs it). Without
// one t skips, except in CI, where it fails.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("HEARTH_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	Missing(t, "no chromium to test the dashboard in", "install Debian's chromium package (apt-get install chromium), or set HEARTH_CHROMIUM")
	return ""
}
