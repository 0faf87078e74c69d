package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

// The tests below run each example from examples/ as its README tells a
// new user to, through the CLI, and check what the README says happens.

// exampleRun is what `hearth run|runs resume|fork|revisit --json` prints.
type exampleRun struct {
	Run     hearth.RunDetail `json:"run"`
	Summary runSummary       `json:"summary"`
}

// exampleShow is what `hearth runs show --json` prints.
type exampleShow struct {
	hearth.RunDetail
	Outputs     []hearth.TaskOutput     `json:"outputs"`
	Checkpoints []hearth.CheckpointInfo `json:"checkpoints"`
}

// exampleJSON runs the CLI, wants exit code want, and decodes its JSON
// output into v.
func exampleJSON(t *testing.T, env map[string]string, want int, v any, args ...string) {
	t.Helper()
	code, out, errOut := run(t, env, args...)
	if code != want {
		t.Fatalf("hearth %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("hearth %s: %v in %q", strings.Join(args, " "), err, out)
	}
}

func showRun(t *testing.T, env map[string]string, id string) exampleShow {
	t.Helper()
	var s exampleShow
	exampleJSON(t, env, 0, &s, "runs", "show", id, "--json")
	return s
}

func taskOf(t *testing.T, d hearth.RunDetail, name string) hearth.RunTaskInfo {
	t.Helper()
	for _, task := range d.TaskList {
		if task.Name == name {
			return task
		}
	}
	t.Fatalf("run %s has no task %s", d.ID, name)
	return hearth.RunTaskInfo{}
}

// current returns task's current output.
func current(t *testing.T, s exampleShow, task string) hearth.TaskOutput {
	t.Helper()
	for _, o := range s.Outputs {
		if o.Task == task && o.Current {
			return o
		}
	}
	t.Fatalf("run %s: task %s has no current output", s.ID, task)
	return hearth.TaskOutput{}
}

// versions lists the output versions of task, in order, with a "*" on the
// current one: "1,2*".
func versions(s exampleShow, task string) string {
	var vs []string
	for _, o := range s.Outputs {
		if o.Task == task {
			v := strconv.Itoa(o.Version)
			if o.Current {
				v += "*"
			}
			vs = append(vs, v)
		}
	}
	return strings.Join(vs, ",")
}

// interruptExample runs the CLI with args, presses Ctrl-C once stdout
// shows after, and returns the paused run's ID from the summary's
// "hearth runs resume ID" line.
func interruptExample(t *testing.T, env map[string]string, after string, args ...string) string {
	t.Helper()
	sigs := make(chan os.Signal, 1)
	stdout, stderr := newWatchWriter(""), newWatchWriter("")
	m := &Main{
		Stdout: stdout, Stderr: stderr,
		Getenv:  func(k string) string { return env[k] },
		Signals: func() (<-chan os.Signal, func()) { return sigs, func() {} },
	}
	done := make(chan int, 1)
	go func() { done <- m.Run(context.Background(), args) }()
	stdout.wait(t, after)
	sigs <- syscall.SIGINT
	if code := <-done; code != exitWork {
		t.Fatalf("interrupted run: exit %d, want %d\nstdout: %s\nstderr: %s", code, exitWork, stdout, stderr)
	}
	out := stdout.String()
	i := strings.Index(out, "hearth runs resume ")
	if i < 0 || !strings.Contains(out, " paused: ") {
		t.Fatalf("the interrupted run does not say it paused and how to resume it:\n%s\nstderr: %s", out, stderr)
	}
	return strings.Fields(out[i+len("hearth runs resume "):])[0]
}

func exampleEnv(t *testing.T) map[string]string {
	return map[string]string{"HEARTH_DATA_DIR": t.TempDir()}
}

// TestExamplePodcast: research fails twice and succeeds on its third
// attempt; the quality gate sends the first draft back to the writer with
// the evaluator's report and the second draft passes; a run stopped at
// its budget resumes with a larger one without redoing what was done.
func TestExamplePodcast(t *testing.T) {
	t.Parallel()
	env := exampleEnv(t)
	var res exampleRun
	exampleJSON(t, env, 0, &res, "run", "../../examples/podcast", "--json")
	d := res.Run
	if d.Status != hearth.RunCompleted || d.Stage != "completed" {
		t.Fatalf("run %s: %s (%s), stage %q; want completed", d.ID, d.Status, d.Reason, d.Stage)
	}
	if n := d.GateLoops["script-quality"]; n != 1 {
		t.Errorf("gate script-quality sent work back %d time(s), want once", n)
	}
	if r := taskOf(t, d, "research"); r.Attempt != 3 || r.Failures != 2 || len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "fail_attempts=2") {
		t.Errorf("research: attempt %d, %d failures, errors %q; want success on attempt 3 after 2 failures", r.Attempt, r.Failures, r.Errors)
	}
	if w := taskOf(t, d, "write_script"); w.Round != 2 || w.Version != 2 {
		t.Errorf("write_script: round %d, v%d; want its second round's output, v2", w.Round, w.Version)
	}
	s := showRun(t, env, d.ID)
	if got := versions(s, "evaluate"); got != "1,2*" {
		t.Fatalf("evaluate's outputs: %s, want v1 archived and v2 current", got)
	}
	first, second := s.Outputs[slices.IndexFunc(s.Outputs, func(o hearth.TaskOutput) bool { return o.Task == "evaluate" && o.Version == 1 })], current(t, s, "evaluate")
	if first.Metrics["quality"] >= 0.8 || second.Metrics["quality"] < 0.8 {
		t.Errorf("evaluate quality: v1 %v, v2 %v; want the first below the 0.8 gate and the second above", first.Metrics["quality"], second.Metrics["quality"])
	}
	if out := current(t, s, "write_script").Output; !strings.Contains(out, "draft 2") || !strings.Contains(out, "Addressed feedback:\n- lengthen the middle act") {
		t.Errorf("the second draft does not address the evaluator's recommendations:\n%s", out)
	}
	// research 3 attempts x 0.12 (failed ones cost too), 2 drafts x 0.20,
	// 2 evaluations x 0.05, synthesis 0.30.
	if d.Cost < 1.159 || d.Cost > 1.161 || d.Budget != 2 {
		t.Errorf("cost %v of %v, want 1.16 of 2", d.Cost, d.Budget)
	}

	var stopped exampleRun
	exampleJSON(t, env, exitWork, &stopped, "run", "../../examples/podcast", "--budget", "0.6", "--json")
	if st := stopped.Run; st.Status != hearth.RunFailed || !strings.Contains(st.Reason, "task write_script was not started: the run has spent 0.61 of its budget of 0.60") {
		t.Fatalf("over budget: %s: %s; want failed before write_script's second round, naming the budget", st.Status, st.Reason)
	}
	var resumed exampleRun
	exampleJSON(t, env, 0, &resumed, "runs", "resume", stopped.Run.ID, "--budget", "2", "--json")
	if r := resumed.Run; r.Status != hearth.RunCompleted || resumed.Summary.Ran != 3 || taskOf(t, r, "research").Attempt != 3 {
		t.Errorf("resumed with a larger budget: %s, ran %d; want completed, running write_script, evaluate and synthesize only", r.Status, resumed.Summary.Ran)
	}
}

