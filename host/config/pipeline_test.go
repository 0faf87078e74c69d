package config

import (
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// TestParsePipelineSettings pins what testdata/valid/pipeline.hcl, which
// sets every pipeline and task setting to something other than its
// default, decodes to.
func TestParsePipelineSettings(t *testing.T) {
	cfg, err := Load(filepath.Join("testdata", "valid", "pipeline.hcl"), opts)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "valid"))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Pipeline("podcast")
	if p == nil || len(cfg.Pipelines) != 1 {
		t.Fatalf("got pipelines %+v, want podcast alone", cfg.Pipelines)
	}
	want := hearth.Pipeline{
		Name:        "podcast",
		Description: "a script, judged",
		Parallel:    2,
		Budget:      2.5,
		OnFailure:   hearth.OnFailurePause,
		Files:       []string{filepath.Join(dir, "brief.md")},
		Retry:       hearth.Retry{Attempts: 5, Backoff: 2 * time.Second, MaxBackoff: time.Minute},
		Context:     hearth.Context{Budget: -1, Template: "{{range .Steps}}## {{.Artifact.Title}}\n{{end}}\n"},
		State: hearth.State{
			Initial: map[string]json.RawMessage{
				"inputs": json.RawMessage(`{"minutes":5,"topic":"net/http"}`),
				"notes":  json.RawMessage(`[]`),
			},
			Owners: []*hearth.Owner{
				{Agent: "writer", Writes: []string{"notes"}},
				{Agent: "critic", Reads: []string{"notes"}, Writes: []string{"review"}},
			},
		},
		Retention: hearth.Retention{PauseAfter: time.Hour, AbandonAfter: 48 * time.Hour, DeleteAfter: 720 * time.Hour},
		// "writing" has a block; "review" none.
		Stages: []*hearth.Stage{{Name: "writing", NotBefore: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC).In(time.FixedZone("", 3600))}},
		Tasks: []*hearth.PipelineTask{
			{
				Name:      "script",
				Agent:     "writer", // the pipeline's agent
				Prompt:    "write the script",
				Hints:     sdk.Hints{Files: []string{"script.md"}, Directories: []string{"episodes"}, Technologies: []string{"markdown"}},
				Stage:     "writing",
				Metadata:  map[string]string{"episode": "12", "tone": "calm"},
				Attempts:  2,
				OnFailure: hearth.OnFailureFail,
			},
			{
				Name:      "review.v2",
				Agent:     "critic",
				Prompt:    "judge the script",
				DependsOn: []string{"script"},
				Stage:     "review",
			},
		},
	}
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"name", p.Name, want.Name},
		{"description", p.Description, want.Description},
		{"parallel", p.Parallel, want.Parallel},
		{"budget", p.Budget, want.Budget},
		{"on_failure", p.OnFailure, want.OnFailure},
		{"files", p.Files, want.Files},
		{"retry", p.Retry, want.Retry},
		{"context", p.Context, want.Context},
		{"state.initial", stringsOf(p.State.Initial), stringsOf(want.State.Initial)},
		{"retention", p.Retention, want.Retention},
		// As the stages would be written: the time's offset is the file's.
		{"stages", stagesText(p.Stages), stagesText(want.Stages)},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("%s: got %#v, want %#v", f.name, f.got, f.want)
		}
	}
	if len(p.State.Owners) != len(want.State.Owners) {
		t.Fatalf("state owners: got %d, want %d", len(p.State.Owners), len(want.State.Owners))
	}
	for i, o := range p.State.Owners {
		if !reflect.DeepEqual(o, want.State.Owners[i]) {
			t.Errorf("state owner %d: got %+v, want %+v", i, o, want.State.Owners[i])
		}
	}
	if len(p.Tasks) != len(want.Tasks) {
		t.Fatalf("tasks: got %d, want %d", len(p.Tasks), len(want.Tasks))
	}
	for i, task := range p.Tasks {
		if !reflect.DeepEqual(task, want.Tasks[i]) {
			t.Errorf("task %d:\ngot  %+v\nwant %+v", i, task, want.Tasks[i])
		}
	}
	// What the owners mean: writer reads everything (no reads) and
	// writes notes; critic reads notes only.
	if !p.State.CanRead("writer", "inputs") || !p.State.CanWrite("writer", "notes") || p.State.CanWrite("writer", "review") {
		t.Errorf("writer's access is not what its owner block says")
	}
	if p.State.CanRead("critic", "inputs") || !p.State.CanRead("critic", "notes") || !p.State.CanWrite("critic", "review") {
		t.Errorf("critic's access is not what its owner block says")
	}
	assertSettled(t, p)
}

