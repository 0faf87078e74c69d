package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/fakeapi"
)

// TestAskReadme runs the questions examples/ask/README.md shows, in order,
// on one data directory, with the example's config pointed at the scripted
// fake of Anthropic's API (no test reaches the internet): the first reads
// the file, the second finds it in the rehydrated conversation and costs
// less, the third is stopped by the guard, as the README says.
func TestAskReadme(t *testing.T) {
	const key = "sk-ant-test-0d1e2f"
	t.Setenv("ANTHROPIC_API_KEY", key)
	f := fakeapi.New(key)
	f.MinCacheTokens = 0
	defer f.Close()

	// The example's config, with the fake's URL and the root made absolute.
	src, err := os.ReadFile("../../examples/ask/hearth.hcl")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), `workspace = "../.."`, `workspace = "`+root+`"`, 1)
	cfg = strings.Replace(cfg, "  model {\n", "  model {\n    base_url = \""+f.URL+"/\"\n", 1)
	cfgPath := filepath.Join(t.TempDir(), "hearth.hcl")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	readme, err := os.ReadFile("../../examples/ask/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, m := range shBlock.FindAllStringSubmatch(string(readme), -1) {
		for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			args, ok := shellWords(line)
			if !ok || len(args) == 0 || args[0] != "hearth" {
				t.Fatalf("README line %q is not a hearth command this test can run", line)
			}
			for i, a := range args {
				if a == "examples/ask/hearth.hcl" {
					args[i] = cfgPath
				}
			}
			cmds = append(cmds, args[1:])
		}
	}
	if len(cmds) != 4 || cmds[3][0] != "run" {
		t.Fatalf("the README shows %q, want the 3 questions and the run", cmds)
	}
	env := exampleEnv(t)
	var outs []hearth.Outcome
	for _, args := range cmds[:3] {
		code, out, stderr := run(t, env, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("hearth %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
		var o hearth.Outcome
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("%v in %q", err, out)
		}
		outs = append(outs, o)
	}
	first, second, third := outs[0].Result, outs[1].Result, outs[2].Result
	if outs[0].Decision.Action != hearth.ActionSpawned || first.Metrics["tool_calls"] != 1 {
		t.Errorf("first question: %s with %v tool calls, want spawned with one read", outs[0].Decision.Action, first.Metrics["tool_calls"])
	}
	if outs[1].Decision.Action != hearth.ActionRehydrated || outs[1].Session != outs[0].Session || second.Metrics["tool_calls"] != 0 {
		t.Errorf("second question: %s on %s with %v tool calls, want the first one's conversation rehydrated, no tool call",
			outs[1].Decision.Action, outs[1].Session, second.Metrics["tool_calls"])
	}
	if second.Metrics["cached_input_tokens"] == 0 || second.Cost >= first.Cost {
		t.Errorf("second question cost %v (cached %v), the first %v: want it cheaper, from the cache", second.Cost, second.Metrics["cached_input_tokens"], first.Cost)
	}
	if !strings.Contains(third.Output, "secrets are off limits") {
		t.Errorf("third question: output %q does not carry the guard's message", third.Output)
	}

	// The run: its config is the copy, in a directory of its own.
	runEnv := exampleEnv(t)
	var res exampleRun
	exampleJSON(t, runEnv, 0, &res, "run", filepath.Dir(cfgPath), "--json")
	if res.Run.Status != hearth.RunCompleted || res.Run.Cost <= 0 {
		t.Fatalf("run %s: %s, cost %v; want completed at a cost", res.Run.ID, res.Run.Status, res.Run.Cost)
	}
	show := showRun(t, runEnv, res.Run.ID)
	sessions := map[string]bool{}
	for _, o := range show.Outputs {
		sessions[o.Session] = true
	}
	if len(show.Outputs) != 3 || len(sessions) != 1 {
		t.Errorf("%d outputs on %d sessions, want 3 on one conversation", len(show.Outputs), len(sessions))
	}
	code, out, stderr := run(t, runEnv, "runs", "show", res.Run.ID, "--outputs")
	if code != 0 || strings.Count(out, "tokens: ") != 3 || !strings.Contains(out, "; cost 0.0") {
		t.Errorf("runs show --outputs: exit %d, want each output with its tokens and cost:\n%s%s", code, out, stderr)
	}
}

