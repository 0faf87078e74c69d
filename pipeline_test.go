package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
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
		{"stage of no task", func(p *Pipeline) {
			p.Tasks[1].Stage = "review"
			p.Stages = []*Stage{{Name: "deploy"}}
		}, `stage "deploy" is the stage of no task; name it in a task's stage, or remove its block (the tasks' stages: review)`},
		{"stage block name", func(p *Pipeline) { p.Stages = []*Stage{{Name: "a b"}} }, `stage "a b" must be made of`},
		{"reserved stage block", func(p *Pipeline) { p.Stages = []*Stage{{Name: "completed"}} }, `stage "completed" is reserved`},
		{"two blocks of a stage", func(p *Pipeline) {
			p.Tasks[0].Stage = "deploy"
			p.Stages = []*Stage{{Name: "deploy"}, {Name: "deploy"}}
		}, `stage "deploy" has two blocks; merge them`},
		{"nil stage", func(p *Pipeline) { p.Stages = []*Stage{nil} }, `stages[0] is nil`},
		{"a stage setting's check", func(p *Pipeline) {
			p.Tasks[0].Stage = "deploy"
			p.Stages = []*Stage{{Name: "deploy", NotBefore: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
		}, `stage "deploy": not_before 10000-01-01 00:00:00 +0000 UTC is not a time of the years 0 to 9999`},
		{"a stage time with an offset of 24 hours", func(p *Pipeline) {
			p.Tasks[0].Stage = "deploy"
			p.Stages = []*Stage{{Name: "deploy", NotBefore: time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("", 24*3600))}}
		}, `stage "deploy": not_before 2026-12-01T09:00:00+24:00 cannot be written in RFC 3339 form (its offset from UTC is 24h0m0s`},
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

// TestStageOpens: the one question the scheduler asks of a stage.
func TestStageOpens(t *testing.T) {
	nine := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		stage *Stage
		now   time.Time
		open  bool
		at    time.Time
	}{
		{"a stage without a block", nil, nine, true, time.Time{}},
		{"a block that sets nothing", &Stage{Name: "deploy"}, nine, true, time.Time{}},
		{"before not_before", &Stage{Name: "deploy", NotBefore: nine}, nine.Add(-time.Nanosecond), false, nine},
		{"a day before, in another zone", &Stage{Name: "deploy", NotBefore: nine.In(time.FixedZone("", 3600))}, nine.Add(-24 * time.Hour), false, nine},
		{"at not_before", &Stage{Name: "deploy", NotBefore: nine}, nine, true, time.Time{}},
		{"after not_before", &Stage{Name: "deploy", NotBefore: nine}, nine.Add(time.Hour), true, time.Time{}},
	} {
		open, at := tc.stage.Opens(tc.now)
		if open != tc.open || !at.Equal(tc.at) {
			t.Errorf("%s: Opens(%s) = %v, %s; want %v, %s", tc.name, tc.now, open, at, tc.open, tc.at)
		}
	}
}

// TestStageSettings sweeps the stage block's table: every setting
// parses its example into a stage that formats back to it, passes its
// check and shows in the stage's String; refuses a value that is none
// with an error that names the setting and shows the form expected; and
// is a setting of a block set to nothing in no way (formats to "").
func TestStageSettings(t *testing.T) {
	names := StageSettingNames()
	if len(names) == 0 {
		t.Fatal("no stage settings")
	}
	for i, set := range StageSettings() {
		if set.Name != names[i] || set.Doc == "" || set.Example == "" || set.Parse == nil || set.Format == nil {
			t.Errorf("setting %d (%s) is missing its name, doc, example, parse or format", i, set.Name)
			continue
		}
		s := &Stage{Name: "deploy"}
		if set.Format(s) != "" {
			t.Errorf("%s: a stage that sets nothing formats as %q, want \"\"", set.Name, set.Format(s))
		}
		if err := set.Parse(s, set.Example); err != nil {
			t.Errorf("%s: its example %q: %v", set.Name, set.Example, err)
			continue
		}
		if got := set.Format(s); got != set.Example {
			t.Errorf("%s: %q formats back as %q", set.Name, set.Example, got)
		}
		if set.Check != nil {
			if msg := set.Check(s); msg != "" {
				t.Errorf("%s: its example fails its check: %s", set.Name, msg)
			}
		}
		if want := fmt.Sprintf("%s = %q", set.Name, set.Example); !strings.Contains(s.String(), want) {
			t.Errorf("%s: String() = %s, want it to hold %s", set.Name, s.String(), want)
		}
		err := set.Parse(&Stage{}, "not a value of any setting")
		if err == nil || !strings.Contains(err.Error(), set.Name) || !strings.Contains(err.Error(), "as in") {
			t.Errorf("%s: a bad value: got %v, want an error naming it and showing the form", set.Name, err)
		}
	}
}

