package engine

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

// runTimeout bounds each run a test waits for.
const runTimeout = 2 * time.Minute

// pipe builds a pipeline of the scripted agent's tasks: name, prompt, and
// the tasks it depends on.
func pipe(name string, tasks ...[]string) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: name}
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, &hearth.PipelineTask{Name: t[0], Agent: "scripted", Prompt: t[1], DependsOn: t[2:]})
	}
	p.Retry = hearth.Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	return p
}

func startRun(t *testing.T, h *Engine, p *hearth.Pipeline, opts hearth.RunOptions) (hearth.RunInfo, error) {
	t.Helper()
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	return waitRun(t, rh)
}

func waitRun(t *testing.T, rh hearth.RunWatch) (hearth.RunInfo, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	info, err := rh.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run %s did not stop within %s", rh.ID(), runTimeout)
	}
	return info, err
}

func outputsOf(t *testing.T, h *Engine, id string) map[string][]hearth.TaskOutput {
	t.Helper()
	outs, err := h.RunOutputs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string][]hearth.TaskOutput)
	for _, o := range outs {
		m[o.Task] = append(m[o.Task], o)
	}
	return m
}

// current returns the current output of task.
func current(t *testing.T, outs map[string][]hearth.TaskOutput, task string) hearth.TaskOutput {
	t.Helper()
	for _, o := range outs[task] {
		if o.Current {
			return o
		}
	}
	t.Fatalf("task %s has no current output: %+v", task, outs[task])
	return hearth.TaskOutput{}
}

func runEventKinds(t *testing.T, h *Engine, id string) []string {
	t.Helper()
	evs, err := h.RunEvents(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		s := string(e.Kind)
		if e.From != "" || e.To != "" {
			s += " " + e.Task + ":" + e.From + ">" + e.To
		}
		out = append(out, s)
	}
	return out
}

// runEventMessages is the messages of run id's events, in order.
func runEventMessages(t *testing.T, h *Engine, id string) []string {
	t.Helper()
	evs, err := h.RunEvents(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Message)
	}
	return out
}

func TestRunChainsContextAndCheckpointsEachTask(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("chain",
		[]string{"a", "read:src/a.go;echo:a"},
		[]string{"b", "upstream;context;prompt", "a"},
		[]string{"c", "echo:c;attempt;upstream", "b"},
	)
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != hearth.RunCompleted || info.Succeeded != 3 || info.Progress != 1 {
		t.Fatalf("run = %+v, want completed with 3 tasks", info)
	}
	outs := outputsOf(t, h, info.ID)
	// b's context comes beside its prompt, which reaches it as written.
	b := current(t, outs, "b").Output
	if !strings.HasPrefix(b, "a@1 ") || !strings.HasSuffix(b, " upstream;context;prompt") {
		t.Errorf("b saw %q; want upstream a@1 and its prompt as written", b)
	}
	for _, want := range []string{"# Context from Previous Steps", `learned from the "a" session`, "src/a.go", `ran "read:src/a.go;echo:a"`, "Use this knowledge to maintain consistency."} {
		if !strings.Contains(b, want) {
			t.Errorf("b's context lacks %q:\n%s", want, b)
		}
	}
	// c's upstream has b (distance 1), then a (distance 2).
	if c := current(t, outs, "c"); c.Output != "c attempt=1 key="+info.ID+"/c/1 b@1,a@1" || c.Version != 1 {
		t.Errorf("c = %+v", c)
	}
	cps, err := h.RunCheckpoints(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, c := range cps {
		labels = append(labels, c.Label)
	}
	want := []string{"created", "task a succeeded", "task b succeeded", "task c succeeded", "run completed"}
	if !slices.Equal(labels, want) {
		t.Errorf("checkpoints = %q, want %q", labels, want)
	}
	if cps[2].Succeeded != 2 || cps[2].Parent != 2 {
		t.Errorf("checkpoint 3 = %+v, want 2 tasks succeeded, parent 2", cps[2])
	}
	kinds := runEventKinds(t, h, info.ID)
	for _, want := range []string{"run.created", "run.status :created>running", "run.task a:pending>running", "run.task a:running>succeeded", "run.context", "run.status :running>completed"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("events lack %q: %q", want, kinds)
		}
	}
}

