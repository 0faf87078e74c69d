// Package claudetest finds the real Claude Code CLI for tests: the
// version .ci/run installs with npm (Version), at the prefix it installs
// it into (Prefix), or the program HEARTH_TEST_CLAUDE names. A test that
// needs it and does not find it skips, saying how to install it, except
// in CI, where that is a failure (internal/testenv).
package claudetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// Version is the @anthropic-ai/claude-code version the tests run
// against; .ci/run installs the same one (a test holds the two equal).
const Version = "2.1.332"

// EnvBinary names a claude program to test instead of the pinned one.
const EnvBinary = "HEARTH_TEST_CLAUDE"

// Prefix is the npm prefix .ci/run installs Claude Code into:
// $HEARTH_CLAUDE_PREFIX, or ~/.cache/hearth/claude-code-VERSION.
func Prefix() string {
	if p := os.Getenv("HEARTH_CLAUDE_PREFIX"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "hearth", "claude-code-"+Version)
}

// Install is the command that installs the pinned version where Binary
// looks for it.
func Install() string {
	return "npm install --prefix " + Prefix() + " --no-audit --no-fund @anthropic-ai/claude-code@" + Version
}

// Binary returns the path of the claude program to test, or skips t (in
// CI: fails it) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s=%s: %v", EnvBinary, p, err)
		}
		return p
	}
	p := filepath.Join(Prefix(), "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "Claude Code "+Version+" is not installed at "+p, "install it with: "+Install()+" (or set "+EnvBinary+" to a claude program)")
	}
	return p
}

// Real returns the file the claude program resolves to (npm installs a
// link to the platform's native binary).
func Real(t testing.TB, bin string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Env is what a test's host passes a managed Claude Code agent so that it
// reaches a local fake: the claude program, the fake's URL and the key
// variable.
func Env(bin, baseURL, keyEnv string) map[string]string {
	return map[string]string{
		"HEARTH_CLAUDE_COMMAND":     bin,
		"HEARTH_CLAUDE_BASE_URL":    strings.TrimSuffix(baseURL, "/"),
		"HEARTH_CLAUDE_API_KEY_ENV": keyEnv,
	}
}
