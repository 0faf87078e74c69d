package runs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/record"
)

// The run engine's operations and loop, over the kit of shell_test.go:
// what host/engine's run tests held through the engine, held here where
// the work is done. (The engine keeps the end-to-end ones: a plugin that
// crashes mid-run, a host killed mid-run, a disk that fills up, a write
// that fails on Badger.)

func TestRunChainsContextAndCheckpointsEachTask(t *testing.T) {
	f := newFixture(t)
	p := pipe("chain",
		[]string{"a", "read:src/a.go;echo:a"},
		[]string{"b", "upstream;context;prompt", "a"},
		[]string{"c", "echo:c;attempt;upstream", "b"},
	)
	info, err := f.start(p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != hearth.RunCompleted || info.Succeeded != 3 || info.Progress != 1 {
		t.Fatalf("run = %+v, want completed with 3 tasks", info)
	}
	// b's context comes beside its prompt, which reaches it as written.
	b := f.store.current(t, info.ID, "b").Output
	if !strings.HasPrefix(b, "a@1 ") || !strings.HasSuffix(b, " upstream;context;prompt") {
		t.Errorf("b saw %q; want upstream a@1 and its prompt as written", b)
	}
	for _, want := range []string{"# Context from Previous Steps", `learned from the "a" session`, "src/a.go", `ran "read:src/a.go;echo:a"`, "Use this knowledge to maintain consistency."} {
		if !strings.Contains(b, want) {
			t.Errorf("b's context lacks %q:\n%s", want, b)
		}
	}
	// c's upstream has b (distance 1), then a (distance 2).
	if c := f.store.current(t, info.ID, "c"); c.Output != "c attempt=1 key="+info.ID+"/c/1 b@1,a@1" || c.Version != 1 {
		t.Errorf("c = %+v", c)
	}
	want := []string{"created", "task a succeeded", "task b succeeded", "task c succeeded", "run completed"}
	if labels := f.labels(info.ID); !slices.Equal(labels, want) {
		t.Errorf("checkpoints = %q, want %q", labels, want)
	}
	cps, _ := f.store.Checkpoints(info.ID)
	if cps[2].Run.TasksSucceeded != 2 || cps[2].Parent != 2 {
		t.Errorf("checkpoint 3 = %+v, want 2 tasks succeeded, parent 2", cps[2])
	}
	kinds := f.kinds(info.ID)
	for _, want := range []string{"run.created", "run.status :created>running", "run.task a:pending>running", "run.task a:running>succeeded", "run.context", "run.status :running>completed"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("events lack %q: %q", want, kinds)
		}
	}
}

func TestRunRetriesThenSucceeds(t *testing.T) {
	f := newFixture(t)
	info, err := f.start(pipe("retry", []string{"flaky", "failuntil:3;attempt"}), hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	task := f.store.task(info.ID, "flaky")
	if task.Status != hearth.TaskSucceeded || task.Attempts != 3 || task.Failures != 2 || len(task.Errors) != 2 {
		t.Errorf("task = %+v, want succeeded on attempt 3 after 2 recorded failures", task)
	}
	if !strings.Contains(task.Errors[1], "attempt 2 fails, as scripted") {
		t.Errorf("errors = %q", task.Errors)
	}
	// Every attempt of a task's round shares its idempotency key.
	if out := f.store.current(t, info.ID, "flaky").Output; out != "attempt=3 key="+info.ID+"/flaky/1" {
		t.Errorf("output = %q", out)
	}
	if kinds := f.kinds(info.ID); !slices.Contains(kinds, "run.task flaky:running>retrying") || !slices.Contains(kinds, "run.task flaky:retrying>running") {
		t.Errorf("events lack the retries: %q", kinds)
	}
	msgs := f.messages(info.ID)
	for _, want := range []string{"flaky: pending -> running: attempt 1 of 3", "attempt 2 of 3 failed; next in", "flaky: retrying -> running: attempt 3 of 3"} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) || strings.Contains(m, ": "+want) }) {
			t.Errorf("events lack %q: %q", want, msgs)
		}
	}
}

