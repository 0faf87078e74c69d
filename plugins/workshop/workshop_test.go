package workshop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, prompt string
		want         Command
		err          string
	}{
		{name: "plain", prompt: "podcast.research", want: Command{Skill: "podcast.research", Cost: 0.12}},
		{name: "knobs", prompt: "story.chapter n=2 cost=0.5 delay=20ms fail_attempts=1",
			want: Command{Skill: "story.chapter", Cost: 0.5, Delay: 20 * time.Millisecond, FailAttempts: 1}},
		{name: "quoted", prompt: `podcast.research topic="free will"`, want: Command{Skill: "podcast.research", Cost: 0.12}},
		{name: "after prose", prompt: "# Ingest\nRead the syllabi.\n\nstudy.ingest crash_after_chunks=3\n\nThanks!\n",
			want: Command{Skill: "study.ingest", Cost: 0.02, CrashAfterChunks: 3}},
		{name: "no command", prompt: "write me a podcast", err: "no command in the prompt"},
		{name: "unknown argument", prompt: "essay.thesis tone=wry", err: `takes no argument "tone"`},
		{name: "bad cost", prompt: "essay.thesis cost=lots", err: "cost=lots"},
		{name: "bad delay", prompt: "essay.thesis delay=soon", err: "delay=soon"},
		{name: "open quote", prompt: `podcast.research topic="free will`, err: "quote is not closed"},
		{name: "not key=value", prompt: "podcast.research tides", err: `"tides" is not key=value`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.prompt)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Args = nil
			if got.Skill != tt.want.Skill || got.Cost != tt.want.Cost || got.Delay != tt.want.Delay || got.FailAttempts != tt.want.FailAttempts ||
				got.CrashAfterChunks != tt.want.CrashAfterChunks || got.Feedback != tt.want.Feedback {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	c, _ := Parse(`podcast.research topic="free will"`)
	if c.Args["topic"] != "free will" {
		t.Errorf("quoted value: got %q, want %q", c.Args["topic"], "free will")
	}
}

// harness serves a workshop agent in-process with run r as the run of
// every task with a Task.Run (run fills it in).
func harness(t *testing.T, r *conformance.Run) *conformance.Harness {
	t.Helper()
	h := sdktest.New(t, New(func(int) { panic("exit") }), conformance.Options{Logger: hclog.NewNullLogger()})
	h.Recorder.SetRun(r)
	return h
}

// run runs task as a task of the harness's run.
func run(t *testing.T, h *conformance.Harness, task sdk.Task) sdk.Result {
	t.Helper()
	if task.Run == "" {
		task.Run = "run-1"
	}
	res, err := h.Run(context.Background(), task)
	if err != nil {
		t.Fatalf("%s: %v", task.Prompt, err)
	}
	return res
}

func section(t *testing.T, r *conformance.Run, name string, v any) {
	t.Helper()
	b := r.Get(name)
	if b == nil {
		t.Fatalf("state section %s is not set", name)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("state section %s: %v in %s", name, err, b)
	}
}

// TestPodcastGateLoop: the first draft fails the evaluator's gate; the
// draft of the next round, written with the feedback, passes it.
func TestPodcastGateLoop(t *testing.T) {
	r := conformance.NewRun()
	r.Set("episode", episode{Number: 2, Topic: "free will", Complexity: 2, DurationTarget: 20})
	h := harness(t, r)

	res := run(t, h, sdk.Task{Prompt: "podcast.research", Attempt: 1})
	if !strings.Contains(res.Output, "free will") || res.Cost != 0.12 || res.Metrics["quality"] != 0.92 {
		t.Errorf("research: got %q, cost %v, metrics %v", res.Output, res.Cost, res.Metrics)
	}
	run(t, h, sdk.Task{Prompt: "podcast.write_script", IdempotencyKey: "run/write_script/1"})
	first := run(t, h, sdk.Task{Prompt: "podcast.evaluate", IdempotencyKey: "run/evaluate/1"})
	if q := first.Metrics["quality"]; q >= 0.8 {
		t.Errorf("first draft: quality %v, want below the 0.8 gate", q)
	}
	if !strings.Contains(first.Output, "Recommendations:") {
		t.Errorf("first evaluation has no recommendations:\n%s", first.Output)
	}

	feedback := "The evaluate step's quality gate \"q\" sent this work back (loop 1 of 3): too short\n\nIts report:\n" + first.Output
	second := run(t, h, sdk.Task{Prompt: "podcast.write_script", Feedback: feedback, IdempotencyKey: "run/write_script/2"})
	if !strings.Contains(second.Output, "draft 2") || !strings.Contains(second.Output, "Addressed feedback:\n- lengthen the middle act") {
		t.Errorf("second draft does not address the recommendations:\n%s", second.Output)
	}
	var s script
	section(t, r, "script", &s)
	if s.Draft != 2 || len(s.Addressed) != 3 {
		t.Errorf("script section: got %+v, want draft 2 addressing 3 recommendations", s)
	}
	again := run(t, h, sdk.Task{Prompt: "podcast.evaluate", IdempotencyKey: "run/evaluate/2"})
	if q := again.Metrics["quality"]; q < 0.8 {
		t.Errorf("second draft: quality %v, want at least 0.8", q)
	}
	res = run(t, h, sdk.Task{ID: "synth", Prompt: "podcast.synthesize"})
	if !strings.Contains(res.Output, "draft 2") {
		t.Errorf("synthesize: got %q, want it to use draft 2", res.Output)
	}
	if a := res.Artifact; len(a.KeyDecisions) != 1 || !strings.Contains(a.KeyDecisions[0], "synthesized draft 2") || len(a.ModifiedFiles) != 1 {
		t.Errorf("synthesize's artifact: got %+v, want the decision and the file it wrote", a)
	}
	// The file written was asked about first.
	uses, calls := h.Recorder.ToolUses("synth"), h.Recorder.Calls("synth")
	if len(uses) != 1 || len(calls) != 1 || uses[0].CallID != calls[0].Call.CallID || uses[0].Kind != sdk.KindWrite || uses[0].Outcome != sdk.OutcomeOK {
		t.Errorf("synthesize: asked %+v, reported %+v; want one write, asked first", calls, uses)
	}
}

// TestOutsideARun: a task outside a run sees an empty state document and
// no files.
func TestOutsideARun(t *testing.T) {
	h := harness(t, conformance.NewRun())
	res, err := h.Run(context.Background(), sdk.Task{Prompt: "essay.thesis"})
	if err != nil || !strings.Contains(res.Output, "Thesis (revision 1") {
		t.Errorf("got %q, %v; want a thesis from the defaults", res.Output, err)
	}
	res, err = h.Run(context.Background(), sdk.Task{Prompt: "study.collect"})
	if err == nil || !strings.Contains(err.Error(), "no user_inputs") {
		t.Errorf("got %q, %v; want a request for user_inputs", res.Output, err)
	}
}

// TestDeniedWrite: a skill whose write is denied fails for good, saying
// by which guard.
func TestDeniedWrite(t *testing.T) {
	r := conformance.NewRun()
	r.Set("episode", episode{Number: 2, Topic: "free will", Complexity: 2, DurationTarget: 20})
	h := sdktest.New(t, New(nil), conformance.Options{Policy: conformance.DenyAll})
	h.Recorder.SetRun(r)
	_, err := h.Run(context.Background(), sdk.Task{Run: "run-1", Prompt: "podcast.research"})
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), `Write episodes/ep002/research.md was denied by guard "sdktest-deny-all"`) {
		t.Errorf("got %v, want a permanent failure naming the file and the guard", err)
	}
}

