package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
)

// The tests of what an operator sees of a cluster (docs/cluster.md,
// "Seeing the cluster"), apart from the cluster tests that share
// cluster_test.go.

// TestConfigHashComparesContent: the same config file in two directories
// (its command, workspace and read_paths relative to it, so that loading
// resolves them to different absolute paths) hashes alike; the same
// paths with another guard, another relative path, or the same relative
// path written as an absolute one elsewhere, hash apart (issue 26: the
// note "the hosts' configs differ" fired for identical configs in
// different directories).
func TestConfigHashComparesContent(t *testing.T) {
	const agent = "agent \"a\" {\n  command = [\"./bin/agent\", \"--flag\"]\n  workspace = \".\"\n  read_paths = [\"docs\"]\n}\n"
	const guard = "guard \"no-rm\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Bash'\"\n  action = \"deny\"\n  message = \"no\"\n}\n"
	load := func(dir, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(writeConfigIn(t, dir, body), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return configHash(cfg)
	}
	root := t.TempDir()
	a := load(filepath.Join(root, "a"), agent+guard)
	b := load(filepath.Join(root, "b", "deeper"), agent+guard)
	if a != b {
		t.Errorf("the same config in two directories hashes apart: %s %s", a, b)
	}
	for name, body := range map[string]string{
		"another guard":         agent + "guard \"no-rm\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Write'\"\n  action = \"deny\"\n  message = \"no\"\n}\n",
		"another relative path": "agent \"a\" {\n  command = [\"./bin/agent2\", \"--flag\"]\n  workspace = \".\"\n  read_paths = [\"docs\"]\n}\n" + guard,
		"an absolute workspace": "agent \"a\" {\n  command = [\"./bin/agent\", \"--flag\"]\n  workspace = \"/srv\"\n  read_paths = [\"docs\"]\n}\n" + guard,
		"no guard":              agent,
	} {
		if c := load(filepath.Join(root, "c-"+name), body); c == a {
			t.Errorf("%s: hashes as the first config does (%s)", name, a)
		}
	}
}