func TestRunEscalatesByConfig(t *testing.T) {
	f := newFixture(t)
	t.Run("fail", func(t *testing.T) {
		p := pipe("fail", []string{"a", "echo:a"}, []string{"b", "fail:disk full", "a"}, []string{"c", "echo:c", "b"})
		p.Retry.Attempts = 2
		info, err := f.start(p, hearth.RunOptions{})
		var re *hearth.RunError
		if !errors.As(err, &re) || info.Status != hearth.RunFailed {
			t.Fatalf("got %+v, %v; want the run failed", info, err)
		}
		if !strings.Contains(info.Reason, "task b failed after 2 attempts; last error:") || !strings.Contains(info.Reason, "disk full") {
			t.Errorf("reason = %q", info.Reason)
		}
		if c, a := f.store.task(info.ID, "c"), f.store.task(info.ID, "a"); c.Status != hearth.TaskPending || a.Status != hearth.TaskSucceeded {
			t.Errorf("a %s, c %s; want a succeeded, c still pending", a.Status, c.Status)
		}
	})
	t.Run("pause", func(t *testing.T) {
		p := pipe("pause", []string{"a", "permanent:bad input"})
		p.OnFailure = hearth.OnFailurePause
		info, err := f.start(p, hearth.RunOptions{})
		if info.Status != hearth.RunPaused || err == nil {
			t.Fatalf("got %+v, %v; want the run paused", info, err)
		}
		if !strings.Contains(info.Reason, "will not be retried (the failure is permanent)") {
			t.Errorf("reason = %q", info.Reason)
		}
		if a := f.store.task(info.ID, "a"); a.Attempts != 1 {
			t.Errorf("a permanent failure was tried %d times", a.Attempts)
		}
	})
}

func TestRunBudgetStopsAdmission(t *testing.T) {
	f := newFixture(t)
	p := pipe("budget", []string{"a", "cost:5"}, []string{"b", "cost:5", "a"}, []string{"c", "cost:1;attempt", "b"})
	p.Budget = 8
	p.OnFailure = hearth.OnFailurePause
	info, err := f.start(p, hearth.RunOptions{})
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want the run paused at its budget", info, err)
	}
	if !strings.Contains(info.Reason, "task c was not started: the run has spent 10.00 of its budget of 8.00") || info.Cost != 10 {
		t.Errorf("reason = %q, cost %v", info.Reason, info.Cost)
	}
	info, err = f.wait(f.runs.Resume(context.Background(), info.ID, hearth.ResumeOptions{Budget: 20}))
	if err != nil || info.Cost != 11 || info.Budget != 20 {
		t.Fatalf("after resume: %+v, %v", info, err)
	}
	// Only c ran after the resume.
	if out := f.store.current(t, info.ID, "c").Output; out != "attempt=1 key="+info.ID+"/c/1" {
		t.Errorf("c = %q", out)
	}
}

