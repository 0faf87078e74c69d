package claudetest

import (
	"os"
	"strings"
	"testing"
)

// TestCIInstallsTheVersion holds .ci/run's pinned Claude Code to Version.
func TestCIInstallsTheVersion(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "claude_version="+Version+"\n") {
		t.Errorf(".ci/run does not install Claude Code %s (claude_version=...): keep the two equal", Version)
	}
}