func TestFailAttempts(t *testing.T) {
	h := harness(t, conformance.NewRun())
	for attempt := 1; attempt <= 3; attempt++ {
		_, err := h.Run(context.Background(), sdk.Task{ID: fmt.Sprintf("t%d", attempt), Run: "run-1", Prompt: "podcast.research fail_attempts=2 cost=0.5", Attempt: attempt})
		switch {
		case attempt <= 2 && (err == nil || errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "fail_attempts=2")):
			t.Errorf("attempt %d: got %v, want a transient failure naming fail_attempts", attempt, err)
		case attempt == 3 && err != nil:
			t.Errorf("attempt 3: %v", err)
		}
	}
	var costs []float64
	for _, id := range []string{"t1", "t2", "t3"} {
		for _, p := range h.Recorder.Progress(id) {
			costs = append(costs, p.Cost)
		}
	}
	if len(costs) != 2 || costs[0] != 0.5 {
		t.Errorf("failed attempts reported costs %v, want 0.5 twice", costs)
	}
	if _, err := h.Run(context.Background(), sdk.Task{Prompt: "podcast.research banana=1"}); !errors.Is(err, sdk.ErrPermanent) {
		t.Errorf("a bad prompt: got %v, want a permanent failure", err)
	}
}

func TestDelayRespectsCancel(t *testing.T) {
	h := harness(t, conformance.NewRun())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := h.Run(ctx, sdk.Task{Prompt: "essay.thesis delay=1h"})
	if err == nil {
		t.Fatal("a cancelled task with delay=1h succeeded")
	}
	if time.Since(start) > time.Minute {
		t.Errorf("Run took %s after its context was cancelled", time.Since(start))
	}
}

