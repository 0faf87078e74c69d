package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/sdk"
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
	api := fakeapi.New(key)
	defer api.Close()
	root := workspace(t)
	h := sdktest.New(t, newAgent(t, api, root), sdktest.Options{})
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
