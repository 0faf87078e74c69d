package main

import (
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// TestSubmitPrintsAttempts: an outcome placed again after a host left
// says, in the text submit prints, where each attempt went and what came
// of it, so that one completion is visible without --json.
func TestSubmitPrintsAttempts(t *testing.T) {
	var buf strings.Builder
	m := &Main{Stdout: &buf}
	m.printOutcome(&hearth.Outcome{TaskID: "task-1", Session: "workshop-2", Decision: hearth.Decision{
		Reason: "spawned workshop-2: no session to reuse",
		Attempts: []hearth.Attempt{
			{Host: "b", Session: "workshop-1", Result: "left the cluster"},
			{Host: "a", Session: "workshop-2", Result: "completed"},
		},
	}, Result: sdk.Result{Output: "done", Cost: 0.12}})
	for _, want := range []string{
		"\n  attempt 1: host b, workshop-1: left the cluster\n",
		"\n  attempt 2: host a, workshop-2: completed\n",
		"\n  cost 0.12\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("submit's text lacks %q:\n%s", want, buf.String())
		}
	}
}