// TestAskConfigsValidate: the local config needs no key; the hosted one
// says which variable to export when it is missing.
func TestAskConfigsValidate(t *testing.T) {
	if code, out, stderr := run(t, nil, "config", "validate", "../../examples/ask/local.hcl"); code != 0 {
		t.Errorf("local.hcl: exit %d\n%s%s", code, out, stderr)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	code, out, stderr := run(t, nil, "config", "validate", "../../examples/ask/hearth.hcl")
	if code != 2 || !strings.Contains(out+stderr, "ANTHROPIC_API_KEY, which is not set") {
		t.Errorf("hearth.hcl without a key: exit %d, want 2 naming ANTHROPIC_API_KEY\n%s%s", code, out, stderr)
	}
}

// TestExamplesOnAModel runs the essay, story and podcast examples' model.hcl,
// as their READMEs tell, against the scripted fake of Anthropic's API.
func TestExamplesOnAModel(t *testing.T) {
	const key = "sk-ant-test-9a8b7c"
	t.Setenv("ANTHROPIC_API_KEY", key)
	f := fakeapi.New(key)
	defer f.Close()
	for _, name := range []string{"essay", "story", "podcast"} {
		t.Run(name, func(t *testing.T) {
			readme, err := os.ReadFile("../../examples/" + name + "/README.md")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(readme), "`hearth run examples/"+name+"/model.hcl`") {
				t.Fatalf("the README does not show how to run model.hcl")
			}
			src, err := os.ReadFile("../../examples/" + name + "/model.hcl")
			if err != nil {
				t.Fatal(err)
			}
			cfg := strings.Replace(string(src), "  model {\n", "  model {\n    base_url = \""+f.URL+"/\"\n", 1)
			path := filepath.Join(t.TempDir(), "model.hcl")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			n := len(f.Requests())
			var res exampleRun
			exampleJSON(t, exampleEnv(t), 0, &res, "run", path, "--json")
			d := res.Run
			if d.Status != hearth.RunCompleted || d.Succeeded != d.Tasks || d.Cost <= 0 {
				t.Fatalf("run %s: %s, %d/%d tasks, cost %v; want all done, at a cost", d.ID, d.Status, d.Succeeded, d.Tasks, d.Cost)
			}
			if got := len(f.Requests()) - n; got != d.Tasks {
				t.Errorf("%d model calls for %d tasks, want one each", got, d.Tasks)
			}
		})
	}
}

// TestCodeTourOnAModel runs examples/code-tour/model.hcl on the Go tree
// against the scripted fake: each package's file is read once, by its
// first question; the two after it find it in their session's
// conversation.
func TestCodeTourOnAModel(t *testing.T) {
	const key = "sk-ant-test-5e6f7a"
	t.Setenv("ANTHROPIC_API_KEY", key)
	f := fakeapi.New(key)
	defer f.Close()
	readme, err := os.ReadFile("../../examples/code-tour/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`hearth run examples/code-tour/model.hcl`") {
		t.Fatalf("the README does not show how to run model.hcl")
	}
	src, err := os.ReadFile("../../examples/code-tour/model.hcl")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), "  model {\n", "  model {\n    base_url = \""+f.URL+"/\"\n", 1)
	cfg = strings.Replace(cfg, `workspace = "/usr/local/go/src"`, `workspace = "`+goSrc(t)+`"`, 1)
	path := filepath.Join(t.TempDir(), "model.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := exampleEnv(t)
	var res exampleRun
	exampleJSON(t, env, 0, &res, "run", path, "--json")
	if d := res.Run; d.Status != hearth.RunCompleted || d.Succeeded != 12 {
		t.Fatalf("run %s: %s, %d/12 tasks", d.ID, d.Status, d.Succeeded)
	}
	reads := map[string]float64{}
	for _, o := range showRun(t, env, res.Run.ID).Outputs {
		pkg := o.Task[:strings.LastIndexByte(o.Task, '-')]
		reads[pkg] += o.Metrics["tool_calls"]
		if strings.HasSuffix(o.Task, "-1") != (o.Metrics["tool_calls"] == 1) {
			t.Errorf("%s: %v tool calls; want 1 for a package's first question, 0 after", o.Task, o.Metrics["tool_calls"])
		}
	}
	if len(reads) != 4 {
		t.Errorf("reads by package %v, want 4 packages", reads)
	}
}
