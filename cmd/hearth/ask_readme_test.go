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
	// Without --json, submit says what the task spent too.
	if code, out, stderr := run(t, env, cmds[0]...); code != 0 || !strings.Contains(out, "\n  tokens: ") || !strings.Contains(out, " tool calls; cost 0.0") {
		t.Errorf("hearth %s: exit %d, want its tokens and cost in the text:\n%s%s", strings.Join(cmds[0], " "), code, out, stderr)
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
// validates without its key, saying which variable to export, and the
// commands that only read need none either.
func TestAskConfigsValidate(t *testing.T) {
	if code, out, stderr := run(t, nil, "config", "validate", "../../examples/ask/local.hcl"); code != 0 || strings.Contains(stderr, "Warning") {
		t.Errorf("local.hcl: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := run(t, nil, "config", "validate", "../../examples/ask/hearth.hcl")
	if code != 0 || !strings.Contains(out, "is valid") || !strings.Contains(stderr, "Warning") || !strings.Contains(stderr, "ANTHROPIC_API_KEY, which is not set") {
		t.Errorf("hearth.hcl without a key: exit %d, want 0 and a warning naming ANTHROPIC_API_KEY\n%s%s", code, out, stderr)
	}
	// Named by --config, as every other command reads it, the file is
	// checked the same; with no file at all, the command says how to name
	// one.
	code, out, stderr = run(t, nil, "--config", "../../examples/ask/hearth.hcl", "config", "validate")
	if code != 0 || !strings.Contains(out, "../../examples/ask/hearth.hcl is valid") || !strings.Contains(stderr, "ANTHROPIC_API_KEY, which is not set") {
		t.Errorf("config validate with --config: exit %d, want 0, the file valid, and the warning\n%s%s", code, out, stderr)
	}
	if code, out, stderr := run(t, nil, "config", "validate"); code != exitUsage || !strings.Contains(stderr, "hearth config validate FILE (or --config FILE)") {
		t.Errorf("config validate with no file: exit %d, want %d and how to name the file\n%s%s", code, exitUsage, out, stderr)
	}
	for _, args := range [][]string{{"runs", "list"}, {"sessions", "list"}, {"agents", "list"}} {
		if code, out, stderr := run(t, nil, append([]string{"--config", "../../examples/ask/hearth.hcl"}, args...)...); code != 0 {
			t.Errorf("%s without a key: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}

// TestAskOnALocalServer runs examples/ask's local.hcl, as its header
// says, against a local OpenAI-compatible server that writes tool-call
// arguments as Ollama and llama.cpp do ({"path": "x"}): each question is
// a hearth submit of its own, so the second one's session is rehydrated
// from saved state, and it sends its conversation byte for byte, so
// the server's prompt cache serves it.
func TestAskOnALocalServer(t *testing.T) {
	f := fakeapi.New("none") // the agent's placeholder for a server that wants no key
	f.MinCacheTokens = 0
	f.SpacedArguments = true
	defer f.Close()
	src, err := os.ReadFile("../../examples/ask/local.hcl")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	cmdLine := ""
	for _, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "hearth submit") {
			cmdLine = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		}
	}
	if !strings.HasPrefix(cmdLine, "go run ./cmd/hearth submit ask ") || !strings.Contains(string(src), `base_url       = "http://localhost:11434/v1"`) {
		t.Fatalf("local.hcl's command or base_url changed: %q", cmdLine)
	}
	cfg := strings.Replace(string(src), `workspace = "../.."`, `workspace = "`+root+`"`, 1)
	cfg = strings.Replace(cfg, "http://localhost:11434/v1", f.URL+"/v1", 1)
	cfgPath := filepath.Join(t.TempDir(), "local.hcl")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args, ok := shellWords(strings.Replace(strings.TrimPrefix(cmdLine, "go run ./cmd/hearth "), "examples/ask/local.hcl", cfgPath, 1))
	if !ok {
		t.Fatalf("cannot read %q", cmdLine)
	}
	env := exampleEnv(t)
	var outs []hearth.Outcome
	for range 2 {
		code, out, stderr := run(t, env, append(args, "--json")...)
		var o hearth.Outcome
		if code != 0 || json.Unmarshal([]byte(out), &o) != nil || strings.Contains(stderr, "[WARN]") {
			t.Fatalf("%s: exit %d\n%s%s", cmdLine, code, out, stderr)
		}
		outs = append(outs, o)
	}
	first, second := outs[0].Result.Metrics, outs[1].Result.Metrics
	if outs[1].Decision.Action != hearth.ActionRehydrated || second["tool_calls"] != 0 {
		t.Fatalf("second question: %s, %v tool calls; want the first one's conversation rehydrated", outs[1].Decision.Action, second["tool_calls"])
	}
	// Everything of the first question's conversation comes from the
	// cache: what is billed in full is the new question alone.
	if second["cached_input_tokens"] < first["input_tokens"] || second["input_tokens"] > first["input_tokens"]/4 {
		t.Errorf("second question: %v uncached and %v cached input tokens (the first: %v uncached); want its prefix read from the cache",
			second["input_tokens"], second["cached_input_tokens"], first["input_tokens"])
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