// TestStoryScenesAndDirection: a chapter checkpoints each scene and keeps
// the scenes already in the state; the ending follows the direction.
func TestStoryScenesAndDirection(t *testing.T) {
	r := conformance.NewRun()
	r.Set("direction", "the keeper keeps the light burning")
	h := harness(t, r)
	run(t, h, sdk.Task{Prompt: "story.elements"})
	run(t, h, sdk.Task{Prompt: "story.outline chapters=2 scenes=3"})
	// Chapter 2 was interrupted after its first scene.
	r.Set("chapter_2", chapter{Number: 2, Title: "x", Scenes: []string{"kept scene"}})
	res := run(t, h, sdk.Task{Prompt: "story.chapter n=2"})
	if res.Metrics["scenes_resumed"] != 1 || res.Metrics["scenes"] != 3 || !strings.Contains(res.Output, "[scene 1] kept scene") {
		t.Errorf("chapter 2: metrics %v, output:\n%s\nwant the saved scene kept and two written", res.Metrics, res.Output)
	}
	if got, want := strings.Join(r.Checkpoints(), ","), "chapter 2 scene 2,chapter 2 scene 3"; got != want {
		t.Errorf("checkpoints %q, want %q", got, want)
	}
	burning := run(t, h, sdk.Task{Prompt: "story.ending"}).Output
	r.Set("direction", "the keeper lets the light go out")
	dark := run(t, h, sdk.Task{Prompt: "story.ending"}).Output
	if burning == dark || !strings.Contains(dark, "lets the light go out") {
		t.Errorf("endings:\n%s\n%s\nwant them to differ by direction", burning, dark)
	}
}

func TestEssayRevisit(t *testing.T) {
	r := conformance.NewRun()
	r.Set("brief", brief{Topic: "remote work", Audience: "team leads", Kind: "argument"})
	h := harness(t, r)
	first := run(t, h, sdk.Task{Prompt: "essay.thesis", IdempotencyKey: "run/thesis/1"})
	run(t, h, sdk.Task{Prompt: "essay.outline"})
	run(t, h, sdk.Task{Prompt: "essay.arguments"})
	draft := run(t, h, sdk.Task{Prompt: "essay.draft"})
	if !strings.Contains(draft.Output, "write things down") {
		t.Errorf("draft does not carry the thesis:\n%s", draft.Output)
	}
	revised := run(t, h, sdk.Task{Prompt: "essay.thesis", Feedback: "This task is revisited: make it an explainer", IdempotencyKey: "run/thesis/2"})
	if revised.Output == first.Output || !strings.Contains(revised.Output, "explainer") || !strings.Contains(revised.Output, "revision 2") {
		t.Errorf("revised thesis:\n%s\nwant an explainer, revision 2", revised.Output)
	}
	out := run(t, h, sdk.Task{Prompt: "essay.outline"})
	if !strings.Contains(out.Output, "What the mechanism is") {
		t.Errorf("outline after the revision:\n%s\nwant explainer sections", out.Output)
	}
}

func studyRun(t *testing.T) (*conformance.Run, string) {
	t.Helper()
	dir := t.TempDir()
	r := conformance.NewRun()
	var lines []string
	for _, topic := range []string{"Limits", "Derivatives", "Integrals"} {
		lines = append(lines, "## "+topic, "- first point on "+topic, "- second point", "")
	}
	p := filepath.Join(dir, "calc-syllabus.md")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r.AddFile(sdk.File{Name: "calc-syllabus.md", Path: p, SHA256: "abc123", Size: 100})
	r.Set("user_inputs", map[string]any{
		"start_date": "2026-03-02",
		"courses":    []course{{CourseID: "course_calc", CourseName: "Calculus", MidtermDate: "2026-03-06"}},
	})
	return r, p
}