// TestExampleStory: a checkpoint per scene; Ctrl-C pauses the run and a
// resume finishes it without writing the finished chapters again; a fork
// from the checkpoint after chapter 2 with another direction ends
// differently and leaves the original as it was.
func TestExampleStory(t *testing.T) {
	t.Parallel()
	env := exampleEnv(t)
	id := interruptExample(t, env, "chapter_1 ", "run", "../../examples/story", "-q")

	before := showRun(t, env, id)
	done := before.Succeeded
	if before.Status != hearth.RunPaused || done < 3 || done > 5 {
		t.Fatalf("interrupted run: %s with %d tasks done; want paused after chapter_1 and before the ending", before.Status, done)
	}
	var res exampleRun
	exampleJSON(t, env, 0, &res, "runs", "resume", id, "--json")
	if res.Run.Status != hearth.RunCompleted || res.Summary.Ran != 6-done {
		t.Fatalf("resumed: %s, ran %d; want completed, running the %d unfinished tasks only", res.Run.Status, res.Summary.Ran, 6-done)
	}
	origin := showRun(t, env, id)
	for _, o := range before.Outputs {
		if now := current(t, origin, o.Task); now.Version != o.Version || !now.Time.Equal(o.Time) {
			t.Errorf("%s was written again on resume: v%d at %s, was v%d at %s", o.Task, now.Version, now.Time, o.Version, o.Time)
		}
	}
	var scenes []string
	var at uint64
	for _, c := range origin.Checkpoints {
		if strings.Contains(c.Label, " scene ") {
			scenes = append(scenes, c.Label)
		}
		if c.Label == "task chapter_2 succeeded" {
			at = c.Seq
		}
	}
	if len(scenes) != 9 || scenes[0] != "chapter 1 scene 1" || scenes[8] != "chapter 3 scene 3" {
		t.Errorf("scene checkpoints %q, want one per scene, 3 chapters of 3", scenes)
	}
	if at == 0 {
		t.Fatalf("no checkpoint after chapter_2 in %+v", origin.Checkpoints)
	}
	ending := current(t, origin, "ending").Output

	var fork exampleRun
	exampleJSON(t, env, 0, &fork, "runs", "fork", id, "--at", strconv.FormatUint(at, 10),
		"--set", "direction=the keeper lets the light go out", "--json")
	if f := fork.Run; f.Status != hearth.RunCompleted || f.ForkedFrom != id || f.ForkedAt != at || fork.Summary.Ran != 2 {
		t.Fatalf("fork: %s, from %s at %d, ran %d; want a completed fork of %s at %d that wrote chapter_3 and the ending", f.Status, f.ForkedFrom, f.ForkedAt, fork.Summary.Ran, id, at)
	}
	branch := showRun(t, env, fork.Run.ID)
	if got := current(t, branch, "ending").Output; got == ending || !strings.Contains(got, "In the end, the keeper lets the light go out.") {
		t.Errorf("the fork's ending:\n%s\nwant one that follows the new direction, unlike the origin's:\n%s", got, ending)
	}
	if got, want := current(t, branch, "chapter_2").Output, current(t, origin, "chapter_2").Output; got != want {
		t.Errorf("the fork rewrote chapter_2, which was done at its checkpoint")
	}
	after := showRun(t, env, id)
	if got := current(t, after, "ending").Output; got != ending || len(after.Checkpoints) != len(origin.Checkpoints) || after.Cost != origin.Cost {
		t.Errorf("the fork touched its origin: ending %q (was %q), %d checkpoints (was %d)", got, ending, len(after.Checkpoints), len(origin.Checkpoints))
	}
}

