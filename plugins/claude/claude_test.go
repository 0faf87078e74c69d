package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

const key = "test-key"

// workspace makes a small repository: two packages of Go files and a
// secret.
func workspace(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cart/cart.go":       "package cart\n\n// Total sums the cart.\nfunc Total(xs []int) int { return 0 }\n",
		"cart/discount.go":   "package cart\n\n// Discount takes 10% off.\nfunc Discount(x int) int { return x * 9 / 10 }\n",
		"pricing/pricing.go": "package pricing\n\n// Price is a price in cents.\ntype Price int\n",
		".env":               "SECRET=hunter2-do-not-leak\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func newAgent(t *testing.T, api *fakeapi.Server, root string) *claude.Agent {
	t.Helper()
	bin := claudetest.Binary(t)
	return claude.New(claude.Settings{Command: bin, BaseURL: api.URL, APIKeyEnv: "HEARTH_TEST_KEY", APIKey: key, Root: root, MaxTurns: 10})
}

func TestTaskAnsweredAndResumed(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	root := workspace(t)
	h := sdktest.New(t, newAgent(t, api, root), conformance.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t1 := sdk.Task{ID: "t1", Session: h.Session, Prompt: "What does cart/cart.go do?"}
	res, err := h.Agent.Run(ctx, t1, h.Recorder.For(t1.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "cart/cart.go") {
		t.Errorf("output %q does not answer from cart/cart.go", res.Output)
	}
	for _, m := range []string{"input_tokens", "cached_input_tokens", "output_tokens", "turns", "tool_calls"} {
		if _, ok := res.Metrics[m]; !ok {
			t.Errorf("metrics %v lack %s", res.Metrics, m)
		}
	}
	if res.Cost <= 0 {
		t.Errorf("cost %v, want Claude Code's reported cost", res.Cost)
	}
	uses := h.Recorder.ToolUses(t1.ID)
	if len(uses) != 1 || uses[0].Tool != "Read" || len(uses[0].Paths) != 1 || uses[0].Paths[0] != filepath.Join(root, "cart/cart.go") {
		t.Errorf("tool uses %+v, want one Read of cart/cart.go", uses)
	}

	n := len(api.Requests())
	t2 := sdk.Task{ID: "t2", Session: h.Session, Prompt: "And cart/cart.go with cart/discount.go?"}
	res2, err := h.Agent.Run(ctx, t2, h.Recorder.For(t2.ID))
	if err != nil {
		t.Fatal(err)
	}
	uses2 := h.Recorder.ToolUses(t2.ID)
	if len(uses2) != 1 || uses2[0].Paths[0] != filepath.Join(root, "cart/discount.go") {
		t.Errorf("second task's tool uses %+v, want only a Read of cart/discount.go (cart.go is in the conversation)", uses2)
	}
	reqs := api.Requests()[n:]
	if len(reqs) == 0 || !strings.Contains(reqs[0].String(), "What does cart/cart.go do?") {
		t.Errorf("the second task's first request does not carry the first task's conversation")
	}
	t.Logf("task 1: %v, cost %.4f; task 2: %v, cost %.4f", res.Metrics, res.Cost, res2.Metrics, res2.Cost)
}

// TestForkWhileBusy: a task that comes while another holds the session's
// conversation forks it (--fork-session): it sees what the session's
// earlier tasks did, and what it does stays in its fork.
func TestForkWhileBusy(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	h := sdktest.New(t, newAgent(t, api, workspace(t)), conformance.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runTask := func(ctx context.Context, id, prompt string) (sdk.Result, error) {
		task := sdk.Task{ID: id, Session: h.Session, Prompt: prompt}
		return h.Agent.Run(ctx, task, h.Recorder.For(task.ID))
	}
	if _, err := runTask(ctx, "t1", "What does cart/cart.go do?"); err != nil {
		t.Fatal(err)
	}
	main := api.Requests()[0].Header.Get("X-Claude-Code-Session-Id")

	// t2 holds the conversation, hanging in its model call.
	hctx, hcancel := context.WithCancel(ctx)
	busy := make(chan error, 1)
	go func() { _, err := runTask(hctx, "t2", "hang"); busy <- err }()
	<-api.Hung

	n := len(api.Requests())
	res, err := runTask(ctx, "t3", "And pricing/pricing.go, beside cart/cart.go?")
	if err != nil {
		t.Fatal(err)
	}
	fork := api.Requests()[n]
	if id := fork.Header.Get("X-Claude-Code-Session-Id"); id == main || id == "" {
		t.Errorf("the forked task ran as session %q, want a fork of %s", id, main)
	}
	if !strings.Contains(fork.String(), "What does cart/cart.go do?") || res.Metrics["tool_calls"] != 1 || len(res.Artifact.PotentialGotchas) != 0 {
		t.Errorf("the fork does not carry the session's conversation (%v tool calls, want 1: pricing.go alone), or its hooks were refused: %q", res.Metrics["tool_calls"], res.Artifact.PotentialGotchas)
	}
	if uses := h.Recorder.ToolUses("t3"); len(uses) != 1 || uses[0].Outcome != sdk.OutcomeOK {
		t.Errorf("the fork's tool uses %+v, want its read of pricing.go reported", uses)
	}
	hcancel()
	<-busy
	<-api.Released

	// The session goes on with its own conversation, not the fork's, nor
	// the turn t2 left half done, from task to task; a task sent while t2
	// winds down waits for it rather than fork.
	n = len(api.Requests())
	if _, err := runTask(ctx, "t4", "Once more, cart/cart.go?"); err != nil {
		t.Fatal(err)
	}
	next := api.Requests()[n]
	if !strings.Contains(next.String(), "What does cart/cart.go do?") || strings.Contains(next.String(), "pricing/pricing.go") {
		t.Errorf("the session's next task does not hold its own conversation alone (fork's turns in it: %v)", strings.Contains(next.String(), "pricing/pricing.go"))
	}
	n = len(api.Requests())
	if _, err := runTask(ctx, "t5", "And last, cart/cart.go?"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(api.Requests()[n].String(), "Once more, cart/cart.go?") {
		t.Error("the task after does not continue the conversation t4 added to")
	}
}

// TestEnvironmentExplicit: claude gets the environment the agent names
// and nothing else of the plugin's: a variable of the plugin's does not
// reach a Bash command, HOME and CLAUDE_CONFIG_DIR are the agent's state
// directory (the user's own Claude Code settings are not read or
// changed), and the key reaches claude as ANTHROPIC_API_KEY, not under
// the variable the config names.
func TestEnvironmentExplicit(t *testing.T) {
	t.Setenv("HEARTH_TEST_CANARY", "plugin-only-5521")
	t.Setenv("HEARTH_TEST_KEY", key)
	api := fakeapi.New(key)
	defer api.Close()
	a := claude.New(claude.Settings{Command: claudetest.Binary(t), BaseURL: api.URL, APIKeyEnv: "HEARTH_TEST_KEY", APIKey: key, Root: workspace(t), MaxTurns: 10, AllowedTools: []string{"Bash"}})
	h := sdktest.New(t, a, conformance.Options{})
	task := sdk.Task{ID: "t1", Session: h.Session, Prompt: "shell:env"}
	if _, err := h.Agent.Run(context.Background(), task, h.Recorder.For(task.ID)); err != nil {
		t.Fatal(err)
	}
	var env string
	for _, r := range api.Requests() {
		if s := r.String(); strings.Contains(s, "CLAUDE_CONFIG_DIR=") {
			env = s
		}
	}
	if env == "" {
		t.Fatal("the Bash command's environment did not reach the model")
	}
	if strings.Contains(env, "plugin-only-5521") || strings.Contains(env, "HEARTH_TEST_KEY") {
		t.Error("a variable of the plugin's reached claude's environment")
	}
	for _, v := range []string{"HOME", "CLAUDE_CONFIG_DIR"} {
		m := regexp.MustCompile(v + `=(\S+?)(\\n|\s)`).FindStringSubmatch(env)
		if m == nil || !strings.Contains(m[1], "hearth-claude-") {
			t.Errorf("%s is %q, want the agent's state directory", v, m)
		}
	}
}
