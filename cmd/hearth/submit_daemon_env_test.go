package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/fakeapi"
)

// TestSubmitThroughADaemonKeepsItsEnvironmentToItself: the daemon runs
// tasks with the model key of its own environment; a submit through it
// from a shell without the key is not warned that the key is missing
// (the operator's walkthrough saw that warning on every command while
// the tasks succeeded). What runs tasks with this shell's environment
// (config validate checks for it) still says so.
func TestSubmitThroughADaemonKeepsItsEnvironmentToItself(t *testing.T) {
	t.Parallel()
	f := fakeapi.New("k-daemon")
	f.MinCacheTokens = 0
	defer f.Close()
	root, _ := filepath.Abs("../..")
	cfg := filepath.Join(t.TempDir(), "ask.hcl")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `agent "ask" {
  bundled   = "model"
  workspace = %q
  model {
    provider    = "openai"
    model       = "qwen2.5-coder:7b"
    base_url    = %q
    api_key_env = "HEARTH_TEST_MODEL_KEY"
  }
}
`, root, f.URL+"/v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	shell := exampleEnv(t)
	shell["HEARTH_CONFIG"] = cfg
	daemon := map[string]string{"HEARTH_TEST_MODEL_KEY": "k-daemon"}
	for k, v := range shell {
		daemon[k] = v
	}
	args := []string{"submit", "ask", "What does matcher/score.go compute?", "--dir", "matcher", "--json"}

	if _, _, stderr := run(t, shell, "config", "validate", cfg); !strings.Contains(stderr, "API key not set") {
		t.Fatalf("config validate in a shell without the key does not warn of it:\n%s", stderr)
	}
	startDaemon(t, daemon)
	code, out, stderr := run(t, shell, args...)
	var o hearth.Outcome
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || o.Result.Output == "" {
		t.Fatalf("submit through the daemon: exit %d\n%s%s", code, out, stderr)
	}
	if strings.Contains(stderr, "API key not set") {
		t.Errorf("submit through a daemon that has the key warns that this shell lacks it:\n%s", stderr)
	}
}