// TestExampleEssay: Ctrl-C pauses, resume finishes; revisits of the
// thesis treat the later stages by impact, and keep every version.
func TestExampleEssay(t *testing.T) {
	t.Parallel()
	env := exampleEnv(t)
	id := interruptExample(t, env, "thesis ", "run", "../../examples/essay", "-q")
	var res exampleRun
	exampleJSON(t, env, 0, &res, "runs", "resume", id, "--json")
	if res.Run.Status != hearth.RunCompleted || res.Summary.Ran >= 4 {
		t.Fatalf("resumed: %s, ran %d; want completed without running the thesis again", res.Run.Status, res.Summary.Ran)
	}

	type want struct {
		version     map[string]int
		review      []string
		archived    []string
		thesisHas   string
		draftLacks  string
		allVersions map[string]string
	}
	for i, tt := range []struct {
		impact, reason string
		want           want
	}{
		{"minor", "reword it around decisions", want{
			version:  map[string]int{"thesis": 2, "outline": 1, "arguments": 1, "draft": 1},
			review:   []string{"outline", "arguments", "draft"},
			archived: []string{"thesis v1"}, thesisHas: "Revised because: reword it around decisions",
			allVersions: map[string]string{"thesis": "1,2*", "outline": "1*", "draft": "1*"},
		}},
		{"moderate", "the outline must follow the new wording", want{
			version:  map[string]int{"thesis": 3, "outline": 2, "arguments": 1, "draft": 1},
			review:   []string{"arguments", "draft"},
			archived: []string{"thesis v2", "outline v1"}, thesisHas: "revision 3",
			allVersions: map[string]string{"thesis": "1,2,3*", "outline": "1,2*", "arguments": "1*"},
		}},
		{"major", "make it an explainer", want{
			version:  map[string]int{"thesis": 4, "outline": 3, "arguments": 2, "draft": 2},
			archived: []string{"thesis v3", "outline v2", "arguments v1", "draft v1"}, thesisHas: "explainer",
			draftLacks:  "write things down",
			allVersions: map[string]string{"thesis": "1,2,3,4*", "outline": "1,2,3*", "arguments": "1,2*", "draft": "1,2*"},
		}},
	} {
		var rv exampleRun
		exampleJSON(t, env, 0, &rv, "runs", "revisit", id, "thesis", "--impact", tt.impact, "--reason", tt.reason, "--json")
		d := rv.Run
		if d.Status != hearth.RunCompleted || len(d.Revisions) != i+1 {
			t.Fatalf("%s revisit: %s with %d revisions; want completed, with this one recorded", tt.impact, d.Status, len(d.Revisions))
		}
		var review []string
		for name, v := range tt.want.version {
			task := taskOf(t, d, name)
			if task.Version != v {
				t.Errorf("%s revisit: %s is v%d, want v%d", tt.impact, name, task.Version, v)
			}
			if task.NeedsReview {
				review = append(review, name)
			}
		}
		slices.Sort(review)
		wantReview := slices.Sorted(slices.Values(tt.want.review))
		if !slices.Equal(review, wantReview) {
			t.Errorf("%s revisit: needs review %v, want %v", tt.impact, review, wantReview)
		}
		r := d.Revisions[i]
		if r.Impact != hearth.Impact(tt.impact) || !slices.Equal(r.Archived, tt.want.archived) || r.Reason != tt.reason {
			t.Errorf("%s revisit recorded as %+v; want archived %v", tt.impact, r, tt.want.archived)
		}
		s := showRun(t, env, id)
		if out := current(t, s, "thesis").Output; !strings.Contains(out, tt.want.thesisHas) {
			t.Errorf("%s revisit: thesis\n%s\ndoes not contain %q", tt.impact, out, tt.want.thesisHas)
		}
		if tt.want.draftLacks != "" {
			if out := current(t, s, "draft").Output; strings.Contains(out, tt.want.draftLacks) || !strings.Contains(out, "mechanisms") {
				t.Errorf("%s revisit: the draft was not rewritten on the new thesis:\n%s", tt.impact, out)
			}
		}
		for task, vs := range tt.want.allVersions {
			if got := versions(s, task); got != vs {
				t.Errorf("%s revisit: %s's versions %s, want %s", tt.impact, task, got, vs)
			}
		}
	}
	code, out, _ := run(t, env, "runs", "show", id, "--outputs", "--all-versions")
	if code != 0 || !strings.Contains(out, "── thesis v1 (archived") || !strings.Contains(out, "── thesis v4 (current") {
		t.Errorf("runs show --outputs --all-versions: exit %d, want archived and current versions:\n%s", code, out)
	}
}