func stagesText(stages []*hearth.Stage) []string {
	var out []string
	for _, s := range stages {
		out = append(out, s.String())
	}
	return out
}

func stringsOf(m map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// assertSettled checks that a pipeline Load returned is one the Go API
// takes as it is: Defaults changes nothing, Validate finds nothing.
func assertSettled(t *testing.T, p *hearth.Pipeline) {
	t.Helper()
	cp := *p
	cp.Defaults()
	if !reflect.DeepEqual(cp, *p) {
		t.Errorf("Defaults changed the loaded pipeline %q:\ngot  %+v\nwant %+v", p.Name, cp, *p)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("Validate refused the loaded pipeline %q: %v", p.Name, err)
	}
}

// TestPipelineDefaults: a pipeline that sets nothing gets the defaults the
// package documentation lists, from a file and through the Go API alike.
func TestPipelineDefaults(t *testing.T) {
	src := `
agent "a" { bundled = "echo" }
pipeline "p" {
  task "t" {
    agent  = "a"
    prompt = "x"
  }
}`
	cfg, err := Parse([]byte(src), "d.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Pipeline("p")
	want := hearth.Pipeline{
		Name:      "p",
		Parallel:  1,
		OnFailure: "fail",
		Retry:     hearth.Retry{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second},
		Context:   hearth.Context{Budget: hearth.DefaultContextBudget},
		Retention: hearth.Retention{PauseAfter: 24 * time.Hour, AbandonAfter: 7 * 24 * time.Hour},
		Tasks:     []*hearth.PipelineTask{{Name: "t", Agent: "a", Prompt: "x"}},
	}
	if !reflect.DeepEqual(*p, want) {
		t.Errorf("from a file:\ngot  %+v\nwant %+v", *p, want)
	}
	if !reflect.DeepEqual(p.Tasks[0], want.Tasks[0]) {
		t.Errorf("task: got %+v, want %+v", p.Tasks[0], want.Tasks[0])
	}
	if p.Budget != 0 || p.Files != nil || p.State.Initial != nil || p.State.Owners != nil || p.Context.Template != "" {
		t.Errorf("got budget %g, files %v, state %+v, template %q; want none", p.Budget, p.Files, p.State, p.Context.Template)
	}
	if !p.State.CanRead("a", "anything") || !p.State.CanWrite("a", "anything") {
		t.Errorf("without owner blocks every agent reads and writes every section")
	}
	if got := p.Retry.Delay(1); got != time.Second {
		t.Errorf("first retry: got a wait of %s, want 1s", got)
	}

	api := hearth.Pipeline{Name: "p", Tasks: []*hearth.PipelineTask{{Name: "t", Agent: "a", Prompt: "x"}}}
	api.Defaults()
	if !reflect.DeepEqual(api, want) {
		t.Errorf("through the Go API:\ngot  %+v\nwant %+v", api, want)
	}
	if err := api.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	assertSettled(t, p)
}

// TestRetentionSteps: "0" (or any zero duration) turns one step off, and a
// block turning every step off keeps runs forever, even once Defaults has
// seen it (the zero hearth.Retention means the defaults).
func TestRetentionSteps(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  hearth.Retention
	}{
		{"default", "", hearth.Retention{PauseAfter: hearth.DefaultPauseAfter, AbandonAfter: hearth.DefaultAbandonAfter}},
		{"empty block", "retention {}", hearth.Retention{PauseAfter: hearth.DefaultPauseAfter, AbandonAfter: hearth.DefaultAbandonAfter}},
		{"delete too", `retention { delete_after = "720h" }`, hearth.Retention{PauseAfter: hearth.DefaultPauseAfter, AbandonAfter: hearth.DefaultAbandonAfter, DeleteAfter: 720 * time.Hour}},
		{"no pause", `retention { pause_after = "0" }`, hearth.Retention{AbandonAfter: hearth.DefaultAbandonAfter}},
		{"zero with a unit", `retention { abandon_after = "0s" }`, hearth.Retention{PauseAfter: hearth.DefaultPauseAfter}},
		{"all off", "retention {\n  pause_after = \"0\"\n  abandon_after = \"0h\"\n}", hearth.RetentionOff},
		{"only delete", "retention {\n  pause_after = \"0\"\n  abandon_after = \"0\"\n  delete_after = \"1h\"\n}", hearth.Retention{DeleteAfter: time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "agent \"a\" { bundled = \"echo\" }\npipeline \"p\" {\n  agent = \"a\"\n  " + tt.block + "\n  task \"t\" { prompt = \"x\" }\n}\n"
			cfg, err := Parse([]byte(src), "r.hcl", opts)
			if err != nil {
				t.Fatal(err)
			}
			p := cfg.Pipeline("p")
			if p.Retention != tt.want {
				t.Errorf("got %+v, want %+v", p.Retention, tt.want)
			}
			assertSettled(t, p)
		})
	}
}

func TestRetryDelay(t *testing.T) {
	standard := hearth.Retry{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second}
	tests := []struct {
		name    string
		r       hearth.Retry
		failure int
		want    time.Duration
	}{
		{"first failure", standard, 1, time.Second},
		{"doubles", standard, 2, 2 * time.Second},
		{"doubles again", standard, 3, 4 * time.Second},
		{"below the cap", standard, 5, 16 * time.Second},
		{"capped", standard, 6, 30 * time.Second},
		{"stays capped", standard, 64, 30 * time.Second},
		{"huge failure count", standard, math.MaxInt, 30 * time.Second},
		{"cap not a power of two", hearth.Retry{Backoff: 3 * time.Second, MaxBackoff: 10 * time.Second}, 3, 10 * time.Second},
		{"no failure yet", standard, 0, time.Second},
		{"negative failure", standard, -5, time.Second},
		{"backoff equal to cap", hearth.Retry{Backoff: time.Minute, MaxBackoff: time.Minute}, 9, time.Minute},
		{"backoff above cap", hearth.Retry{Backoff: time.Hour, MaxBackoff: time.Minute}, 1, time.Minute},
		{"largest cap", hearth.Retry{Backoff: 1, MaxBackoff: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"largest cap, 62 doublings", hearth.Retry{Backoff: 1, MaxBackoff: math.MaxInt64}, 63, 1 << 62},
		{"largest backoff", hearth.Retry{Backoff: math.MaxInt64, MaxBackoff: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"zero backoff", hearth.Retry{MaxBackoff: time.Minute}, math.MaxInt, 0},
		{"negative backoff", hearth.Retry{Backoff: -time.Second, MaxBackoff: time.Minute}, math.MaxInt, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Delay(tt.failure); got != tt.want {
				t.Errorf("Delay(%d) with %+v: got %v, want %v", tt.failure, tt.r, got, tt.want)
			}
		})
	}
	// The waits never shrink as failures add up.
	prev := time.Duration(0)
	for f := 1; f < 200; f++ {
		d := hearth.Retry{Backoff: 7 * time.Millisecond, MaxBackoff: 90 * time.Hour}.Delay(f)
		if d < prev || d <= 0 {
			t.Fatalf("Delay(%d) = %v after %v", f, d, prev)
		}
		prev = d
	}
}

// TestPipelineErrors pins each problem in a pipeline (and in the guards
// that gate one) to its file:line:col and to a message naming the problem
// and the fix. Each problem is one error, not several.
func TestPipelineErrors(t *testing.T) {
	// The agents come last so that line numbers start at the pipeline.
	const agents = "\nagent \"writer\" {\n  bundled = \"gotour\"\n}\nagent \"critic\" {\n  bundled = \"echo\"\n}\n"
	tests := []struct {
		name string
		src  string
		pos  string   // file:line:col of the error
		want []string // in its message
	}{
		// Escalation.
		{"bad on_failure", `pipeline "p" {
  agent      = "writer"
  on_failure = "stop"
  task "a" { prompt = "x" }
}`, "t.hcl:3:16", []string{`on_failure must be "fail"`, `or "pause"`, `got "stop"`}},
		{"bad task on_failure", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt     = "x"
    on_failure = "pasue"
  }
}`, "t.hcl:5:18", []string{`got "pasue" (did you mean "pause"?)`}},

		// hearth.Retry.
		{"bad backoff", `pipeline "p" {
  agent = "writer"
  retry {
    backoff = "2 sec"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:15", []string{`backoff must be a duration such as "30s"`, `"2 sec" is not one`}},
		{"negative backoff", `pipeline "p" {
  agent = "writer"
  retry { backoff = "-1s" }
  task "a" { prompt = "x" }
}`, "t.hcl:3:21", []string{"backoff must be positive (got -1s)"}},
		{"bad max_backoff", `pipeline "p" {
  agent = "writer"
  retry {
    backoff     = "10s"
    max_backoff = "soon"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:5:19", []string{`max_backoff must be a duration`, `"soon" is not one`}},
		{"max_backoff below backoff", `pipeline "p" {
  agent = "writer"
  retry {
    backoff     = "1m"
    max_backoff = "10s"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:5:19", []string{"max_backoff (10s) is shorter than backoff (1m0s)", "Raise max_backoff, or lower backoff"}},
		{"zero attempts", `pipeline "p" {
  agent = "writer"
  retry {
    attempts = 0
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:16", []string{"must be at least 1 (got 0)", "1 meaning no retry", "Remove it for the default, 3"}},
		{"negative task attempts", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt   = "x"
    attempts = -1
  }
}`, "t.hcl:5:16", []string{"must be at least 1 (got -1)", "Remove it to use the pipeline's retry.attempts"}},

		// Budget and parallelism.
		{"negative budget", `pipeline "p" {
  agent  = "writer"
  budget = -2
  task "a" { prompt = "x" }
}`, "t.hcl:3:12", []string{"budget caps the run's total cost; it must be positive (got -2)", "Remove it for no cap"}},
		{"zero parallel", `pipeline "p" {
  agent    = "writer"
  parallel = 0
  task "a" { prompt = "x" }
}`, "t.hcl:3:14", []string{"parallel is how many tasks run at once; it must be at least 1 (got 0). Remove it for the default, 1."}},

		// hearth.Retention.
		{"retention in days", `pipeline "p" {
  agent = "writer"
  retention {
    abandon_after = "7d"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:21", []string{`abandon_after must be a duration such as "12h"`, `"7d" is not one: durations stop at hours, so write "168h"`}},
		{"bad retention", `pipeline "p" {
  agent = "writer"
  retention {
    pause_after = "a day"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:19", []string{`pause_after must be a duration such as "12h" or "168h", or "0" to turn this step off; "a day" is not one.`}},
		{"negative retention", `pipeline "p" {
  agent = "writer"
  retention {
    delete_after = "-1h"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:20", []string{`delete_after must be positive, or "0" to turn this step off (got "-1h")`}},
		{"bad retention, no second error about the order", `pipeline "p" {
  agent = "writer"
  retention {
    pause_after  = "2 days"
    delete_after = "1h"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:20", []string{`pause_after must be a duration`}},
		{"delete before abandon", `pipeline "p" {
  agent = "writer"
  retention {
    delete_after = "72h"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:20", []string{"delete_after (72h0m0s) is not longer than abandon_after (168h0m0s): a run would be deleted before it is flagged abandoned", "pause_after < abandon_after < delete_after", `turn a step off with "0"`}},
		{"abandon before pause", `pipeline "p" {
  agent = "writer"
  retention {
    pause_after   = "48h"
    abandon_after = "24h"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:5:21", []string{"abandon_after (24h0m0s) is not longer than pause_after (48h0m0s)"}},

		// hearth.Context.
		{"zero context budget", `pipeline "p" {
  agent = "writer"
  context {
    budget = 0
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:14", []string{"0 would leave no room", "-1 for no cap, or remove it for the default"}},
		{"template error in a heredoc", `pipeline "p" {
  agent = "writer"
  context {
    template = <<TMPL
{{range .Steps}}
{{.Name}
{{end}}
TMPL
  }
  task "a" { prompt = "x" }
}`, "t.hcl:6:1", []string{"context template line 2", "fix the template, or drop it to use the default layout"}},
		{"template error in an indented heredoc", `pipeline "p" {
  agent = "writer"
  context {
    template = <<-TMPL
      {{range .Steps}}{{.Name}}
      {{end}}{{end}}
    TMPL
  }
  task "a" { prompt = "x" }
}`, "t.hcl:6:7", []string{"context template line 2", "unexpected {{end}}"}},
		{"template error in a quoted string", `pipeline "p" {
  agent = "writer"
  context {
    template = "{{range .Steps}}\n{{.Nmae}}{{end}}"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:35", []string{"context template line 2", "Nmae"}},

		// hearth.State.
		{"unknown owner agent", `pipeline "p" {
  agent = "writer"
  state {
    owner "writr" {
      writes = ["notes"]
    }
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:5", []string{`Owner block names agent "writr", which is not configured (did you mean "writer"?)`, "Agents: writer, critic"}},
		{"owner of no task", `pipeline "p" {
  agent = "writer"
  state {
    owner "critic" {
      writes = ["review"]
    }
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:5", []string{`Agent "critic" owns state sections of pipeline "p" but runs none of its tasks`, "Remove the owner block, or check the agent's name"}},
		{"duplicate owner", `pipeline "p" {
  agent = "writer"
  state {
    owner "writer" {
      writes = ["a"]
    }
    owner "writer" {
      writes = ["b"]
    }
  }
  task "a" { prompt = "x" }
}`, "t.hcl:7:5", []string{`Agent "writer" already has an owner block in pipeline "p"; merge them`}},
		{"section with two writers", `pipeline "p" {
  agent = "writer"
  state {
    owner "writer" {
      writes = ["draft"]
    }
    owner "critic" {
      writes = ["review", "draft"]
    }
  }
  task "a" { prompt = "x" }
  task "b" {
    agent  = "critic"
    prompt = "y"
  }
}`, "t.hcl:8:27", []string{`Section "draft" of pipeline "p"'s state is written by both "writer" and "critic"`, "Keep it in one owner's writes (the other can list it in reads)"}},
		{"empty section", `pipeline "p" {
  agent = "writer"
  state {
    owner "writer" {
      reads  = ["a", " "]
    }
  }
  task "a" { prompt = "x" }
}`, "t.hcl:5:22", []string{`Owner "writer" names an empty section in reads`, `as in reads = ["notes"]`}},
		{"initial state not an object", `pipeline "p" {
  agent = "writer"
  state {
    initial = "hello"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:15", []string{"an object of sections, as in initial = { inputs"}},

		// Files.
		{"missing file", `pipeline "p" {
  agent = "writer"
  files = ["testdata/valid/brief.md", "testdata/nope.md"]
  task "a" { prompt = "x" }
}`, "t.hcl:3:39", []string{`Pipeline "p" attaches "testdata/nope.md"`, "cannot be read: no such file or directory", "Fix the path (a relative one is read from the config file's directory), or remove it from files"}},
		{"directory as a file", `pipeline "p" {
  agent = "writer"
  files = ["testdata"]
  task "a" { prompt = "x" }
}`, "t.hcl:3:12", []string{`attaches "testdata" to its runs, but it is not a regular file`, "List the files themselves"}},

		// Tasks.
		{"duplicate task", `pipeline "p" {
  agent = "writer"
  task "a" { prompt = "x" }
  task "a" { prompt = "y" }
}`, "t.hcl:4:3", []string{`Pipeline "p" already has a task named "a", at t.hcl:3,3-11`, "Give each task its own name"}},
		{"task name with a space", `pipeline "p" {
  agent = "writer"
  task "write script" { prompt = "x" }
}`, "t.hcl:3:3", []string{`Task name "write script" must be made of letters, digits, '-', '_' and '.'`, `Rename it, as in task "write_script"`}},
		{"task name with a slash", `pipeline "p" {
  agent = "writer"
  task "a/b" { prompt = "x" }
}`, "t.hcl:3:3", []string{`Task name "a/b" must be made of`}},
		{"stage with a space", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt = "x"
    stage  = "first draft"
  }
}`, "t.hcl:5:14", []string{`stage "first draft" must be made of letters`, `as in stage = "writing"; remove stage for a task outside any stage`}},
		{"empty stage", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt = "x"
    stage  = ""
  }
}`, "t.hcl:5:14", []string{`stage is empty; name one, as in stage = "writing", or remove stage`}},
		{"reserved stage", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt = "x"
    stage  = "completed"
  }
}`, "t.hcl:5:14", []string{`stage "completed" is reserved`, `start from "created" and end in "completed"`, "name the stage for the work its tasks do"}},
		{"metadata not strings", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt   = "x"
    metadata = { episode = { number = 1 } }
  }
}`, "t.hcl:5:28", []string{`Task "a": metadata "episode" is of type object; metadata values are strings`, `as in metadata = { episode = "12", tone = "calm" }`}},
		{"metadata not a map", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt   = "x"
    metadata = ["a"]
  }
}`, "t.hcl:5:16", []string{`Task "a": metadata is a map of strings passed to the agent`, "got a value of type tuple"}},
		{"metadata without a value", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt   = "x"
    metadata = { tone = null }
  }
}`, "t.hcl:5:25", []string{`Task "a": metadata "tone" has no value; give it a string, or remove it`}},
		{"task depends on itself", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt     = "x"
    depends_on = ["a"]
  }
}`, "t.hcl:5:19", []string{`Task "a" lists itself in depends_on; remove it`}},
		{"unknown dependency", `pipeline "p" {
  agent = "writer"
  task "research" { prompt = "x" }
  task "a" {
    prompt     = "x"
    depends_on = ["research", "reserch"]
  }
}`, "t.hcl:6:31", []string{`Task "a" depends on "reserch", which is not a task of pipeline "p" (did you mean "research"?). Its other tasks: research.`}},
		{"task without an agent", `pipeline "p" {
  task "a" { prompt = "x" }
}`, "t.hcl:2:3", []string{`Task "a" names no agent: set agent = "<name>" in the task, or in the pipeline for all its tasks. Agents: writer, critic.`}},
		{"unknown task agent", `pipeline "p" {
  task "a" {
    agent  = "critc"
    prompt = "x"
  }
}`, "t.hcl:3:14", []string{`There is no agent named "critc" (did you mean "critic"?)`}},
		{"empty prompt", `pipeline "p" {
  agent = "writer"
  task "a" { prompt = "  " }
}`, "t.hcl:3:23", []string{`Task "a" has an empty prompt; say what the agent should do`}},
		{"no tasks", `pipeline "p" {
  agent = "writer"
}`, "t.hcl:1:1", []string{`Pipeline "p" has no tasks; add a task block, such as task "first" { prompt = "..." }, with agent = "..." in it or in the pipeline`}},

		// Strict decoding.
		{"unknown pipeline attribute", `pipeline "p" {
  agent   = "writer"
  paralel = 2
  task "a" { prompt = "x" }
}`, "t.hcl:3:3", []string{`An argument named "paralel" is not expected here. Did you mean "parallel"?`}},
		{"unknown pipeline block", `pipeline "p" {
  agent = "writer"
  retyr {
    attempts = 2
  }
  task "a" { prompt = "x" }
}`, "t.hcl:3:3", []string{`Blocks of type "retyr" are not expected here. Did you mean "retry"?`}},
		{"unknown task attribute", `pipeline "p" {
  agent = "writer"
  task "a" {
    prompt    = "x"
    dependson = ["b"]
  }
}`, "t.hcl:5:5", []string{`An argument named "dependson" is not expected here. Did you mean "depends_on"?`}},
		{"unknown retry attribute", `pipeline "p" {
  agent = "writer"
  retry {
    attempt = 2
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:5", []string{`An argument named "attempt" is not expected here. Did you mean "attempts"?`}},
		{"unknown context attribute", `pipeline "p" {
  agent = "writer"
  context {
    budgets = 10
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:5", []string{`An argument named "budgets" is not expected here. Did you mean "budget"?`}},
		{"unknown owner attribute", `pipeline "p" {
  agent = "writer"
  state {
    owner "writer" {
      write = ["a"]
    }
  }
  task "a" { prompt = "x" }
}`, "t.hcl:5:7", []string{`An argument named "write" is not expected here. Did you mean "writes"?`}},
		{"unknown retention attribute", `pipeline "p" {
  agent = "writer"
  retention {
    pause = "1h"
  }
  task "a" { prompt = "x" }
}`, "t.hcl:4:5", []string{`An argument named "pause" is not expected here.`}},

		// Gates: result guards that send work back.
		{"send back to an unknown task", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
  task "review" {
    prompt     = "y"
    depends_on = ["script"]
  }
}
guard "quality" {
  hook      = "task_result"
  tasks     = ["review"]
  action    = "send_back"
  back_to   = "scirpt"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:13:15", []string{`Guard "quality" sends work back to task "scirpt", which no pipeline has (did you mean "script"?)`, "Name a task the gated task depends on"}},
		{"send back to a task not depended on", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
  task "notes" { prompt = "x" }
  task "review" {
    prompt     = "y"
    depends_on = ["script"]
  }
}
guard "quality" {
  hook      = "task_result"
  tasks     = ["review"]
  action    = "send_back"
  back_to   = "notes"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:14:15", []string{`Guard "quality" gates task "review" of pipeline "p" and sends the work back to "notes", which "review" does not depend on`, "Name one of the tasks it depends on: script."}},
		{"send back to itself", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
}
guard "quality" {
  hook      = "task_result"
  tasks     = ["script"]
  action    = "send_back"
  back_to   = "script"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:9:15", []string{`sends the work back to "script" itself; use action = "retry" to try a task again`}},
		{"send back from a first task", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
  task "other" { prompt = "x" }
}
guard "quality" {
  hook      = "task_result"
  tasks     = ["script"]
  action    = "send_back"
  back_to   = "other"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:10:15", []string{`gates task "script" of pipeline "p", which depends on no task`, `Use action = "retry", or gate a later task`}},
		{"back_to without send_back", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
}
guard "quality" {
  hook      = "task_result"
  back_to   = "script"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:7:15", []string{`names back_to, which only a task_result guard with action = "send_back" uses; set that action, or remove back_to`}},
		{"send back without back_to", `pipeline "p" {
  agent = "writer"
  task "script" { prompt = "x" }
}
guard "quality" {
  hook      = "task_result"
  action    = "send_back"
  condition = "result.metrics.quality < 0.8"
}`, "t.hcl:7:15", []string{`a send_back guard needs back_to = "<task>"`}},

		// Stage blocks (hearth.Stage, decoded by the table of its settings).
		{"unknown stage setting", `pipeline "p" {
  agent = "writer"
  stage "deploy" {
    not_befor = "2026-12-01T09:00:00Z"
  }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:4:5", []string{`Unknown stage setting`, `A stage block has no setting "not_befor" (did you mean "not_before"?)`, `Its settings: not_before (the earliest time`}},
		{"stage time not RFC 3339", `pipeline "p" {
  agent = "writer"
  stage "deploy" { not_before = "1 Dec 2026 09:00" }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:3:33", []string{`Stage "deploy": not_before must be a time in RFC 3339 form`, `as in "2026-12-01T09:00:00Z"`, `"1 Dec 2026 09:00" is not one`}},
		{"stage time without its zone", `pipeline "p" {
  agent = "writer"
  stage "deploy" { not_before = "2026-12-01T09:00:00" }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:3:33", []string{`with its offset from UTC`}},
		{"stage time with an offset of 24 hours", `pipeline "p" {
  agent = "writer"
  stage "deploy" { not_before = "2026-12-01T09:00:00+24:00" }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:3:33", []string{`Stage "deploy": not_before 2026-12-01T09:00:00+24:00 cannot be written in RFC 3339 form`, `an offset is under 24 hours`}},
		{"stage setting of the wrong type", `pipeline "p" {
  agent = "writer"
  stage "deploy" { not_before = ["2026-12-01T09:00:00Z"] }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:3:33", []string{`not_before is written as a string: the earliest time a run may enter the stage`, `got a value of type tuple`}},
		{"stage of no task", `pipeline "p" {
  agent = "writer"
  stage "deplyo" { not_before = "2026-12-01T09:00:00Z" }
  task "build" {
    prompt = "x"
    stage  = "build"
  }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:3:3", []string{`Pipeline "p" has a block for stage "deplyo", which none of its tasks names (did you mean "deploy"?)`, `The stages its tasks name: build, deploy`}},
		{"stage of no task, in a pipeline without stages", `pipeline "p" {
  agent = "writer"
  stage "deploy" {}
  task "ship" { prompt = "x" }
}`, "t.hcl:3:3", []string{`none of its tasks names`, `The stages its tasks name: none`, `Name it in a task (stage = "deploy"), or remove the block`}},
		{"two blocks for a stage", `pipeline "p" {
  agent = "writer"
  stage "deploy" { not_before = "2026-12-01T09:00:00Z" }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
  stage "deploy" {}
}`, "t.hcl:8:3", []string{`Duplicate stage block`, `already has a block for stage "deploy", at t.hcl:3,3-17`, `Merge the two`}},
		{"reserved stage block", `pipeline "p" {
  agent = "writer"
  stage "completed" {}
  task "ship" { prompt = "x" }
}`, "t.hcl:3:3", []string{`Invalid stage name`, `stage "completed" is reserved`}},
		{"a block in a stage block", `pipeline "p" {
  agent = "writer"
  stage "deploy" {
    window { from = "09:00" }
  }
  task "ship" {
    prompt = "x"
    stage  = "deploy"
  }
}`, "t.hcl:4:5", []string{`Unexpected "window" block`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src+agents), "t.hcl", opts)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			if len(ce.Diagnostics) != 1 {
				t.Errorf("got %d errors, want 1:\n%v", len(ce.Diagnostics), err)
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if !strings.HasPrefix(first, tt.pos+": ") {
				t.Errorf("got %q, want it at %s", first, tt.pos)
			}
			for _, w := range tt.want {
				if !strings.Contains(first, w) {
					t.Errorf("got %q\nwant it to contain %q", first, w)
				}
			}
		})
	}
}
