package config

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/pool"
)

// TestGuardErrorPositions: an error inside a condition is reported where
// it is in the file, whatever the string form: quoted, with escapes, or a
// heredoc, indented or not.
func TestGuardErrorPositions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  string
		want string
	}{
		{"quoted", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Read' && pahts != nil\"\n}\n", "t.hcl:3:34", "unknown name pahts (did you mean paths?)"},
		{"escaped quotes before the spot", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == \\\"Read\\\" && pahts != nil\"\n}\n", "t.hcl:3:36", "unknown name pahts"},
		{"heredoc", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = <<EXPR\ntool == \"Read\" &&\nlen(session.flies) > 0\nEXPR\n}\n", "t.hcl:5:13", "session has no field flies (did you mean files?)"},
		{"indented heredoc", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = <<-EXPR\n    tool == \"Read\" &&\n      len(session.flies) > 0\n  EXPR\n}\n", "t.hcl:5:19", "session has no field flies"},
		{"type error", "guard \"g\" {\n  hook = \"task_result\"\n  condition = \"result.output > 3\"\n}\n", "t.hcl:3:30", "mismatched types string and int"},
		{"interpolation", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == ${x}\"\n}\n", "t.hcl:3:15", "HCL interpolation"},
		{"unknown hook", "guard \"g\" {\n  hook = \"pre_tool\"\n  condition = \"true\"\n}\n", "t.hcl:2:10", `unknown hook "pre_tool"`},
		{"wrong action", "guard \"g\" {\n  hook = \"transition\"\n  action = \"deny\"\n  condition = \"true\"\n}\n", "t.hcl:3:12", `a transition guard can block, not "deny"`},
		{"stage filter on a tool guard", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  from = [\"a\"]\n  condition = \"true\"\n}\n", "t.hcl:3:10", "from and to name the stages of a transition"},
		{"unknown agent", "agent \"coder\" {\n  bundled = \"gotour\"\n}\nguard \"g\" {\n  hook = \"pre_tool_use\"\n  agents = [\"codr\"]\n  condition = \"true\"\n}\n", "t.hcl:6:12", `names agent "codr", which is not configured (did you mean "coder"?)`},
		{"duplicate", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"true\"\n}\nguard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"true\"\n}\n", "t.hcl:5:1", `A guard named "g" is already declared`},
		{"send back to no task", "guard \"g\" {\n  hook = \"task_result\"\n  action = \"send_back\"\n  back_to = \"scirpt\"\n  condition = \"true\"\n}\n", "t.hcl:4:13", `sends work back to task "scirpt", which no pipeline has`},
		{"missing condition", "guard \"g\" {\n  hook = \"pre_tool_use\"\n}\n", "t.hcl:1:1", `Guard "g" needs a condition`},
		{"bad helper pattern", "guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"touches('[a')\"\n}\n", "t.hcl:3:24", `bad path pattern "[a": a [ is not closed`},
		{"helper on another hook", "guard \"g\" {\n  hook = \"task_result\"\n  condition = \"reads('x')\"\n}\n", "t.hcl:3:16", `reads is for pre_tool_use conditions`},
		{"bad tool pattern", "guards {\n  path_fields = { \"mcp__[\" = [\"path\"] }\n}\n", "t.hcl:2:17", `path_fields: bad path pattern "mcp__["`},
		{"empty field name", "guards {\n  path_fields = { \"mcp__*\" = [\"\"] }\n}\n", "t.hcl:2:17", `a name is empty`},
		{"unknown guards setting", "guards {\n  case_insensitive = true\n}\n", "t.hcl:2:3", `An argument named "case_insensitive" is not expected here`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "t.hcl", opts)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if !strings.HasPrefix(first, tt.pos+": ") {
				t.Errorf("got %q, want it at %s", first, tt.pos)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseGuards(t *testing.T) {
	src := `
agent "coder" { bundled = "gotour" }
pipeline "podcast" {
  agent = "coder"
  task "script" { prompt = "write" }
  task "evaluate" {
    prompt     = "judge"
    depends_on = ["script"]
  }
}
guard "no-secrets" {
  hook      = "pre_tool_use"
  agents    = ["coder"]
  condition = "any(paths, glob(#, '**/.env*'))"
  message   = "no secrets"
}
guard "quality" {
  hook      = "task_result"
  tasks     = ["evaluate"]
  action    = "send_back"
  back_to   = "script"
  max_loops = 2
  condition = "result.metrics.quality < 0.85"
  message   = "revise the script"
}`
	cfg, err := Parse([]byte(src), "g.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.GuardSet()
	pre := set.Rules(guard.PreToolUse)
	res := set.Rules(guard.TaskResult)
	if len(pre) != 1 || pre[0].Name != "no-secrets" || pre[0].Action != guard.Deny || pre[0].Agents[0] != "coder" {
		t.Errorf("pre_tool_use: got %+v", pre)
	}
	if len(res) != 1 || res[0].Action != guard.SendBack || res[0].To != "script" || res[0].MaxLoops != 2 || res[0].Tasks[0] != "evaluate" {
		t.Errorf("task_result: got %+v", res)
	}
	v := set.First(guard.PreToolUse, guard.Match{Agent: "coder"}, guard.ToolUseEnv{Paths: []string{"x/.env"}})
	if v == nil || v.Message != "no secrets" {
		t.Errorf("evaluation: got %+v", v)
	}
}

// TestGuardPaths: the guards block says how every guard reads paths.
func TestGuardPaths(t *testing.T) {
	src := `
guards {
  case_sensitive       = true
  searches_skip_hidden = true
  shell                = "zsh"
  path_fields          = { "mcp__vault__*" = ["secret_file"] }
}
guard "no-env" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env')"
}`
	cfg, err := Parse([]byte(src), "g.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.GuardPaths.CaseSensitive || !cfg.GuardPaths.SearchesSkipHidden || cfg.GuardPaths.Shell != "zsh" || !slices.Equal(cfg.GuardPaths.Fields["mcp__vault__*"], []string{"secret_file"}) {
		t.Errorf("got %+v", cfg.GuardPaths)
	}
	set := cfg.GuardSet()
	for _, tc := range []struct {
		call guard.Call
		deny bool
	}{
		{guard.Call{Tool: "mcp__vault__get", Input: map[string]any{"secret_file": "/w/.env"}}, true},
		{guard.Call{Tool: "Read", Input: map[string]any{"file_path": "/w/.ENV"}}, false},
	} {
		if got := set.First(guard.PreToolUse, guard.Match{}, set.ToolUse(tc.call)) != nil; got != tc.deny {
			t.Errorf("%+v: denied %v, want %v", tc.call, got, tc.deny)
		}
	}
	// By default, case folds.
	cfg, err = Parse([]byte("guard \"g\" {\n  hook = \"pre_tool_use\"\n  condition = \"touches('**/.env')\"\n}\n"), "g.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	set = cfg.GuardSet()
	if set.First(guard.PreToolUse, guard.Match{}, set.ToolUse(guard.Call{Tool: "Read", Input: map[string]any{"file_path": "/w/.ENV"}})) == nil {
		t.Error("by default, .ENV passed a guard on .env")
	}
}

// TestSampleIsValid keeps the commented sample (hearth config sample)
// loadable, with every block it documents.
func TestSampleIsValid(t *testing.T) {
	cfg, err := Parse(Sample, "sample.hcl", Options{Bundled: []string{"gotour"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 2 || len(cfg.Guards) != 5 || len(cfg.Pipelines) != 1 || cfg.Matcher.Threshold != 0.6 {
		t.Fatalf("got %d agents, %d guards, %d pipelines, threshold %v", len(cfg.Agents), len(cfg.Guards), len(cfg.Pipelines), cfg.Matcher.Threshold)
	}
	// The sample states the defaults: loading it gives what leaving
	// everything out gives (the pool's numbers are the pool's defaults).
	a, d := cfg.Agents[0], DefaultAgent("gotour")
	wantPool := Pool{MaxSessions: pool.DefaultMaxSessions, IdleTimeout: pool.DefaultIdleTimeout, WhenFull: d.Pool.WhenFull,
		MaxDormant: pool.DefaultMaxDormant, Placement: d.Pool.Placement}
	wantPrint := Fingerprint{MaxFiles: pool.DefaultMaxFiles, MaxDirectories: pool.DefaultMaxDirectories, MaxTechnologies: pool.DefaultMaxTechnologies}
	if a.Pool != wantPool || a.Fingerprint != wantPrint || cfg.Matcher != DefaultMatcher() {
		t.Errorf("the sample's settings differ from the defaults: %+v %+v %+v", a.Pool, a.Fingerprint, cfg.Matcher)
	}
	p := cfg.Pipelines[0]
	dp := hearth.Pipeline{}
	dp.Defaults()
	if p.Retry != dp.Retry || p.Context != dp.Context || p.Retention != dp.Retention || p.OnFailure != dp.OnFailure || p.Budget != dp.Budget {
		t.Errorf("the sample pipeline's settings differ from the defaults: %+v %+v %+v", p.Retry, p.Context, p.Retention)
	}
	// Its quality gate sends the gated task's work back to its dependency.
	gates := cfg.GuardSet().Rules(guard.TaskResult)
	if len(gates) != 1 || gates[0].Action != guard.SendBack || p.Task(gates[0].Tasks[0]) == nil || !slices.Contains(p.Task(gates[0].Tasks[0]).DependsOn, gates[0].To) {
		t.Errorf("sample gate: got %+v", gates)
	}
	// The copy under testdata seeds FuzzParse; keep it the sample.
	if b, err := os.ReadFile("testdata/valid/sample.hcl"); err != nil || !bytes.Equal(b, Sample) {
		t.Errorf("testdata/valid/sample.hcl differs from sample.hcl (%v); copy it over", err)
	}
}
