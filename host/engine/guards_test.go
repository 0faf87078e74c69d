package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

func rule(t testing.TB, s guard.Spec) *guard.Rule {
	t.Helper()
	r, err := guard.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newGuardedHost starts a host with the scripted agent and the guards.
func newGuardedHost(t *testing.T, guards ...*guard.Rule) *Engine {
	t.Helper()
	cfg := &config.Config{DataDir: t.TempDir(), Agents: []*config.Agent{testAgent("scripted", "agent")}, Matcher: config.DefaultMatcher(), Guards: guards}
	h, err := New(Options{Config: cfg, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func TestAdmissionGuardDenies(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t, rule(t, guard.Spec{Name: "no-drops", Hook: guard.TaskAdmission,
		Condition: `lower(task.prompt) contains "drop table"`, Message: "destructive prompts need a person"}))
	_, err := h.Submit(context.Background(), hearth.Task{ID: "t1", Agent: "scripted", Prompt: "echo:DROP TABLE users"})
	var de *hearth.DeniedError
	if !errors.As(err, &de) || !errors.Is(err, hearth.ErrDenied) || de.Guard != "no-drops" || !strings.Contains(err.Error(), `task t1 was denied by guard "no-drops": destructive prompts need a person`) {
		t.Fatalf("got %v", err)
	}
	if st := h.agents()[0]; st.Live != 0 {
		t.Errorf("a denied task started a session: %+v", st)
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "echo:fine"}); err != nil {
		t.Errorf("an allowed task: %v", err)
	}
}

func TestResultGate(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t, rule(t, guard.Spec{Name: "quality", Hook: guard.TaskResult, Action: guard.SendBack, To: "draft",
		Condition: `result.metrics.quality < 0.8`, Message: "too rough: revise the draft"}))
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Name: "review", Prompt: "metric:quality=0.6"})
	if err != nil {
		t.Fatal(err)
	}
	want := hearth.Gate{Guard: "quality", Action: hearth.GateSendBack, Feedback: "too rough: revise the draft", To: "draft", MaxLoops: 3}
	if out.Gate == nil || *out.Gate != want {
		t.Errorf("gate: got %+v, want %+v", out.Gate, want)
	}
	out, err = h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "metric:quality=0.9"})
	if err != nil || out.Gate != nil {
		t.Errorf("a good result: got %v, %+v; want no gate", err, out.Gate)
	}
}

func TestCheckTransition(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t, rule(t, guard.Spec{Name: "midterms", Hook: guard.Transition, From: []string{"collecting_inputs"},
		Condition: `any(state.courses, (.midterm ?? "") == "")`, Message: "each course needs a midterm date"}))
	state := map[string]any{"courses": []any{map[string]any{"name": "Calculus", "midterm": "2026-02-21"}, map[string]any{"name": "Chemistry"}}}
	if v := h.transition(guard.Run{ID: "run-1", Pipeline: "planner", State: state}, "collecting_inputs", "ingesting"); v == nil || v.Guard != "midterms" {
		t.Errorf("got %+v, want the transition blocked", v)
	}
	if v := h.transition(guard.Run{ID: "run-1", Pipeline: "planner", State: state}, "ingesting", "estimating"); v != nil {
		t.Errorf("another stage: got %+v, want no guard to apply", v)
	}
	state["courses"].([]any)[1].(map[string]any)["midterm"] = "2026-02-26"
	if v := h.transition(guard.Run{ID: "run-1", Pipeline: "planner", State: state}, "collecting_inputs", "ingesting"); v != nil {
		t.Errorf("complete inputs: got %+v", v)
	}
}