func TestRunRetriesThenSucceeds(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	info, err := startRun(t, h, pipe("retry", []string{"flaky", "failuntil:3;attempt"}), hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Run(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	task := d.TaskList[0]
	if task.Status != hearth.TaskSucceeded || task.Attempt != 3 || task.Failures != 2 || len(task.Errors) != 2 {
		t.Errorf("task = %+v, want succeeded on attempt 3 after 2 recorded failures", task)
	}
	if !strings.Contains(task.Errors[1], "attempt 2 fails, as scripted") {
		t.Errorf("errors = %q", task.Errors)
	}
	// Every attempt of a task's round shares its idempotency key.
	if out := current(t, outputsOf(t, h, info.ID), "flaky").Output; out != "attempt=3 key="+info.ID+"/flaky/1" {
		t.Errorf("output = %q", out)
	}
	if kinds := runEventKinds(t, h, info.ID); !slices.Contains(kinds, "run.task flaky:running>retrying") || !slices.Contains(kinds, "run.task flaky:retrying>running") {
		t.Errorf("events lack the retries: %q", kinds)
	}
	msgs := runEventMessages(t, h, info.ID)
	for _, want := range []string{"flaky: pending -> running: attempt 1 of 3", "attempt 2 of 3 failed; next in", "flaky: retrying -> running: attempt 3 of 3"} {
		if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, want) || strings.Contains(m, ": "+want) }) {
			t.Errorf("events lack %q: %q", want, msgs)
		}
	}
}

func TestRunEscalatesByConfig(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	t.Run("fail", func(t *testing.T) {
		p := pipe("fail", []string{"a", "echo:a"}, []string{"b", "fail:disk full", "a"}, []string{"c", "echo:c", "b"})
		p.Retry.Attempts = 2
		info, err := startRun(t, h, p, hearth.RunOptions{})
		var re *hearth.RunError
		if !errors.As(err, &re) || info.Status != hearth.RunFailed {
			t.Fatalf("got %+v, %v; want the run failed", info, err)
		}
		if !strings.Contains(info.Reason, "task b failed after 2 attempts; last error:") || !strings.Contains(info.Reason, "disk full") {
			t.Errorf("reason = %q", info.Reason)
		}
		d, _ := h.Run(context.Background(), info.ID)
		if d.TaskList[2].Status != hearth.TaskPending || d.TaskList[0].Status != hearth.TaskSucceeded {
			t.Errorf("tasks = %+v; want a succeeded, c still pending", d.TaskList)
		}
	})
	t.Run("pause", func(t *testing.T) {
		p := pipe("pause", []string{"a", "permanent:bad input"})
		p.OnFailure = hearth.OnFailurePause
		info, err := startRun(t, h, p, hearth.RunOptions{})
		if info.Status != hearth.RunPaused || err == nil {
			t.Fatalf("got %+v, %v; want the run paused", info, err)
		}
		if !strings.Contains(info.Reason, "will not be retried (the failure is permanent)") {
			t.Errorf("reason = %q", info.Reason)
		}
		d, _ := h.Run(context.Background(), info.ID)
		if d.TaskList[0].Attempt != 1 {
			t.Errorf("a permanent failure was tried %d times", d.TaskList[0].Attempt)
		}
	})
}

