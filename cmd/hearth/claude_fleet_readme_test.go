package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
)

// TestClaudeFleetReadme follows examples/claude-fleet/README.md with the
// real Claude Code CLI against the project's scripted model: on a copy
// of the example, `hearth run` answers the pipeline with a pool of
// managed Claude Code sessions; each question lands on the session that
// already read its package, and reads nothing again; the guarded file
// stays unread; the run shows tokens and cost per task.
func TestClaudeFleetReadme(t *testing.T) {
	bin := claudetest.Binary(t)
	readme, err := os.ReadFile("../../examples/claude-fleet/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"cp -r examples/claude-fleet /tmp/claude-fleet",
		"go run ./internal/fakeapi/cmd/hearth-fakeapi -listen 127.0.0.1:8089 -key fleet-key &",
		"export FLEET_API_KEY=fleet-key",
		"hearth run /tmp/claude-fleet",
		"hearth --config /tmp/claude-fleet runs show RUN --outputs",
	} {
		if !strings.Contains(string(readme), line+"\n") {
			t.Fatalf("the README no longer says %q: keep this test in step with it", line)
		}
	}

	// The README's copy, with the scripted model on a port of its own.
	const key = "fleet-key"
	api := fakeapi.New(key)
	defer api.Close()
	dir := filepath.Join(t.TempDir(), "claude-fleet")
	if out, err := exec.Command("cp", "-r", "../../examples/claude-fleet", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	cfgPath := filepath.Join(dir, "hearth.hcl")
	src, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `"http://127.0.0.1:8089"`, `"`+api.URL+`"`, 1)
	if cfg == string(src) {
		t.Fatal("the example's config no longer names http://127.0.0.1:8089")
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLEET_API_KEY", key)
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))

	env := exampleEnv(t)
	if code, out, stderr := run(t, env, "config", "validate", cfgPath); code != 0 {
		t.Fatalf("config validate: exit %d\n%s%s", code, out, stderr)
	}
	var res exampleRun
	exampleJSON(t, env, 0, &res, "run", dir, "--json")
	if res.Run.Status != "completed" || res.Run.Cost <= 0 {
		t.Fatalf("run %s: %s, cost %v; want completed at a cost", res.Run.ID, res.Run.Status, res.Run.Cost)
	}
	show := showRun(t, env, res.Run.ID)
	byPackage := map[string]map[string]bool{}
	actions := map[string]int{}
	for _, o := range show.Outputs {
		pkg, _, _ := strings.Cut(o.Task, "-")
		if byPackage[pkg] == nil {
			byPackage[pkg] = map[string]bool{}
		}
		byPackage[pkg][o.Session] = true
		actions[o.Action]++
		switch o.Task {
		case "cart-order", "inventory-race":
			if o.Metrics["tool_calls"] != 0 || o.Metrics["cached_input_tokens"] == 0 {
				t.Errorf("%s: %v tool calls, %v cached: want the package's files from the conversation, read from the cache", o.Task, o.Metrics["tool_calls"], o.Metrics["cached_input_tokens"])
			}
		case "cart-secret":
			if !strings.Contains(o.Output, `(hearth guard "no-secrets")`) {
				t.Errorf("cart-secret: output %q does not carry the guard's denial", o.Output)
			}
		}
	}
	if len(show.Outputs) != 8 || len(byPackage) != 3 || actions["spawned"] != 3 || actions["reused"] != 5 {
		t.Errorf("%d outputs, placements %v: want 8, three spawned (one a package) and five reused", len(show.Outputs), actions)
	}
	for pkg, sessions := range byPackage {
		if len(sessions) != 1 {
			t.Errorf("the %s tasks ran on %d sessions, want the one that read the package", pkg, len(sessions))
		}
	}
	for _, r := range api.Requests() {
		if strings.Contains(r.String(), "sk_live_fleet_example_never_read") {
			t.Fatal("the guarded .env reached the model")
		}
	}
	for _, note := range []string{"repo/pricing/NOTES.md", "repo/cart/NOTES.md"} {
		if _, err := os.Stat(filepath.Join(dir, note)); err != nil {
			t.Errorf("the edit did not land: %v", err)
		}
	}
	code, out, stderr := run(t, env, "--config", dir, "runs", "show", res.Run.ID, "--outputs")
	if code != 0 || strings.Count(out, "tokens: ") != 8 || strings.Count(out, "; cost 0.") != 8 {
		t.Errorf("runs show --outputs: exit %d, want each output with its tokens and cost:\n%s%s", code, out, stderr)
	}
}