func TestRunQualityGateSendsWorkBack(t *testing.T) {
	gate := func(loops int) guard.Spec {
		return guard.Spec{Name: "script-quality", Hook: guard.TaskResult, Action: guard.SendBack, To: "script",
			MaxLoops: loops, Tasks: []string{"evaluate"}, Condition: "result.metrics.quality < 0.85", Message: "tighten the opening"}
	}
	newPipe := func() *hearth.Pipeline {
		return pipe("podcast",
			[]string{"research", "echo:notes"},
			[]string{"script", "attempt;feedback;prompt", "research"},
			[]string{"evaluate", "roundmetric:quality=0.7,0.8,0.9;echo:report", "script"},
			[]string{"synthesize", "echo:audio", "evaluate"})
	}
	t.Run("passes on the third loop", func(t *testing.T) {
		f := newFixture(t)
		f.guard(gate(3))
		info, err := f.start(newPipe(), hearth.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outs := f.store.outputsByTask(info.ID)
		if n := len(outs["script"]); n != 3 {
			t.Fatalf("script has %d versions, want 3", n)
		}
		script := f.store.current(t, info.ID, "script")
		if script.Version != 3 || !strings.HasPrefix(script.Output, "attempt=1 key="+info.ID+"/script/3") {
			t.Errorf("current script = v%d %q", script.Version, strings.SplitN(script.Output, "\n", 2)[0])
		}
		for _, want := range []string{`quality gate "script-quality" sent this work back (loop 2 of 3): tighten the opening`, "Its report:\nreport"} {
			if !strings.Contains(script.Output, want) {
				t.Errorf("the script's last feedback lacks %q:\n%s", want, script.Output)
			}
		}
		if !strings.HasSuffix(script.Output, " attempt;feedback;prompt") || strings.Contains(script.Output, "# Feedback") {
			t.Errorf("the script's prompt was rewritten:\n%s", script.Output)
		}
		if outs["script"][0].Version == script.Version || f.store.task(info.ID, "evaluate").Version == outs["evaluate"][0].Version ||
			len(outs["research"]) != 1 || len(outs["synthesize"]) != 1 {
			t.Errorf("versions: %+v", outs)
		}
		if loops := f.store.head(t, info.ID).GateLoops; loops["script-quality"] != 2 {
			t.Errorf("gate loops = %v", loops)
		}
	})
	t.Run("gives up at its loop limit", func(t *testing.T) {
		f := newFixture(t)
		f.guard(gate(1))
		info, err := f.start(newPipe(), hearth.RunOptions{})
		if info.Status != hearth.RunFailed || err == nil {
			t.Fatalf("got %+v, %v; want the run failed at the gate's limit", info, err)
		}
		if !strings.Contains(info.Reason, "quality gate script-quality still fails after 1 loops: tighten the opening") {
			t.Errorf("reason = %q", info.Reason)
		}
		// Issue 14: the gate's last message read "loop 2 of 1".
		msgs := strings.Join(f.messages(info.ID), "\n")
		if !strings.Contains(msgs, "still failing at its limit of 1 loops; kept for review") || strings.Contains(msgs, "loop 2 of 1") {
			t.Errorf("gate messages:\n%s\nwant the last to say it is at its limit, never loop 2 of 1", msgs)
		}
	})
}

func TestRunStateOwnership(t *testing.T) {
	f := newFixture(t)
	p := &hearth.Pipeline{Name: "owned", Tasks: []*hearth.PipelineTask{
		{Name: "draft", Agent: "writer", Prompt: `set:draft={"words":120};get:inputs`},
		{Name: "review", Agent: "reader", Prompt: `get:draft;set:draft={"words":0}`, DependsOn: []string{"draft"}},
	}}
	p.State.Initial = map[string]json.RawMessage{"inputs": json.RawMessage(`{"topic":"tides"}`)}
	p.State.Owners = []*hearth.Owner{{Agent: "writer", Writes: []string{"draft"}}, {Agent: "reader", Reads: []string{"draft"}}}
	info, err := f.start(p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed || err == nil {
		t.Fatalf("got %+v, %v; want the run failed", info, err)
	}
	review := f.store.task(info.ID, "review")
	if review.Attempts != 1 || !strings.Contains(review.Error, `agent "reader" may not write section "draft" of run `+info.ID+`'s state; it writes none`) {
		t.Errorf("review = %+v; want one attempt refused, naming the agent and section", review)
	}
	if state := string(f.store.head(t, info.ID).State); state != `{"draft":{"words":120},"inputs":{"topic":"tides"}}` {
		t.Errorf("state = %s", state)
	}
	if out := f.store.current(t, info.ID, "draft").Output; out != `{"topic":"tides"}` {
		t.Errorf("draft read %q", out)
	}
}

// awaitTask waits until task of run id has status st, as written.
func (f *fixture) awaitTask(id, task string, st hearth.TaskStatus) {
	f.t.Helper()
	f.store.await(f.t, "task "+task+" "+string(st), func() bool { return f.store.task(id, task).Status == st })
}

func TestRunPauseResumeAndCancel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	release := filepath.Join(t.TempDir(), "release")
	p := pipe("long", []string{"a", "attempt;wait:" + release}, []string{"b", "echo:b", "a"})
	h, err := f.runs.Start(ctx, p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.awaitTask(h.ID, "a", hearth.TaskRunning)
	if err := f.runs.Pause(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	info, err := f.wait(h, nil)
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want paused", info, err)
	}
	if a := f.store.task(h.ID, "a"); a.Status != hearth.TaskPending || a.Attempts != 1 || a.Failures != 0 || !strings.HasPrefix(a.Reason, "interrupted: paused on request") {
		t.Errorf("a = %+v; want it pending, interrupted, not failed", a)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if info, err = f.wait(f.runs.Resume(ctx, h.ID[:len(h.ID)-2], hearth.ResumeOptions{})); err != nil { // a unique prefix will do
		t.Fatal(err)
	}
	if out := f.store.current(t, info.ID, "a").Output; out != "attempt=2 key="+info.ID+"/a/1" {
		t.Errorf("a after resume = %q, want its second attempt", out)
	}
	// The interruption used no attempt up: the second delivery is still
	// the first attempt counted against the limit.
	if msgs := f.messages(info.ID); !slices.Contains(msgs, "a: pending -> running: attempt 1 of 3") || slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "attempt 2 of 3") }) {
		t.Errorf("events = %q, want a's resumed attempt counted as 1 of 3", msgs)
	}

	// Cancelling is final.
	h, err = f.runs.Start(ctx, pipe("doomed", []string{"a", "wait:" + release + "-never"}, []string{"b", "echo:b", "a"}), hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.awaitTask(h.ID, "a", hearth.TaskRunning)
	if err := f.runs.Cancel(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if info, _ := f.wait(h, nil); info.Status != hearth.RunCancelled || info.Skipped != 2 {
		t.Errorf("cancelled run = %+v, want both tasks skipped", info)
	}
	_, err = f.runs.Resume(ctx, h.ID, hearth.ResumeOptions{})
	if !errors.Is(err, hearth.ErrIllegalTransition) || !strings.Contains(err.Error(), "is cancelled; it cannot become running") {
		t.Errorf("resume of a cancelled run: %v", err)
	}
}

// snapshot is everything the store holds of a run, as JSON.
func (f *fixture) snapshot(id string) string {
	f.t.Helper()
	tasks, _ := f.store.RunTasks(id)
	outs, _ := f.store.TaskOutputs(id)
	cps, _ := f.store.Checkpoints(id)
	b, err := json.Marshal([]any{f.store.head(f.t, id), tasks, outs, cps, f.store.runEvents(id)})
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func TestRunForkLeavesTheOriginUntouched(t *testing.T) {
	f := newFixture(t)
	p := pipe("story",
		[]string{"elements", "set:premise=\"a lighthouse\";echo:elements"},
		[]string{"outline", "get:premise", "elements"},
		[]string{"ending", "get:premise;attempt", "outline"})
	origin, err := f.start(p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := f.snapshot(origin.ID)
	// Checkpoint 2 follows "elements": the fork keeps it and writes its
	// own outline and ending with another premise.
	fork, err := f.wait(f.runs.Fork(context.Background(), origin.ID, 2, hearth.ForkOptions{State: map[string]json.RawMessage{"premise": json.RawMessage(`"a submarine"`)}}))
	if err != nil {
		t.Fatal(err)
	}
	if fork.ForkedFrom != origin.ID || fork.ForkedAt != 2 {
		t.Errorf("fork = %+v", fork)
	}
	if e, o := f.store.current(t, fork.ID, "elements"), f.store.current(t, origin.ID, "elements"); e.Session != o.Session || e.Time != o.Time {
		t.Errorf("the fork ran elements again: %+v vs %+v", e, o)
	}
	if got := f.store.current(t, fork.ID, "ending").Output; got != `"a submarine" attempt=1 key=`+fork.ID+"/ending/1" {
		t.Errorf("fork's ending = %q", got)
	}
	if got := f.store.current(t, origin.ID, "ending").Output; !strings.HasPrefix(got, `"a lighthouse"`) {
		t.Errorf("origin's ending = %q", got)
	}
	if after := f.snapshot(origin.ID); after != before {
		t.Errorf("the fork changed its origin:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := f.runs.Fork(context.Background(), origin.ID, 99, hearth.ForkOptions{}); err == nil || !strings.Contains(err.Error(), "has no checkpoint 99; its checkpoints are 1 to 5") {
		t.Errorf("fork at a missing checkpoint: %v", err)
	}
}

func TestRunRevisitByImpact(t *testing.T) {
	f := newFixture(t)
	p := pipe("essay",
		[]string{"thesis", "echo:thesis"},
		[]string{"outline", "echo:outline", "thesis"},
		[]string{"arguments", "echo:arguments", "outline"},
		[]string{"draft", "echo:draft", "arguments"})
	info, err := f.start(p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revisit := func(task string, impact hearth.Impact, opts hearth.RevisitOptions) {
		t.Helper()
		if _, err := f.wait(f.runs.Revisit(context.Background(), info.ID, task, impact, opts)); err != nil {
			t.Fatal(err)
		}
	}
	versions := func() (vs []int, review []string) {
		for _, pt := range p.Tasks {
			rt := f.store.task(info.ID, pt.Name)
			vs = append(vs, rt.Version)
			if rt.NeedsReview {
				review = append(review, rt.Name)
			}
		}
		return vs, review
	}
	revisit("outline", hearth.ImpactMinor, hearth.RevisitOptions{Reason: "reword section 2"})
	if vs, review := versions(); !slices.Equal(vs, []int{1, 2, 1, 1}) || !slices.Equal(review, []string{"arguments", "draft"}) {
		t.Errorf("minor: versions %v, review %v", vs, review)
	}
	revisit("thesis", hearth.ImpactModerate, hearth.RevisitOptions{Reason: "narrow the claim"})
	if vs, review := versions(); !slices.Equal(vs, []int{2, 3, 1, 1}) || !slices.Equal(review, []string{"arguments", "draft"}) {
		t.Errorf("moderate: versions %v, review %v", vs, review)
	}
	revisit("thesis", hearth.ImpactMajor, hearth.RevisitOptions{Reason: "argument to explainer"})
	if vs, review := versions(); !slices.Equal(vs, []int{3, 4, 2, 2}) || len(review) != 0 {
		t.Errorf("major: versions %v, review %v", vs, review)
	}
	if revs := f.store.head(t, info.ID).Revisions; len(revs) != 3 || !slices.Equal(revs[2].Archived, []string{"thesis v2", "outline v3", "arguments v1", "draft v1"}) {
		t.Errorf("revisions = %+v", revs)
	}
	outs := f.store.outputsByTask(info.ID)
	if n := len(outs["outline"]); n != 4 || f.store.current(t, info.ID, "outline") != outs["outline"][3] {
		t.Errorf("outline versions = %+v", outs["outline"])
	}
	if !strings.Contains(f.store.current(t, info.ID, "thesis").Artifact.KeyDecisions[0], "echo:thesis") {
		t.Errorf("thesis artifact = %+v", f.store.current(t, info.ID, "thesis").Artifact)
	}
	if _, err := f.runs.Revisit(context.Background(), info.ID, "draft", hearth.ImpactModerate, hearth.RevisitOptions{Affects: []string{"thesis"}}); err == nil ||
		!strings.Contains(err.Error(), `"thesis" is not downstream of it`) {
		t.Errorf("revisit affecting an upstream task: %v", err)
	}
}

func TestRunTransitionGuardPausesUntilStateIsFixed(t *testing.T) {
	f := newFixture(t)
	f.guard(guard.Spec{Name: "midterms", Hook: guard.Transition, From: []string{"collecting_inputs"},
		Condition: "any(state.courses, (.midterm ?? '') == '')", Message: "each course needs a midterm date"})
	p := pipe("plan", []string{"collect", `set:courses=[{"name":"calc"}]`}, []string{"plan", "echo:plan", "collect"})
	p.Tasks[0].Stage, p.Tasks[1].Stage = "collecting_inputs", "planning"
	info, err := f.start(p, hearth.RunOptions{})
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want paused by the guard", info, err)
	}
	if !strings.Contains(info.Reason, "stage collecting_inputs -> planning blocked by guard midterms: each course needs a midterm date") {
		t.Errorf("reason = %q", info.Reason)
	}
	info, err = f.wait(f.runs.Resume(context.Background(), info.ID, hearth.ResumeOptions{State: map[string]json.RawMessage{"courses": json.RawMessage(`[{"name":"calc","midterm":"2026-12-01"}]`)}}))
	if err != nil || info.Stage != "completed" {
		t.Fatalf("after the fix: %+v, %v", info, err)
	}
}

func TestRunValidationOnResume(t *testing.T) {
	f := newFixture(t)
	p := pipe("check", []string{"a", "echo:a"}, []string{"b", "echo:b", "a"}, []string{"c", "fail:stop here", "b"})
	p.Retry.Attempts = 1
	info, _ := f.start(p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed {
		t.Fatalf("run = %+v", info)
	}
	// Point b at an output that does not exist, as a damaged data
	// directory would.
	b := f.store.task(info.ID, "b")
	b.Version = 7
	if err := f.store.SaveRun(info.ID, record.RunWrite{Tasks: []*record.Task{&b}}).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := f.runs.Resume(context.Background(), info.ID, hearth.ResumeOptions{})
	var ie *hearth.InvalidRunError
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Task != "b" || !strings.Contains(err.Error(), "its output v7 no longer exists (repair: run it again)") {
		t.Fatalf("resume: %v", err)
	}
	f.wait(f.runs.Resume(context.Background(), info.ID, hearth.ResumeOptions{Repair: true}))
	if b := f.store.task(info.ID, "b"); b.Status != hearth.TaskSucceeded || b.Version != 8 {
		t.Errorf("b after repair = %+v, want it run again as v8", b)
	}
}

func TestRunGoAPIValidation(t *testing.T) {
	f := newFixture(t)
	p := pipe("bad", []string{"a", "echo:a", "c"}, []string{"b", "echo:b", "a"}, []string{"c", "echo:c", "b"})
	p.Tasks = append(p.Tasks, &hearth.PipelineTask{Name: "x", Agent: "nobody", Prompt: "echo"})
	_, err := f.runs.Start(context.Background(), p, hearth.RunOptions{})
	for _, want := range []string{"depend on each other in a circle: a -> c -> b -> a", `task "x": no such agent "nobody"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

// TestRunPlacesContextWhereThePromptSays: a prompt that holds
// {{context}} gets the ancestors' rendered block there, once (not again
// beside it); a prompt without it reaches the agent as written, the block
// beside it.
func TestRunPlacesContextWhereThePromptSays(t *testing.T) {
	f := newFixture(t)
	p := pipe("placed",
		[]string{"a", "read:src/a.go;echo:a"},
		[]string{"b", "verbatim:Summarize.\n\n" + hearth.ContextPlaceholder + "\nEnd.", "a"},
		[]string{"c", "verbatim:As written.", "a"},
	)
	info, err := f.start(p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != hearth.RunCompleted {
		t.Fatalf("run = %+v, want completed", info)
	}
	prompt, ctx, _ := strings.Cut(f.store.current(t, info.ID, "b").Output, "|context=")
	if !strings.HasPrefix(prompt, "Summarize.\n\n# Context from Previous Steps") || !strings.HasSuffix(prompt, "\nEnd.") || !strings.Contains(prompt, "src/a.go") {
		t.Errorf("b's prompt:\n%s\nwant the block placed between its lines", prompt)
	}
	if ctx != "" {
		t.Errorf("b was given the block again beside its prompt:\n%s", ctx)
	}
	prompt, ctx, _ = strings.Cut(f.store.current(t, info.ID, "c").Output, "|context=")
	if prompt != "As written." || !strings.Contains(ctx, "# Context from Previous Steps") {
		t.Errorf("c got prompt %q and context %q; want its prompt as written and the block beside it", prompt, ctx)
	}
}

// TestRunAdmissionRefusalAfterAStart: a task refused admission in the
// same scheduling pass as a task that started escalates the run, and the
// started task still runs to its end (it used to be recorded as running
// and never launched, and the run never stopped).
func TestRunAdmissionRefusalAfterAStart(t *testing.T) {
	f := newFixture(t)
	f.guard(guard.Spec{Name: "not-b", Hook: guard.TaskAdmission, Tasks: []string{"b"}, Condition: "true", Message: "b is not admitted"})
	p := pipe("admit", []string{"a", "sleep:50ms;echo:a"}, []string{"b", "echo:b"})
	p.Parallel = 4
	info, err := f.start(p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed || err == nil || !strings.Contains(info.Reason, "b is not admitted") {
		t.Fatalf("run: %s (%s), %v; want failed by the admission guard", info.Status, info.Reason, err)
	}
	if a, b := f.store.task(info.ID, "a"), f.store.task(info.ID, "b"); a.Status != hearth.TaskSucceeded || b.Status != hearth.TaskPending {
		t.Errorf("a %s, b %s; want a finished (it was in flight) and b never started", a.Status, b.Status)
	}
}

// TestRunGateDiscardsResultsOfAResetRound: a quality gate sends the work
// back past a task that is still running; when that attempt ends, its
// result belongs to a round that is over and is discarded, and the task
// runs again in the new round.
func TestRunGateDiscardsResultsOfAResetRound(t *testing.T) {
	f := newFixture(t)
	f.guard(guard.Spec{Name: "quality", Hook: guard.TaskResult, Action: guard.SendBack, To: "research", MaxLoops: 2,
		Tasks: []string{"evaluate"}, Condition: "result.metrics.quality < 0.8", Message: "dig deeper"})
	release := filepath.Join(t.TempDir(), "release")
	p := pipe("gate",
		[]string{"research", "echo:notes"},
		[]string{"side", "wait:" + release + ";attempt", "research"},
		[]string{"evaluate", "roundmetric:quality=0.5,0.9", "research"})
	p.Parallel = 2
	h, err := f.runs.Start(context.Background(), p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID
	f.store.await(t, "the gate", func() bool { return slices.Contains(f.kinds(id), string(hearth.EventRunGate)) })
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := f.wait(h, nil)
	if err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("run: %s (%s), %v; want completed", info.Status, info.Reason, err)
	}
	if side := f.store.outputsByTask(id)["side"]; len(side) != 1 || side[0].Round != 2 || !strings.Contains(side[0].Output, id+"/side/2") {
		t.Errorf("side's outputs %+v; want only round 2's", side)
	}
	if !slices.ContainsFunc(f.messages(id), func(m string) bool {
		return strings.Contains(m, "side: attempt 1 of round 1 ended after its round was reset")
	}) {
		t.Error("no event says the stale attempt's result was discarded")
	}
}

// TestRunRevisitChecksBeforeRevising: a revisit that cannot resume the
// run (a file is gone) changes nothing; it used to record the revision
// and reset the tasks first.
func TestRunRevisitChecksBeforeRevising(t *testing.T) {
	f := newFixture(t)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := f.start(pipe("essay", []string{"a", "files"}, []string{"b", "echo:b", "a"}), hearth.RunOptions{Files: []string{notes}})
	if err != nil {
		t.Fatal(err)
	}
	before := f.snapshot(info.ID)
	files := f.store.head(t, info.ID).Files
	if err := os.Remove(f.store.BlobPath(files[0].SHA256)); err != nil {
		t.Fatal(err)
	}
	_, err = f.runs.Revisit(context.Background(), info.ID, "a", hearth.ImpactMajor, hearth.RevisitOptions{Reason: "redo"})
	if !errors.Is(err, hearth.ErrRunInvalid) || !strings.Contains(err.Error(), "missing from the file store") {
		t.Fatalf("revisit with a missing file: %v; want the validation error", err)
	}
	if after := f.snapshot(info.ID); after != before {
		t.Errorf("a refused revisit changed the run:\nbefore %s\nafter  %s", before, after)
	}
}

// TestRetentionPausesAbandonsThenDeletes walks a run through its
// retention on a clock the test moves: idle past pause_after while it
// waits for a retry, it is paused; past abandon_after, flagged abandoned;
// past delete_after, deleted with its outputs and files, the deletion
// being its last event.
func TestRetentionPausesAbandonsThenDeletes(t *testing.T) {
	f := newFixture(t)
	clock := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	f.now = clock.Now

	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("chapter 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The task fails once and is retried after an hour of the test's
	// clock, which never comes: the run sits idle, waiting.
	p := pipe("idle", []string{"ingest", "files;failuntil:2"})
	p.Retry = hearth.Retry{Attempts: 3, Backoff: 1000 * time.Hour, MaxBackoff: 1000 * time.Hour}
	p.Retention = hearth.Retention{PauseAfter: 24 * time.Hour, AbandonAfter: 7 * 24 * time.Hour, DeleteAfter: 30 * 24 * time.Hour}
	h, err := f.runs.Start(context.Background(), p, hearth.RunOptions{Files: []string{notes}})
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID
	f.awaitTask(id, "ingest", hearth.TaskRetrying)
	files := f.store.head(t, id).Files
	if len(files) != 1 {
		t.Fatalf("files %+v; want notes.txt", files)
	}
	blob := f.store.BlobPath(files[0].SHA256)

	clock.Advance(24*time.Hour + time.Minute)
	f.runs.Sweep()
	info, err := f.wait(h, nil)
	if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, "paused by retention (pause_after 24h0m0s)") {
		t.Fatalf("after 24h idle: %s (%s), %v; want paused by retention", info.Status, info.Reason, err)
	}

	clock.Advance(7 * 24 * time.Hour)
	f.runs.Sweep()
	evs := f.store.runEvents(id)
	if e := evs[len(evs)-1]; e.Kind != hearth.EventRunAbandoned || !strings.Contains(e.Message, "abandon_after 168h") {
		t.Errorf("last event %s %q; want the abandonment", e.Kind, e.Message)
	}
	if head := f.store.head(t, id); !head.Abandoned || head.Status != hearth.RunPaused {
		t.Fatalf("after a week paused: %+v; want paused and flagged abandoned", head)
	}

	clock.Advance(30 * 24 * time.Hour)
	f.runs.Sweep()
	evs = f.store.runEvents(id)
	if e := evs[len(evs)-1]; e.Kind != hearth.EventRunDeleted || !strings.Contains(e.Message, "delete_after 720h") || !strings.Contains(e.Message, "1 file(s)") {
		t.Errorf("last event %s %q; want the deletion", e.Kind, e.Message)
	}
	if _, err := f.store.RunRecord(id); !errors.Is(err, hearth.ErrUnknownRun) {
		t.Errorf("the run is still there after its deletion: %v", err)
	}
	if _, err := os.Stat(blob); !os.IsNotExist(err) {
		t.Errorf("the run's file %s: %v; want it removed", blob, err)
	}
}

// TestABadCostLeavesTheBudget: a cost an agent reports that is not a
// finite number of at least 0 (NaN, ±Inf, negative), in its progress or
// its result, counts nothing: the budget still stops the run at what the
// other tasks spent. A NaN added to the run's cost made it NaN for good,
// and NaN is never at or over a budget: every later task of the run, of
// whichever agent, ran unbudgeted (and the run's record no longer
// encoded as JSON).
func TestABadCostLeavesTheBudget(t *testing.T) {
	for _, bad := range []string{"NaN", "+Inf", "-Inf", "-5"} {
		t.Run(bad, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			p := pipe("budget", []string{"a", "cost:" + bad + ";progress:0.5"}, []string{"b", "cost:5", "a"}, []string{"c", "cost:5", "b"}, []string{"d", "echo:late", "c"})
			p.Budget = 8
			p.OnFailure = hearth.OnFailurePause
			info, err := f.start(p, hearth.RunOptions{})
			if info.Status != hearth.RunPaused || err == nil || info.Cost != 10 {
				t.Fatalf("a reported a cost of %s: run %s (%s), cost %v, %v; want it paused at its budget, cost 10", bad, info.Status, info.Reason, info.Cost, err)
			}
			if !strings.Contains(info.Reason, "task d was not started: the run has spent 10.00 of its budget of 8.00") {
				t.Errorf("reason = %q", info.Reason)
			}
			if a := f.store.task(info.ID, "a"); a.Cost != 0 {
				t.Errorf("a's cost is %v, want 0", a.Cost)
			}
		})
	}
}