// TestStageTimesTheStoreKeeps sweeps not_before over the edges of its
// form (the years 0, 1 and 9999, every offset Go's parser may take, from
// -25:00 to +25:00 with minutes 0, 59 and 60): every value the setting
// parses and its check passes is one the store can keep, its JSON reading
// back the same instant; every other is refused by one or the other
// (a "+24:00" passed both, and the run of its pipeline could not start).
func TestStageTimesTheStoreKeeps(t *testing.T) {
	set := StageSettings()[slices.IndexFunc(StageSettings(), func(s StageSetting) bool { return s.Name == "not_before" })]
	for _, date := range []string{"0000-01-01T00:00:00", "0001-01-01T00:00:00", "2026-12-01T09:00:00", "9999-12-31T23:59:59"} {
		for h := -25; h <= 25; h++ {
			for _, m := range []int{0, 59, 60} {
				sign := "+"
				if h < 0 {
					sign = "-"
				}
				v := fmt.Sprintf("%s%s%02d:%02d", date, sign, max(h, -h), m)
				s := &Stage{Name: "deploy"}
				if set.Parse(s, v) != nil || set.Check(s) != "" {
					continue
				}
				b, err := json.Marshal(s)
				if err != nil {
					t.Errorf("%s: parsed and checked, but the store cannot keep it: %v", v, err)
					continue
				}
				var back Stage
				if err := json.Unmarshal(b, &back); err != nil || !back.NotBefore.Equal(s.NotBefore) {
					t.Errorf("%s: kept as %s, reads back %v, %v", v, b, back.NotBefore, err)
				}
			}
		}
	}
}

// A leap second is valid RFC 3339 that no Go time holds: not_before
// says so, instead of calling the time malformed.
func TestStageNotBeforeLeapSecond(t *testing.T) {
	var s Stage
	err := stageSettings[0].Parse(&s, "2016-12-31T23:59:60Z")
	if err == nil || !strings.Contains(err.Error(), "leap second") {
		t.Fatalf("got %v, want it named a leap second", err)
	}
	if err := stageSettings[0].Parse(&s, "2016-12-31T23:59:59Z"); err != nil {
		t.Fatalf("the second before it: %v", err)
	}
	if err := stageSettings[0].Parse(&s, "2016-12-31T23:61:00Z"); err == nil || strings.Contains(err.Error(), "leap second") {
		t.Fatalf("a minute out of range: %v, want the RFC 3339 message", err)
	}
	// Only second 60 of an otherwise valid time is a leap second.
	for _, hm := range []string{"23:59", "12:00"} {
		for sec := range 100 {
			v := fmt.Sprintf("2016-12-31T%s:%02dZ", hm, sec)
			err := stageSettings[0].Parse(&s, v)
			switch leap := err != nil && strings.Contains(err.Error(), "leap second"); {
			case sec < 60 && err != nil:
				t.Errorf("%s: %v", v, err)
			case sec == 60 && !leap:
				t.Errorf("%s: %v, want it named a leap second", v, err)
			case sec > 60 && (err == nil || leap):
				t.Errorf("%s: %v, want the RFC 3339 message", v, err)
			}
		}
	}
}
