package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigValidateClaude: `hearth config validate` says when a
// claude_code agent's claude is missing, too old, or too old to run
// confined, and how to fix it.
func TestConfigValidateClaude(t *testing.T) {
	t.Setenv("HEARTH_TEST_CLAUDE_KEY", "k")
	fake := func(version string) string {
		p := filepath.Join(t.TempDir(), "claude")
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+" (Claude Code)'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, command, confinement string
		code                       int
		says                       string
	}{
		{"current", fake("2.1.332"), "auto", 0, "is valid"},
		{"missing", "/nonexistent/claude", "auto", 2, "Claude Code not found"},
		{"too old", fake("2.0.5"), "auto", 2, "is Claude Code 2.0.5; hearth needs 2.1.197 or later"},
		{"too old to confine", fake("2.1.250"), "auto", 2, "cannot run confined"},
		{"too old to confine, unconfined", fake("2.1.250"), "off", 0, "is valid"},
		{"not Claude Code", "/bin/false", "auto", 2, "--version failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, `agent "coder" {
  bundled     = "claude"
  confinement = "`+c.confinement+`"
  claude_code {
    command     = "`+c.command+`"
    api_key_env = "HEARTH_TEST_CLAUDE_KEY"
  }
}
`)
			code, out, errOut := run(t, nil, "config", "validate", cfg)
			if code != c.code || !strings.Contains(out+errOut, c.says) {
				t.Errorf("exit %d, want %d saying %q:\n%s%s", code, c.code, c.says, out, errOut)
			}
		})
	}
}
