package hearth_test

import (
	"testing"

	"github.com/hearth-dev/hearth"
)

func TestEventFilterMatch(t *testing.T) {
	tool := hearth.Event{Kind: hearth.EventToolUsed, Session: "s1"}
	decision := hearth.Event{Kind: hearth.EventDecision, Session: "s1", Run: "r1"}
	other := hearth.Event{Kind: hearth.EventTaskSucceeded, Session: "s2"}
	for _, tc := range []struct {
		name  string
		f     hearth.EventFilter
		want  []hearth.Event
		tools bool
	}{
		{"empty: all but tool uses", hearth.EventFilter{}, []hearth.Event{decision, other}, false},
		{"tool uses added", hearth.EventFilter{ToolUses: true}, []hearth.Event{tool, decision, other}, true},
		{"tool uses by kind", hearth.EventFilter{Kinds: []hearth.EventKind{hearth.EventToolUsed}}, []hearth.Event{tool}, true},
		{"kinds", hearth.EventFilter{Kinds: []hearth.EventKind{hearth.EventDecision}}, []hearth.Event{decision}, false},
		{"kinds and tool uses", hearth.EventFilter{Kinds: []hearth.EventKind{hearth.EventDecision}, ToolUses: true}, []hearth.Event{tool, decision}, true},
		{"session", hearth.EventFilter{Session: "s1", ToolUses: true}, []hearth.Event{tool, decision}, true},
		{"run", hearth.EventFilter{Run: "r1", ToolUses: true}, []hearth.Event{decision}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []hearth.Event
			for _, e := range []hearth.Event{tool, decision, other} {
				if tc.f.Match(e) {
					got = append(got, e)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i].Kind != tc.want[i].Kind {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
			if tc.f.WantsToolUses() != tc.tools {
				t.Errorf("WantsToolUses = %v, want %v", !tc.tools, tc.tools)
			}
		})
	}
}
