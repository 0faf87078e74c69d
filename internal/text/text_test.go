package text

import "testing"

func TestHelpers(t *testing.T) {
	if got := FirstLine("a\nb"); got != "a" {
		t.Errorf("FirstLine: got %q", got)
	}
	if got := OrDash(""); got != "-" {
		t.Errorf("OrDash: got %q", got)
	}
	if got := OrNone(nil); got != "none" {
		t.Errorf("OrNone(nil): got %q", got)
	}
	if got := OrNone([]string{"a", "b"}); got != "a, b" {
		t.Errorf("OrNone: got %q", got)
	}
	if got := Suggest("agnet", []string{"agent", "pipeline"}); got != ` (did you mean "agent"?)` {
		t.Errorf("Suggest: got %q", got)
	}
	if got := Suggest("zzzzzz", []string{"agent"}); got != "" {
		t.Errorf("Suggest of nothing close: got %q", got)
	}
}
