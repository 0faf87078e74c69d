package hearth

import (
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/contextchain"
)

// The default context budget is contextchain's: the vocabulary cannot
// import it, so the two constants are pinned together here.
func TestDefaultContextBudget(t *testing.T) {
	if DefaultContextBudget != contextchain.DefaultBudget {
		t.Errorf("DefaultContextBudget = %d, contextchain.DefaultBudget = %d; keep them equal", DefaultContextBudget, contextchain.DefaultBudget)
	}
}

// TestPipelineValidate: Validate, for pipelines built in Go, refuses what
// config.Load refuses in a file.
func TestPipelineValidate(t *testing.T) {
	valid := func() *Pipeline {
		p := &Pipeline{Name: "p", Tasks: []*PipelineTask{
			{Name: "a", Agent: "writer", Prompt: "x"},
			{Name: "b", Agent: "critic", Prompt: "y", DependsOn: []string{"a"}},
		}}
		p.Defaults()
		return p
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid pipeline: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Pipeline)
		want   string
	}{
		{"no name", func(p *Pipeline) { p.Name = "" }, "the pipeline has no name"},
		{"no tasks", func(p *Pipeline) { p.Tasks = nil }, `pipeline "p" has no tasks`},
		{"parallel", func(p *Pipeline) { p.Parallel = 0 }, "parallel must be at least 1 (got 0)"},
		{"budget", func(p *Pipeline) { p.Budget = -1 }, "budget must be 0 (none) or positive (got -1)"},
		{"on_failure", func(p *Pipeline) { p.OnFailure = "stop" }, `on_failure must be "fail" or "pause" (got "stop")`},
		{"retry", func(p *Pipeline) { p.Retry.MaxBackoff = time.Millisecond }, "retry needs attempts >= 1 and 0 <= backoff <= max_backoff"},
		{"task name", func(p *Pipeline) { p.Tasks[0].Name = "a b" }, `task name "a b" must be made of`},
		{"duplicate task", func(p *Pipeline) { p.Tasks[1].Name = "a" }, `two tasks are named "a"`},
		{"no agent", func(p *Pipeline) { p.Tasks[0].Agent = "" }, `task "a" names no agent`},
		{"empty prompt", func(p *Pipeline) { p.Tasks[0].Prompt = " " }, `task "a" has an empty prompt`},
		{"attempts", func(p *Pipeline) { p.Tasks[0].Attempts = -1 }, `task "a": attempts must be at least 1, or 0 for the pipeline's`},
		{"task on_failure", func(p *Pipeline) { p.Tasks[0].OnFailure = "x" }, `task "a": on_failure must be`},
		{"stage", func(p *Pipeline) { p.Tasks[0].Stage = "a b" }, `task "a": stage "a b" must be made of`},
		{"reserved stage", func(p *Pipeline) { p.Tasks[0].Stage = "created" }, `task "a": stage "created" is reserved`},
		{"self dependency", func(p *Pipeline) { p.Tasks[0].DependsOn = []string{"a"} }, `task "a" depends on itself`},
		{"unknown dependency", func(p *Pipeline) { p.Tasks[0].DependsOn = []string{"z"} }, `task "a" depends on "z", which is not a task of pipeline "p"`},
		{"cycle", func(p *Pipeline) { p.Tasks[0].DependsOn = []string{"b"} }, "in a circle: a -> b -> a"},
		{"retention order", func(p *Pipeline) { p.Retention.DeleteAfter = time.Hour }, "retention: delete_after (1h0m0s) is not longer than abandon_after"},
		{"empty section", func(p *Pipeline) { p.State.Owners = []*Owner{{Agent: "writer", Writes: []string{""}}} }, `owner "writer" names an empty section`},
		{"duplicate owner", func(p *Pipeline) {
			p.State.Owners = []*Owner{{Agent: "writer", Writes: []string{"a"}}, {Agent: "writer", Writes: []string{"b"}}}
		}, `agent "writer" has two owner entries; merge them`},
		{"shared section", func(p *Pipeline) {
			p.State.Owners = []*Owner{{Agent: "writer", Writes: []string{"a"}}, {Agent: "critic", Writes: []string{"a"}}}
		}, `section "a" of the state is written by both "writer" and "critic"; a section has one owner`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.change(p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
	// Retention steps turned off are in no order.
	p := valid()
	p.Retention = Retention{PauseAfter: 48 * time.Hour, AbandonAfter: -1, DeleteAfter: 24 * time.Hour}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "delete_after (24h0m0s) is not longer than pause_after (48h0m0s)") {
		t.Errorf("retention with abandon off: got %v", err)
	}
	p.Retention = RetentionOff
	if err := p.Validate(); err != nil {
		t.Errorf("RetentionOff: %v", err)
	}
}
