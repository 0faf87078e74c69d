package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// TestExternalSessionsArePointedAtNotRun: through the engine, an external
// agent's session is what Place points at, and Submit refuses the agent.
// (Placement itself, and that Place and Execute agree, is tested in
// host/pool.)
func TestExternalSessionsArePointedAtNotRun(t *testing.T) {
	t.Parallel()
	ext := config.DefaultExternal("claude-code", hearth.ExternalClaudeCode)
	ext.Workspace = "/src/app"
	h := newTestHost(t, ext)
	ctx := context.Background()
	ref := hearth.ExternalRef{Agent: "claude-code", Session: "cc-1", Workspace: "/src/app"}
	if err := h.ReportExternalToolUse(ctx, ref, sdk.ToolUse{Tool: "Read", Paths: []string{"/src/app/billing/ledger.go"}, Outcome: sdk.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := h.ExternalTurn(ctx, ref, false); err != nil {
		t.Fatal(err)
	}
	d, err := h.Place(ctx, "claude-code", sdk.Hints{Files: []string{"billing/ledger.go"}, Directories: []string{"billing"}})
	if err != nil || d.Action != hearth.ActionResume || d.Session != "cc-1" {
		t.Fatalf("Place: %+v, %v", d, err)
	}
	if _, err := h.Submit(ctx, hearth.Task{Agent: "claude-code", Prompt: "x"}); !errors.Is(err, hearth.ErrExternalAgent) {
		t.Errorf("Submit to an external agent: %v, want ErrExternalAgent", err)
	}
}