// TestReload: a reload swaps guards and settings at once; sessions of an
// agent whose definition is unchanged are not disturbed, and those of a
// changed one are retired after their task.
func TestReload(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t)
	first := submitReads(t, h, "a/x.go")

	// Same agent, a bigger pool, a new guard, and a new agent.
	cfg := h.config()
	a := *cfg.Agents[0]
	a.Pool.MaxSessions = 8
	b := testAgent("second", "agent")
	next := &config.Config{DataDir: cfg.DataDir, Matcher: cfg.Matcher, Agents: []*config.Agent{&a, b},
		Guards: []*guard.Rule{rule(t, guard.Spec{Name: "no-secrets", Hook: guard.PreToolUse, Condition: `any(paths, glob(#, "**/.env"))`, Message: "no"})}}
	rep, err := h.Reload(next)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Unchanged, []string{"scripted"}) || !slices.Equal(rep.Added, []string{"second"}) || rep.Guards != 1 {
		t.Errorf("report: got %+v", rep)
	}
	again, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "read:a/.env", Hints: sdk.Hints{Files: []string{"a/x.go"}}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Session != first.Session || again.Result.Output != "denied a/.env: no" {
		t.Errorf("after the reload: got %s %q, want the same session and the new guard in force", again.Session, again.Result.Output)
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "second", Prompt: "echo:hi"}); err != nil {
		t.Errorf("the added agent: %v", err)
	}

	// The agent's definition changes: its session is retired, and the
	// next task gets a new one. The second agent is removed.
	sub := subscribe(h, 64)
	defer sub.Close()
	changed := a
	changed.Env = map[string]string{envPlugin: "agent", "GORACE": "atexit_sleep_ms=0", "MODE": "new"}
	rep, err = h.Reload(&config.Config{DataDir: cfg.DataDir, Matcher: cfg.Matcher, Agents: []*config.Agent{&changed}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Changed, []string{"scripted"}) || !slices.Equal(rep.Removed, []string{"second"}) {
		t.Errorf("report: got %+v", rep)
	}
	e := waitEvent(t, sub, hearth.EventSessionRetired)
	if !strings.Contains(e.Message, "definition changed") && !strings.Contains(e.Message, "removed from the config") {
		t.Errorf("retirement: got %+v", e)
	}
	out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "read:a/x.go", Hints: sdk.Hints{Files: []string{"a/x.go"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Session == first.Session && out.Decision.Action == hearth.ActionReused {
		t.Errorf("the stale session was reused: %+v", out.Decision)
	}
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "second"}); !errors.Is(err, hearth.ErrUnknownAgent) {
		t.Errorf("the removed agent: got %v", err)
	}
}

// TestIgnoredDenialFailsTheTask (issue 25, finding 5): an agent that
// is denied a call and reports it done anyway, under a new call ID, with
// the same tool and path (or the path spelled another way), fails its
// task, with or without require_checks, and the host records a
// tool.defied event naming the guard. A denied call reported as denied,
// and a path asked about and allowed, stand.
func TestIgnoredDenialFailsTheTask(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t, rule(t, guard.Spec{Name: "no-env", Hook: guard.PreToolUse,
		Condition: `touches("**/.env")`, Message: "secrets are off limits"}))
	sub := subscribe(h, 64)
	defer sub.Close()
	for _, prompt := range []string{"defy:app/.env", "defy:app/./.env;read:app/main.go", "read:app/main.go;defy:app/.env"} {
		for _, required := range []bool{false, true} {
			out, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: prompt, RequireChecks: required})
			if err == nil || !errors.Is(err, hearth.ErrDenialIgnored) || !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "no-env") {
				t.Fatalf("%s (require_checks %t): err %v (outcome %+v); want a permanent failure naming the guard", prompt, required, err, out)
			}
			e := waitEvent(t, sub, hearth.EventToolDefied)
			if !strings.Contains(e.Message, ".env") || !strings.Contains(e.Message, `"no-env"`) {
				t.Errorf("%s: the event says %q; want the path and the guard", prompt, e.Message)
			}
		}
	}
	// Asked, allowed, done: nothing to object to.
	if _, err := h.Submit(context.Background(), hearth.Task{Agent: "scripted", Prompt: "defy:app/main.go"}); err != nil {
		t.Errorf("an allowed call reported done: %v", err)
	}
}

// TestPipelineRequiresChecks: a pipeline's require_checks reaches its
// tasks, and survives in the run's record: the task fails for good on its
// first attempt, saying why.
func TestPipelineRequiresChecks(t *testing.T) {
	t.Parallel()
	h := newGuardedHost(t, rule(t, guard.Spec{Name: "no-env", Hook: guard.PreToolUse,
		Condition: `tool == "Read" && any(paths, glob(#, "**/.env"))`, Message: "secrets are off limits"}))
	p := pipe("strict", []string{"peek", "sneak:app/.env"})
	p.RequireChecks = true
	info, err := startRun(t, h, p, hearth.RunOptions{})
	if err == nil || info.Status != hearth.RunFailed {
		t.Fatalf("run = %+v, err %v; want failed", info, err)
	}
	d, err := h.Run(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	task := d.TaskList[0]
	if task.Attempt != 1 || !strings.Contains(task.Error, "require_checks") {
		t.Errorf("task = %+v; want one attempt, failed naming require_checks", task)
	}
	if g, err := h.store.RunGraph(info.ID); err != nil || !g.Pipeline.RequireChecks {
		t.Errorf("the run's recorded pipeline lost require_checks (err %v)", err)
	}
}