func TestRunBudgetStopsAdmission(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("budget", []string{"a", "cost:5"}, []string{"b", "cost:5", "a"}, []string{"c", "cost:1;attempt", "b"})
	p.Budget = 8
	p.OnFailure = hearth.OnFailurePause
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want the run paused at its budget", info, err)
	}
	if !strings.Contains(info.Reason, "task c was not started: the run has spent 10.00 of its budget of 8.00") || info.Cost != 10 {
		t.Errorf("reason = %q, cost %v", info.Reason, info.Cost)
	}
	rh, err := h.ResumeRun(context.Background(), info.ID, hearth.ResumeOptions{Budget: 20})
	if err != nil {
		t.Fatal(err)
	}
	info, err = waitRun(t, rh)
	if err != nil || info.Cost != 11 || info.Budget != 20 {
		t.Fatalf("after resume: %+v, %v", info, err)
	}
	// Only c ran after the resume.
	if out := current(t, outputsOf(t, h, info.ID), "c").Output; out != "attempt=1 key="+info.ID+"/c/1" {
		t.Errorf("c = %q", out)
	}
}

func TestRunQualityGateSendsWorkBack(t *testing.T) {
	gate := func(loops int) *guard.Rule {
		r, err := guard.Compile(guard.Spec{Name: "script-quality", Hook: guard.TaskResult, Action: guard.SendBack, To: "script",
			MaxLoops: loops, Tasks: []string{"evaluate"}, Condition: "result.metrics.quality < 0.85", Message: "tighten the opening"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	newPipe := func() *hearth.Pipeline {
		return pipe("podcast",
			[]string{"research", "echo:notes"},
			[]string{"script", "attempt;feedback;prompt", "research"},
			[]string{"evaluate", "roundmetric:quality=0.7,0.8,0.9;echo:report", "script"},
			[]string{"synthesize", "echo:audio", "evaluate"})
	}
	t.Run("passes on the third loop", func(t *testing.T) {
		h := newTestHost(t, testAgent("scripted", "agent"))
		h.cfg.Guards = []*guard.Rule{gate(3)}
		h.guards.Store(h.cfg.GuardSet())
		info, err := startRun(t, h, newPipe(), hearth.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outs := outputsOf(t, h, info.ID)
		if n := len(outs["script"]); n != 3 {
			t.Fatalf("script has %d versions, want 3", n)
		}
		script := current(t, outs, "script")
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
		if outs["script"][0].Current || outs["evaluate"][0].Current || len(outs["research"]) != 1 || len(outs["synthesize"]) != 1 {
			t.Errorf("versions: %+v", outs)
		}
		d, _ := h.Run(context.Background(), info.ID)
		if d.GateLoops["script-quality"] != 2 {
			t.Errorf("gate loops = %v", d.GateLoops)
		}
	})
	t.Run("gives up at its loop limit", func(t *testing.T) {
		h := newTestHost(t, testAgent("scripted", "agent"))
		h.cfg.Guards = []*guard.Rule{gate(1)}
		h.guards.Store(h.cfg.GuardSet())
		info, err := startRun(t, h, newPipe(), hearth.RunOptions{})
		if info.Status != hearth.RunFailed || err == nil {
			t.Fatalf("got %+v, %v; want the run failed at the gate's limit", info, err)
		}
		if !strings.Contains(info.Reason, "quality gate script-quality still fails after 1 loops: tighten the opening") {
			t.Errorf("reason = %q", info.Reason)
		}
		// Issue 14: the gate's last message read "loop 2 of 1".
		msgs := strings.Join(runEventMessages(t, h, info.ID), "\n")
		if !strings.Contains(msgs, "still failing at its limit of 1 loops; kept for review") || strings.Contains(msgs, "loop 2 of 1") {
			t.Errorf("gate messages:\n%s\nwant the last to say it is at its limit, never loop 2 of 1", msgs)
		}
	})
}

func TestRunStateOwnership(t *testing.T) {
	writer, reader := testAgent("writer", "agent"), testAgent("reader", "agent")
	h := newTestHost(t, writer, reader)
	p := &hearth.Pipeline{Name: "owned", Tasks: []*hearth.PipelineTask{
		{Name: "draft", Agent: "writer", Prompt: `set:draft={"words":120};get:inputs`},
		{Name: "review", Agent: "reader", Prompt: `get:draft;set:draft={"words":0}`, DependsOn: []string{"draft"}},
	}}
	p.State.Initial = map[string]json.RawMessage{"inputs": json.RawMessage(`{"topic":"tides"}`)}
	p.State.Owners = []*hearth.Owner{{Agent: "writer", Writes: []string{"draft"}}, {Agent: "reader", Reads: []string{"draft"}}}
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed || err == nil {
		t.Fatalf("got %+v, %v; want the run failed", info, err)
	}
	d, _ := h.Run(context.Background(), info.ID)
	review := d.TaskList[1]
	if review.Attempt != 1 || !strings.Contains(review.Error, `agent "reader" may not write section "draft" of run `+info.ID+`'s state; it writes none`) {
		t.Errorf("review = %+v; want one attempt refused, naming the agent and section", review)
	}
	if string(d.State) != `{"draft":{"words":120},"inputs":{"topic":"tides"}}` {
		t.Errorf("state = %s", d.State)
	}
	if out := current(t, outputsOf(t, h, info.ID), "draft").Output; out != `{"topic":"tides"}` {
		t.Errorf("draft read %q", out)
	}
}

func TestRunFilesAndChunksSurviveAPluginCrash(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	dir := t.TempDir()
	syllabus := filepath.Join(dir, "syllabus.txt")
	if err := os.WriteFile(syllabus, []byte("week 1: limits\nweek 2: series\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plugin exits after every second chunk: each crash is a failed
	// attempt, placed again on a new session, which skips what is done.
	p := pipe("ingest", []string{"ingest", "files;chunks:syllabus.txt:5:2"}, []string{"done", "files;chunks:syllabus.txt:5", "ingest"})
	info, err := startRun(t, h, p, hearth.RunOptions{Files: []string{syllabus, syllabus}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.Run(context.Background(), info.ID)
	ingest := d.TaskList[0]
	if ingest.Attempt != 3 || ingest.Failures != 2 || !strings.Contains(ingest.Errors[0], "plugin") {
		t.Errorf("ingest = %+v; want 2 crashes then success", ingest)
	}
	outs := outputsOf(t, h, info.ID)
	if got := current(t, outs, "ingest").Output; got != "syllabus.txt=30 did=4 skipped=0,1,2,3" {
		t.Errorf("ingest output = %q", got)
	}
	if got := current(t, outs, "done").Output; got != "syllabus.txt=30 did= skipped=0,1,2,3,4" {
		t.Errorf("done output = %q", got)
	}
	if len(d.Files) != 1 || d.Files[0].Size != 30 || !slices.Equal(d.Chunks["syllabus.txt"], []int{0, 1, 2, 3, 4}) {
		t.Errorf("files %+v, chunks %v", d.Files, d.Chunks)
	}
	if fi, err := os.Stat(d.Files[0].Path); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("stored file: %v, %v; want it read-only", fi, err)
	}
}

func TestRunPauseResumeAndCancel(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	release := filepath.Join(t.TempDir(), "release")
	p := pipe("long", []string{"a", "attempt;wait:" + release}, []string{"b", "echo:b", "a"})
	rh, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: hearth.RunOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskRunning(t, h, rh.ID(), "a")
	if _, err := h.PauseRun(context.Background(), rh.ID()); err != nil {
		t.Fatal(err)
	}
	info, err := waitRun(t, rh)
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want paused", info, err)
	}
	d, _ := h.Run(context.Background(), rh.ID())
	if a := d.TaskList[0]; a.Status != hearth.TaskPending || a.Attempt != 1 || a.Failures != 0 || !strings.HasPrefix(a.Reason, "interrupted: paused on request") {
		t.Errorf("a = %+v; want it pending, interrupted, not failed", a)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rh, err = h.ResumeRun(context.Background(), rh.ID()[:len(rh.ID())-2], hearth.ResumeOptions{}) // a unique prefix will do
	if err != nil {
		t.Fatal(err)
	}
	if info, err = waitRun(t, rh); err != nil {
		t.Fatal(err)
	}
	if out := current(t, outputsOf(t, h, info.ID), "a").Output; out != "attempt=2 key="+info.ID+"/a/1" {
		t.Errorf("a after resume = %q, want its second attempt", out)
	}
	// The interruption used no attempt up: the second delivery is still
	// the first attempt counted against the limit.
	if msgs := runEventMessages(t, h, info.ID); !slices.Contains(msgs, "a: pending -> running: attempt 1 of 3") || slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "attempt 2 of 3") }) {
		t.Errorf("events = %q, want a's resumed attempt counted as 1 of 3", msgs)
	}

	// Cancelling is final.
	rh, err = h.StartRun(context.Background(), hearth.RunSpec{Pipeline: pipe("doomed", []string{"a", "wait:" + release + "-never"}, []string{"b", "echo:b", "a"}), RunOptions: hearth.RunOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	waitTaskRunning(t, h, rh.ID(), "a")
	if _, err := h.CancelRun(context.Background(), rh.ID()); err != nil {
		t.Fatal(err)
	}
	if info, _ := waitRun(t, rh); info.Status != hearth.RunCancelled || info.Skipped != 2 {
		t.Errorf("cancelled run = %+v, want both tasks skipped", info)
	}
	_, err = h.ResumeRun(context.Background(), rh.ID(), hearth.ResumeOptions{})
	if !errors.Is(err, hearth.ErrIllegalTransition) || !strings.Contains(err.Error(), "is cancelled; it cannot become running") {
		t.Errorf("resume of a cancelled run: %v", err)
	}
}

// waitTaskRunning waits until a task of a run is running, from the run's
// events.
func waitTaskRunning(t *testing.T, h *Engine, run, task string) {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	sub := h.Subscribe(256)
	defer sub.Close()
	for {
		d, err := h.Run(context.Background(), run)
		if err == nil {
			for _, ti := range d.TaskList {
				if ti.Name == task && ti.Status == hearth.TaskRunning {
					return
				}
			}
		}
		select {
		case <-sub.C:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("task %s of run %s never ran", task, run)
		}
	}
}

func TestRunForkLeavesTheOriginUntouched(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("story",
		[]string{"elements", "set:premise=\"a lighthouse\";echo:elements"},
		[]string{"outline", "get:premise", "elements"},
		[]string{"ending", "get:premise;attempt", "outline"})
	origin, err := startRun(t, h, p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshotRun(t, h, origin.ID)
	// Checkpoint 2 follows "elements": the fork keeps it and writes its
	// own outline and ending with another premise.
	rh, err := h.ForkRun(context.Background(), origin.ID, 2, hearth.ForkOptions{State: map[string]json.RawMessage{"premise": json.RawMessage(`"a submarine"`)}})
	if err != nil {
		t.Fatal(err)
	}
	fork, err := waitRun(t, rh)
	if err != nil {
		t.Fatal(err)
	}
	if fork.ForkedFrom != origin.ID || fork.ForkedAt != 2 {
		t.Errorf("fork = %+v", fork)
	}
	outs := outputsOf(t, h, fork.ID)
	orig := outputsOf(t, h, origin.ID)
	if e, o := current(t, outs, "elements"), current(t, orig, "elements"); e.Session != o.Session || e.Time != o.Time {
		t.Errorf("the fork ran elements again: %+v vs %+v", e, o)
	}
	if got := current(t, outs, "ending").Output; got != `"a submarine" attempt=1 key=`+fork.ID+"/ending/1" {
		t.Errorf("fork's ending = %q", got)
	}
	if got := current(t, orig, "ending").Output; !strings.HasPrefix(got, `"a lighthouse"`) {
		t.Errorf("origin's ending = %q", got)
	}
	if after := snapshotRun(t, h, origin.ID); after != before {
		t.Errorf("the fork changed its origin:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := h.ForkRun(context.Background(), origin.ID, 99, hearth.ForkOptions{}); err == nil || !strings.Contains(err.Error(), "has no checkpoint 99; its checkpoints are 1 to 5") {
		t.Errorf("fork at a missing checkpoint: %v", err)
	}
}

// snapshotRun is everything stored about a run, as JSON.
func snapshotRun(t *testing.T, h *Engine, id string) string {
	t.Helper()
	d, err := h.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	outs, _ := h.RunOutputs(context.Background(), id)
	cps, _ := h.RunCheckpoints(context.Background(), id)
	evs, _ := h.RunEvents(context.Background(), id, 0)
	b, err := json.Marshal([]any{d, outs, cps, evs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunRevisitByImpact(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("essay",
		[]string{"thesis", "echo:thesis"},
		[]string{"outline", "echo:outline", "thesis"},
		[]string{"arguments", "echo:arguments", "outline"},
		[]string{"draft", "echo:draft", "arguments"})
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revisit := func(task string, impact hearth.Impact, opts hearth.RevisitOptions) hearth.RunDetail {
		t.Helper()
		rh, err := h.RevisitRun(context.Background(), info.ID, task, impact, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := waitRun(t, rh); err != nil {
			t.Fatal(err)
		}
		d, err := h.Run(context.Background(), info.ID)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	versions := func(d hearth.RunDetail) (vs []int, review []string) {
		for _, ti := range d.TaskList {
			vs = append(vs, ti.Version)
			if ti.NeedsReview {
				review = append(review, ti.Name)
			}
		}
		return vs, review
	}

	d := revisit("outline", hearth.ImpactMinor, hearth.RevisitOptions{Reason: "reword section 2"})
	if vs, review := versions(d); !slices.Equal(vs, []int{1, 2, 1, 1}) || !slices.Equal(review, []string{"arguments", "draft"}) {
		t.Errorf("minor: versions %v, review %v", vs, review)
	}
	d = revisit("thesis", hearth.ImpactModerate, hearth.RevisitOptions{Reason: "narrow the claim"})
	if vs, review := versions(d); !slices.Equal(vs, []int{2, 3, 1, 1}) || !slices.Equal(review, []string{"arguments", "draft"}) {
		t.Errorf("moderate: versions %v, review %v", vs, review)
	}
	d = revisit("thesis", hearth.ImpactMajor, hearth.RevisitOptions{Reason: "argument to explainer"})
	if vs, review := versions(d); !slices.Equal(vs, []int{3, 4, 2, 2}) || len(review) != 0 {
		t.Errorf("major: versions %v, review %v", vs, review)
	}
	if len(d.Revisions) != 3 || !slices.Equal(d.Revisions[2].Archived, []string{"thesis v2", "outline v3", "arguments v1", "draft v1"}) {
		t.Errorf("revisions = %+v", d.Revisions)
	}
	outs := outputsOf(t, h, info.ID)
	if n := len(outs["outline"]); n != 4 || outs["outline"][0].Current || !outs["outline"][3].Current {
		t.Errorf("outline versions = %+v", outs["outline"])
	}
	if !strings.Contains(current(t, outs, "thesis").Artifact.KeyDecisions[0], "echo:thesis") {
		t.Errorf("thesis artifact = %+v", current(t, outs, "thesis").Artifact)
	}
	if _, err := h.RevisitRun(context.Background(), info.ID, "draft", hearth.ImpactModerate, hearth.RevisitOptions{Affects: []string{"thesis"}}); err == nil ||
		!strings.Contains(err.Error(), `"thesis" is not downstream of it`) {
		t.Errorf("revisit affecting an upstream task: %v", err)
	}
}

func TestRunTransitionGuardPausesUntilStateIsFixed(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	rule, err := guard.Compile(guard.Spec{Name: "midterms", Hook: guard.Transition, From: []string{"collecting_inputs"},
		Condition: "any(state.courses, (.midterm ?? '') == '')", Message: "each course needs a midterm date"})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Guards = []*guard.Rule{rule}
	h.guards.Store(h.cfg.GuardSet())
	p := pipe("plan", []string{"collect", `set:courses=[{"name":"calc"}]`}, []string{"plan", "echo:plan", "collect"})
	p.Tasks[0].Stage, p.Tasks[1].Stage = "collecting_inputs", "planning"
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunPaused || err == nil {
		t.Fatalf("got %+v, %v; want paused by the guard", info, err)
	}
	if !strings.Contains(info.Reason, "stage collecting_inputs -> planning blocked by guard midterms: each course needs a midterm date") {
		t.Errorf("reason = %q", info.Reason)
	}
	rh, err := h.ResumeRun(context.Background(), info.ID, hearth.ResumeOptions{State: map[string]json.RawMessage{"courses": json.RawMessage(`[{"name":"calc","midterm":"2026-12-01"}]`)}})
	if err != nil {
		t.Fatal(err)
	}
	if info, err = waitRun(t, rh); err != nil || info.Stage != "completed" {
		t.Fatalf("after the fix: %+v, %v", info, err)
	}
}

func TestRunValidationOnResume(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("check", []string{"a", "echo:a"}, []string{"b", "echo:b", "a"}, []string{"c", "fail:stop here", "b"})
	p.Retry.Attempts = 1
	info, _ := startRun(t, h, p, hearth.RunOptions{})
	if info.Status != hearth.RunFailed {
		t.Fatalf("run = %+v", info)
	}
	// Point b at an output that does not exist, as a damaged data
	// directory would.
	recs, err := h.store.RunTasks(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	recs["b"].Version = 7
	if err := h.store.SaveRun(info.ID, record.RunWrite{Tasks: []*record.Task{recs["b"]}}).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = h.ResumeRun(context.Background(), info.ID, hearth.ResumeOptions{})
	var ie *hearth.InvalidRunError
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || ie.Problems[0].Task != "b" || !strings.Contains(err.Error(), "its output v7 no longer exists (repair: run it again)") {
		t.Fatalf("resume: %v", err)
	}
	rh, err := h.ResumeRun(context.Background(), info.ID, hearth.ResumeOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, rh)
	d, _ := h.Run(context.Background(), info.ID)
	if b := d.TaskList[1]; b.Status != hearth.TaskSucceeded || b.Version != 8 {
		t.Errorf("b after repair = %+v, want it run again as v8", b)
	}
}

func TestRunGoAPIValidation(t *testing.T) {
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("bad", []string{"a", "echo:a", "c"}, []string{"b", "echo:b", "a"}, []string{"c", "echo:c", "b"})
	p.Tasks = append(p.Tasks, &hearth.PipelineTask{Name: "x", Agent: "nobody", Prompt: "echo"})
	_, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: p, RunOptions: hearth.RunOptions{}})
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
	h := newTestHost(t, testAgent("scripted", "agent"))
	p := pipe("placed",
		[]string{"a", "read:src/a.go;echo:a"},
		[]string{"b", "verbatim:Summarize.\n\n" + hearth.ContextPlaceholder + "\nEnd.", "a"},
		[]string{"c", "verbatim:As written.", "a"},
	)
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != hearth.RunCompleted {
		t.Fatalf("run = %+v, want completed", info)
	}
	outs := outputsOf(t, h, info.ID)
	prompt, ctx, _ := strings.Cut(current(t, outs, "b").Output, "|context=")
	if !strings.HasPrefix(prompt, "Summarize.\n\n# Context from Previous Steps") || !strings.HasSuffix(prompt, "\nEnd.") || !strings.Contains(prompt, "src/a.go") {
		t.Errorf("b's prompt:\n%s\nwant the block placed between its lines", prompt)
	}
	if ctx != "" {
		t.Errorf("b was given the block again beside its prompt:\n%s", ctx)
	}
	prompt, ctx, _ = strings.Cut(current(t, outs, "c").Output, "|context=")
	if prompt != "As written." || !strings.Contains(ctx, "# Context from Previous Steps") {
		t.Errorf("c got prompt %q and context %q; want its prompt as written and the block beside it", prompt, ctx)
	}
}