// TestStudyPlannerChunkResume: ingestion skips the chunks marked done and
// marks the others; the plan covers every day to the last midterm.
func TestStudyPlannerChunkResume(t *testing.T) {
	r, _ := studyRun(t)
	h := harness(t, r)
	run(t, h, sdk.Task{Prompt: "study.collect"})
	var reg map[string]registeredFile
	section(t, r, "file_registry", &reg)
	if f := reg["file_001"]; f.Filename != "calc-syllabus.md" || f.SHA256 != "abc123" || len(f.CourseIDs) != 1 || f.CourseIDs[0] != "course_calc" {
		t.Errorf("file_registry: got %+v", reg)
	}

	// Chunk 0 of 3 was done by an earlier attempt.
	if err := h.Recorder.ForRun("x").MarkChunk(context.Background(), "calc-syllabus.md", 0); err != nil {
		t.Fatal(err)
	}
	res := run(t, h, sdk.Task{Prompt: "study.ingest chunk_lines=4 crash_after_chunks=1", Attempt: 2})
	if res.Metrics["chunks_done"] != 2 || res.Metrics["chunks_skipped"] != 1 {
		t.Errorf("ingest: metrics %v, want 2 chunks done and 1 skipped", res.Metrics)
	}
	done, _ := h.Recorder.ForRun("x").DoneChunks(context.Background(), "calc-syllabus.md")
	if len(done) != 3 {
		t.Errorf("chunks done: %v, want all 3", done)
	}
	var ist ingestionState
	section(t, r, "ingestion_state", &ist)
	if f := ist.Files["file_001"]; f == nil || f.Status != "complete" || f.ProcessedChunks != 3 {
		t.Errorf("ingestion_state.files: got %+v, want file_001 complete with 3 chunks", ist.Files["file_001"])
	}
	run(t, h, sdk.Task{Prompt: "study.estimate"})
	run(t, h, sdk.Task{Prompt: "study.plan"})
	var ps planningState
	section(t, r, "planning_state", &ps)
	days := map[string]bool{}
	for _, row := range ps.PlanRows {
		days[row.Date] = true
	}
	for _, d := range []string{"2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05", "2026-03-06"} {
		if !days[d] {
			t.Errorf("plan has no row for %s: %+v", d, ps.PlanRows)
		}
	}
	res = run(t, h, sdk.Task{Prompt: "study.review"})
	if !strings.Contains(res.Output, "approved_plan") {
		t.Errorf("review: %s", res.Output)
	}
	res = run(t, h, sdk.Task{Prompt: "study.publish"})
	if !strings.Contains(res.Output, "| 2026-03-06 Fri | Calculus | Midterm |") {
		t.Errorf("publish:\n%s", res.Output)
	}
}

// TestStudyIngestCrash: crash_after_chunks ends the process on the first
// attempt only, after the chunks it names are marked.
func TestStudyIngestCrash(t *testing.T) {
	r, _ := studyRun(t)
	a := New(func(int) { panic("crashed") })
	h := sdktest.New(t, a, conformance.Options{Logger: hclog.NewNullLogger()})
	h.Recorder.SetRun(r)
	run(t, h, sdk.Task{Prompt: "study.collect"})
	// In-process, the crash is a panic the plugin server turns into an
	// error: the chunk marked before it stays marked.
	_, err := h.Run(context.Background(), sdk.Task{Run: "run-1", Prompt: "study.ingest chunk_lines=4 crash_after_chunks=1", Attempt: 1})
	if !errors.Is(err, sdk.ErrAgentPanicked) {
		t.Fatalf("attempt 1: got %v, want the crash", err)
	}
	done, _ := h.Recorder.ForRun("x").DoneChunks(context.Background(), "calc-syllabus.md")
	if len(done) != 1 || done[0] != 0 {
		t.Errorf("after the crash, chunks done: %v, want [0]", done)
	}
}

func TestConformance(t *testing.T) {
	err := conformance.TestAgent(context.Background(), func() sdk.Agent { return New(nil) },
		sdk.Task{Prompt: "podcast.research topic=tides"},
		sdk.Task{Prompt: "essay.thesis"},
		sdk.Task{Prompt: "story.elements"},
	)
	if err != nil {
		t.Error(err)
	}
}
