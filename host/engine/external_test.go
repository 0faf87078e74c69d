package engine

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/sdk"
)

// externalHost is a host with one external claude-code agent, on dir.
func externalHost(t *testing.T, dir string, tune ...func(*config.Agent)) *Engine {
	t.Helper()
	a := config.DefaultExternal("cc", config.ExternalClaudeCode)
	for _, f := range tune {
		f(a)
	}
	h, err := New(Options{
		Config: &config.Config{DataDir: dir, Agents: []*config.Agent{a}, Matcher: config.DefaultMatcher(),
			Hooks: config.Hooks{Agent: "cc", WhenUnreachable: config.HookAllow}},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func read(path string) sdk.ToolUse {
	return sdk.ToolUse{Tool: "Read", Paths: []string{path}, Outcome: sdk.OutcomeOK}
}

// TestReloadKeepsExternalSessions: a reload that changes an external
// agent has no process to replace; its sessions stay placeable.
func TestReloadKeepsExternalSessions(t *testing.T) {
	t.Parallel()
	h := externalHost(t, t.TempDir())
	ctx := context.Background()
	ref := hearth.ExternalRef{Session: "s1"}
	if err := h.ReportExternalToolUse(ctx, ref, read("/w/a/b.go")); err != nil {
		t.Fatal(err)
	}
	if err := h.ExternalTurn(ctx, ref, false); err != nil {
		t.Fatal(err)
	}
	cfg := *h.Config()
	a := *cfg.Agents[0]
	a.Pool.IdleTimeout = 2 * pool.DefaultIdleTimeout
	a.Workspace = "/elsewhere"
	cfg.Agents = []*config.Agent{&a}
	rep, err := h.Reload(&cfg)
	if err != nil || len(rep.Changed) != 1 {
		t.Fatalf("reload: %+v, %v", rep, err)
	}
	if d, err := h.Place(context.Background(), "cc", sdk.Hints{Files: []string{"/w/a/b.go"}}); err != nil || d.Action != hearth.ActionResume || d.Session != "s1" {
		t.Errorf("after the reload: %+v, %v", d, err)
	}
}
