package store

import (
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// TestToolUseRecord: the store keeps a tool use's kind, and its outcome
// in the numbering records had before OutcomeUnset became the zero value.
func TestToolUseRecord(t *testing.T) {
	t.Parallel()
	for _, o := range []sdk.ToolOutcome{sdk.OutcomeOK, sdk.OutcomeError, sdk.OutcomeDenied, sdk.OutcomeUnset} {
		u := sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"a.go"}, Outcome: o}
		m := &storepb.Event{}
		fillEvent(m, &hearth.Event{Kind: hearth.EventToolUsed, ToolUse: &u})
		got := eventFromPB(m).ToolUse
		if got == nil || got.Kind != sdk.KindRead || got.Outcome != o {
			t.Errorf("outcome %s: read back %+v", o, got)
		}
	}
	// A record written before kinds and OutcomeUnset: outcome 0 was OK.
	old := eventFromPB(&storepb.Event{Kind: "tool.used", ToolUse: &storepb.ToolUse{Tool: "LS", Paths: []string{"docs"}}}).ToolUse
	if old.Outcome != sdk.OutcomeOK || old.Kind != "" {
		t.Errorf("an old record reads as %+v, want an OK use with no kind", old)
	}
}