// TestExampleStudyPlanner: the files are attached once and ingested in
// chunks; the crash on the first attempt costs only the chunks it had not
// marked; the transition guards pass on the agents' state, and block a
// run whose inputs lack a midterm until the inputs are fixed; a write
// outside an agent's sections fails the task for good.
func TestExampleStudyPlanner(t *testing.T) {
	t.Parallel()
	env := exampleEnv(t)
	var res exampleRun
	exampleJSON(t, env, 0, &res, "run", "../../examples/study-planner", "--json")
	d := res.Run
	if d.Status != hearth.RunCompleted || d.Stage != "completed" {
		t.Fatalf("run: %s (%s), stage %s; want completed", d.Status, d.Reason, d.Stage)
	}
	ingest := taskOf(t, d, "ingest")
	if ingest.Attempt != 2 || ingest.Failures != 1 || len(ingest.Errors) != 1 || !strings.Contains(ingest.Errors[0], "exit status 3") {
		t.Errorf("ingest: attempt %d, %d failure(s), errors %q; want the crash on attempt 1, success on attempt 2", ingest.Attempt, ingest.Failures, ingest.Errors)
	}
	for file, n := range map[string]int{"calc2-syllabus.md": 5, "calc2-notes.md": 3, "chem1-syllabus.md": 4} {
		if got := d.Chunks[file]; len(got) != n || got[0] != 0 || got[n-1] != n-1 {
			t.Errorf("%s: chunks done %v, want 0 to %d", file, got, n-1)
		}
	}
	s := showRun(t, env, d.ID)
	if out := current(t, s, "ingest").Output; !strings.Contains(out, "on attempt 2: 8 chunk(s) processed now, 4 skipped (done before)") {
		t.Errorf("ingest's second attempt did not skip the 4 chunks the first one marked:\n%s", out)
	}
	var state struct {
		Status         string                                       `json:"status"`
		FileRegistry   map[string]struct{ Filename, SHA256 string } `json:"file_registry"`
		IngestionState struct {
			Files map[string]struct {
				Status          string `json:"status"`
				ProcessedChunks int    `json:"processed_chunks"`
			} `json:"files"`
		} `json:"ingestion_state"`
		PlanningState struct {
			StartDate       string `json:"start_date"`
			LastMidtermDate string `json:"last_midterm_date"`
			PlanRows        []struct {
				Date string `json:"date"`
			} `json:"plan_rows"`
			Review struct {
				ResultType string `json:"result_type"`
			} `json:"review"`
		} `json:"planning_state"`
		Artifacts map[string]any `json:"artifacts"`
	}
	if err := json.Unmarshal(s.State, &state); err != nil {
		t.Fatal(err)
	}
	if len(state.FileRegistry) != 3 || len(state.IngestionState.Files) != 3 {
		t.Errorf("file_registry %+v, ingestion_state.files %+v; want the 3 files in both", state.FileRegistry, state.IngestionState.Files)
	}
	for id, f := range state.IngestionState.Files {
		if f.Status != "complete" {
			t.Errorf("ingestion_state.files.%s: %+v, want complete", id, f)
		}
	}
	ps := state.PlanningState
	planned := make(map[string]bool)
	for _, r := range ps.PlanRows {
		planned[r.Date] = true
	}
	start, err1 := time.Parse(time.DateOnly, ps.StartDate)
	last, err2 := time.Parse(time.DateOnly, ps.LastMidtermDate)
	if err1 != nil || err2 != nil || ps.StartDate != "2026-02-16" || ps.LastMidtermDate != "2026-02-26" {
		t.Fatalf("planning_state from %q to %q; want 2026-02-16 to 2026-02-26", ps.StartDate, ps.LastMidtermDate)
	}
	for day := start; !day.After(last); day = day.AddDate(0, 0, 1) {
		if !planned[day.Format(time.DateOnly)] {
			t.Errorf("plan_rows have no row for %s", day.Format(time.DateOnly))
		}
	}
	if ps.Review.ResultType != "approved_plan" || state.Status != "completed" || state.Artifacts["rows"] == nil {
		t.Errorf("review %q, status %q, artifacts %v; want an approved plan, published", ps.Review.ResultType, state.Status, state.Artifacts)
	}

	// A course without a midterm date: the guard keeps the run in
	// collecting_inputs, paused, until the inputs are fixed on resume.
	var blocked exampleRun
	exampleJSON(t, env, exitWork, &blocked, "run", "../../examples/study-planner", "--json",
		"--set", "user_inputs=@../../examples/study-planner/inputs-missing-midterm.json")
	if b := blocked.Run; b.Status != hearth.RunPaused || b.Stage != "collecting_inputs" || b.Succeeded != 1 || !strings.Contains(b.Reason, "blocked by guard courses-have-midterms") {
		t.Fatalf("missing midterm: %s at %s, %d done: %s; want paused in collecting_inputs by courses-have-midterms", b.Status, b.Stage, b.Succeeded, b.Reason)
	}
	exampleJSON(t, env, 0, &res, "runs", "resume", blocked.Run.ID, "--json",
		"--set", "user_inputs=@../../examples/study-planner/inputs.json")
	if res.Run.Status != hearth.RunCompleted || res.Summary.Ran != 5 {
		t.Errorf("resumed with the midterm date: %s, ran %d; want completed, collect not run again", res.Run.Status, res.Summary.Ran)
	}

	// Ownership: the estimation agent made to plan reads user_inputs, which
	// its owner block does not give it.
	src, err := os.ReadFile("../../examples/study-planner/hearth.hcl")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../examples/study-planner/files")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(src), `"files/`, `"`+abs+`/`)
	cfg = strings.Replace(cfg, `prompt     = "study.estimate"`, `prompt     = "study.plan"`, 1)
	var refused exampleRun
	exampleJSON(t, env, exitWork, &refused, "run", writeConfig(t, cfg), "--json")
	est := taskOf(t, refused.Run, "estimate")
	if refused.Run.Status != hearth.RunFailed || est.Status != hearth.TaskFailed || est.Attempt != 1 ||
		!strings.Contains(est.Error, `agent "estimation" may not read section "user_inputs"`) {
		t.Errorf("a read outside the owner block: run %s, estimate %s after %d attempt(s): %s; want it failed for good, naming agent and section",
			refused.Run.Status, est.Status, est.Attempt, est.Error)
	}
}

