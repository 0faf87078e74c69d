package runs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hearth-dev/hearth"
)

// TestPlan: what the schedule reads of a pipeline's graph and settings.
func TestPlan(t *testing.T) {
	// outline -> draft -> edit, outline -> sources, draft -> summary;
	// edit also depends on sources.
	p := pipeline(2, task("outline"), task("draft", "outline"), task("sources", "outline"), task("edit", "draft", "sources"), task("summary", "draft"))
	p.Tasks[3].Attempts, p.Tasks[3].OnFailure = 5, hearth.OnFailurePause
	pl := newPlan("essay-1", p, "/etc/hearth.hcl")
	// names lists tasks idx (pl.names(nil) is every task).
	names := func(idx []int) string {
		if idx == nil {
			idx = []int{}
		}
		return fmt.Sprint(pl.names(idx))
	}
	for _, tc := range []struct {
		what, got, want string
	}{
		{"every task", fmt.Sprint(pl.names(nil)), "[outline draft sources edit summary]"},
		{"downstream of outline", names(pl.descendants(0)), "[draft sources edit summary]"},
		{"downstream of draft", names(pl.descendants(1)), "[edit summary]"},
		{"downstream of a leaf", names(pl.descendants(4)), "[]"},
		{"what edit depends on", names(pl.deps[3]), "[draft sources]"},
		{"what depends on outline", names(pl.kids[0]), "[draft sources]"},
		{"outline is an ancestor of edit", fmt.Sprint(pl.ancestor(0, 3)), "true"},
		{"a task is its own ancestor", fmt.Sprint(pl.ancestor(2, 2)), "true"},
		{"summary is no ancestor of edit", fmt.Sprint(pl.ancestor(4, 3)), "false"},
		{"edit is no ancestor of draft", fmt.Sprint(pl.ancestor(3, 1)), "false"},
		{"attempts: the pipeline's", fmt.Sprint(pl.maxAttempts(0)), "3"},
		{"attempts: the task's own", fmt.Sprint(pl.maxAttempts(3)), "5"},
		{"on failure: the pipeline's", string(pl.onFailure(0)), string(hearth.OnFailureFail)},
		{"on failure: the task's own", string(pl.onFailure(3)), string(hearth.OnFailurePause)},
		{"on failure of no task", string(pl.onFailure(-1)), string(hearth.OnFailureFail)},
		{"no stages", fmt.Sprint(pl.stages, pl.Stage(0) == ""), "false true"},
		{"the index", fmt.Sprintf("%d %s %s", pl.index["summary"], pl.id, pl.config), "4 essay-1 /etc/hearth.hcl"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.what, tc.got, tc.want)
		}
	}
	staged := newPlan("s", pipeline(1, task("a"), staged("review", "b", "a")), "")
	if !staged.stages || staged.Stage(1) != "review" || staged.Stage(0) != "" {
		t.Errorf("stages: %v, %q, %q", staged.stages, staged.Stage(1), staged.Stage(0))
	}
	if got := pl.depMap["edit"]; !slices.Equal(got, []string{"draft", "sources"}) {
		t.Errorf("depMap of edit: %v", got)
	}
}