// TestExampleClaudeCode wires examples/claude-code's settings.json to a
// daemon started on its config, replays a recorded Claude Code session
// through the hook commands the settings name, and checks that the
// session is tracked, the .env read denied, and the session pointed at
// for new work.
func TestExampleClaudeCode(t *testing.T) {
	t.Parallel()
	dir := "../../examples/claude-code"
	home := t.TempDir()
	// The README's setup: the config where the hooks read it.
	cfgPath := filepath.Join(home, ".config", "hearth", "hearth.hcl")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hearth.hcl")); err != nil || os.WriteFile(cfgPath, b, 0o644) != nil {
		t.Fatalf("copy hearth.hcl: %v", err)
	}
	s := serve(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(home, ".hearth")}, "--config", cfgPath)

	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	// hook runs the command the settings give for a payload's event, as
	// Claude Code would: in a shell, where ~ is the user's home.
	hook := func(file string) (string, string) {
		t.Helper()
		payload, err := os.ReadFile(filepath.Join(dir, "payloads", file))
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Event string `json:"hook_event_name"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatal(err)
		}
		groups := settings.Hooks[p.Event]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Type != "command" {
			t.Fatalf("settings.json wires %s to %+v; want one command hook", p.Event, groups)
		}
		args := strings.Fields(strings.ReplaceAll(groups[0].Hooks[0].Command, "~", home))
		if args[0] != "hearth" {
			t.Fatalf("the hook command %q does not run hearth", groups[0].Hooks[0].Command)
		}
		code, out, errOut := run(t, map[string]string{"STDIN": string(payload)}, args[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", file, code, errOut)
		}
		return out, errOut
	}
	files, err := filepath.Glob(filepath.Join(dir, "payloads", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("payloads: %v, %v", files, err)
	}
	denied := 0
	for _, f := range files {
		out, errOut := hook(filepath.Base(f))
		if errOut != "" {
			t.Errorf("%s: stderr %q", f, errOut)
		}
		if out == "" {
			continue
		}
		var ans struct {
			Out struct {
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &ans); err != nil || ans.Out.Decision != "deny" || !strings.Contains(ans.Out.Reason, ".env files hold secrets") {
			t.Errorf("%s answered %q; only a denial is expected", f, out)
		}
		if filepath.Base(f) != "08-pre-read-env.json" {
			t.Errorf("%s was denied; only the .env read should be", f)
		}
		denied++
	}
	if denied != 1 {
		t.Errorf("%d denials; want the .env read's", denied)
	}
	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}
	code, out, _ := run(t, env, "sessions", "show", "3f1c2a9e-5d41-4b7e-9c0a-1e2f3a4b5c6d")
	for _, want := range []string{"a claude-code session", "workspace   /home/dev/shop", "resume      cd /home/dev/shop && claude --resume 3f1c2a9e",
		"status      dormant: ended: prompt_input_exit", "/home/dev/shop/src/cart/cart.go", "no-env-files deny"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = run(t, env, "place", "claude-code", "--dir", "/home/dev/shop/src/cart", "--tech", "go")
	if code != 0 || !strings.Contains(out, "resume it with: cd /home/dev/shop && claude --resume 3f1c2a9e-5d41-4b7e-9c0a-1e2f3a4b5c6d") {
		t.Errorf("place: %d\n%s", code, out)
	}
}
