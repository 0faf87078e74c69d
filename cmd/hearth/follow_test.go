package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hearth-dev/hearth"
)

func TestFrame(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	d := hearth.RunDetail{RunInfo: hearth.RunInfo{ID: "podcast-1", Pipeline: "podcast", Status: hearth.RunRunning, Stage: "writing",
		Tasks: 20, Succeeded: 10, Cost: 1.5, Budget: 4}}
	for i := range 20 {
		ti := hearth.RunTaskInfo{Name: fmt.Sprintf("task-%02d", i), Status: hearth.TaskPending}
		switch {
		case i < 10:
			ti.Status, ti.Version, ti.Started, ti.Finished, ti.Cost, ti.Session = hearth.TaskSucceeded, 1, start, start.Add(2*time.Second), 0.15, "writer-1"
		case i == 10:
			ti.Status, ti.Attempt = hearth.TaskRunning, 2
		}
		d.TaskList = append(d.TaskList, ti)
	}
	decisions := map[string]hearth.Decision{"task-10": {Action: hearth.ActionReused, Session: "writer-1"}}
	lines := frame(d, decisions, 10, 20*time.Second, 60)

	if lines[0] != "run podcast-1 · podcast · running · stage writing" {
		t.Errorf("header %q", lines[0])
	}
	// 10 of 20 in 20s: 10 left at 2s each.
	for _, want := range []string{"[████████████░░░░░░░░░░░░]", " 50%", "10/20 tasks", "ETA 20s", "cost 1.50 of 4.00"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("progress line %q lacks %q", lines[1], want)
		}
	}
	body := strings.Join(lines[2:], "\n")
	if !strings.Contains(body, "▶ task-10") || !strings.Contains(body, "attempt 2 · reused writer-1") {
		t.Errorf("the running task is not shown with its placement:\n%s", body)
	}
	if n := len(lines) - 3; n != maxTaskLines {
		t.Errorf("%d task lines; want at most %d", n, maxTaskLines)
	}
	if last := lines[len(lines)-1]; last != fmt.Sprintf("  … %d more", 20-maxTaskLines) {
		t.Errorf("last line %q; want how many tasks are hidden", last)
	}
	for _, l := range lines[2:] {
		if utf8.RuneCountInString(l) > 60 {
			t.Errorf("line %q is wider than the terminal", l)
		}
	}
	// Task lines keep the graph's order.
	prev := ""
	for _, l := range lines[2 : len(lines)-1] {
		name := strings.Fields(l)[1]
		if name < prev {
			t.Errorf("task %s after %s", name, prev)
		}
		prev = name
	}

	d.Status, d.Succeeded, d.Reason = hearth.RunPaused, 20, "the host shut down; resume the run to go on"
	lines = frame(d, nil, 10, 20*time.Second, 0)
	if !strings.Contains(lines[1], "done") || lines[len(lines)-1] != "  the host shut down; resume the run to go on" {
		t.Errorf("a stopped run's frame: %q", lines)
	}
}

func TestStateFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	brief := filepath.Join(dir, "brief.json")
	if err := os.WriteFile(brief, []byte(`{"topic":"tides"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stateFile := filepath.Join(dir, "state.json")
	if err := os.WriteFile(stateFile, []byte(`{"direction":"south","inputs":{"a":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	in := runInputs{stateFile: stateFile, sets: []string{"direction=north", "brief=@" + brief, "count=3"}}
	got, err := in.state(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"direction": `"north"`, "brief": `{"topic":"tides"}`, "count": "3", "inputs": `{"a":1}`}
	if len(got) != len(want) {
		t.Errorf("sections %v; want %v", got, want)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("section %s = %s; want %s", k, got[k], v)
		}
	}

	for _, tt := range []struct {
		in   runInputs
		want string
	}{
		{runInputs{sets: []string{"direction"}}, `--set "direction": want SECTION=VALUE`},
		{runInputs{sets: []string{"=north"}}, `want SECTION=VALUE`},
		{runInputs{sets: []string{"brief=@" + filepath.Join(dir, "missing.json")}}, "--set brief: open"},
		{runInputs{sets: []string{"brief=@" + stateFile + "x"}}, "no such file"},
		{runInputs{stateFile: brief + "x"}, "--state: open"},
		{runInputs{stateFile: writeTemp(t, "[1,2]")}, "want a JSON object whose keys are state sections"},
		{runInputs{sets: []string{"brief=@" + writeTemp(t, "{nope")}}, "is not valid JSON"},
	} {
		if _, err := tt.in.state(nil); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v; want one containing %q", tt.in, err, tt.want)
		}
	}
}

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzSetFlag feeds --set values to the state parser: it never panics,
// and what it accepts is a named section holding valid JSON.
func FuzzSetFlag(f *testing.F) {
	for _, s := range []string{"direction=north", `inputs={"topic":"tides"}`, "n=3", "x=", "=y", "noequals", `a=[1,`, "s=\xff\xfe", `q="quoted"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "=@") {
			return // reads a file: not this target's business
		}
		got, err := (&runInputs{sets: []string{s}}).state(nil)
		if err != nil {
			if !strings.Contains(err.Error(), "--set") {
				t.Errorf("error %q does not name the flag", err)
			}
			return
		}
		for sec, v := range got {
			if strings.TrimSpace(sec) == "" || !json.Valid(v) {
				t.Errorf("accepted %q as section %q = %q", s, sec, v)
			}
		}
	})
}

// oneRun is a RunReader of a run of n tasks and nothing else.
type oneRun struct {
	hearth.RunReader
	n int
}

func (r oneRun) Run(context.Context, string) (hearth.RunDetail, error) {
	return hearth.RunDetail{RunInfo: hearth.RunInfo{Tasks: r.n}}, nil
}

// TestPlainLineForAStageWait: piped, a task that waits for its stage to
// open says so when the wait begins, instead of the run going silent.
func TestPlainLineForAStageWait(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	f := &follower{m: &Main{}, h: oneRun{n: 2}, ctx: context.Background(), w: &out, quiet: true,
		decisions: map[string]hearth.Decision{}, started: map[string]time.Time{}, finished: map[string]bool{},
		placed: map[string]int{}, printedOnce: map[string]bool{}}
	msg := `ship: waits for stage deploy, which opens at 2026-12-01T09:00:00Z (stage "deploy" { not_before = "2026-12-01T09:00:00Z" })`
	f.event(hearth.Event{Kind: hearth.EventRunTask, Task: "ship", Message: msg})
	if got := strings.TrimSpace(out.String()); got != msg {
		t.Errorf("printed %q, want the wait: %q", got, msg)
	}
}

// TestPlainLinesInPlacementOrder: piped, a run's lines come in the order
// its tasks started (and were placed), not the order they finished: the
// reuse that says the pool is full comes after the spawn that filled it,
// however long that spawn's task took.
func TestPlainLinesInPlacementOrder(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	f := &follower{m: &Main{}, h: oneRun{n: 3}, ctx: context.Background(), w: &out, quiet: true,
		decisions: map[string]hearth.Decision{}, started: map[string]time.Time{}, finished: map[string]bool{},
		placed: map[string]int{}, printedOnce: map[string]bool{}}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ev := func(task string, to hearth.TaskStatus, sec int) hearth.Event {
		return hearth.Event{Kind: hearth.EventRunTask, Task: task, To: string(to), Time: at.Add(time.Duration(sec) * time.Second)}
	}
	dec := func(task, action, reason string) hearth.Event {
		return hearth.Event{Kind: hearth.EventDecision, Task: "run-1/" + task + "/1/1", Decision: &hearth.Decision{Action: hearth.Action(action), Session: "s-" + task, Reason: reason}}
	}
	for _, e := range []hearth.Event{
		ev("spawn", hearth.TaskRunning, 0), ev("reuse", hearth.TaskRunning, 0),
		dec("reuse", "reused", "reused s-x below the threshold: the pool is full at 4 sessions"),
		ev("reuse", hearth.TaskSucceeded, 1),
		dec("spawn", "spawned", "spawned no session to reuse"),
		ev("spawn", hearth.TaskSucceeded, 2),
		ev("late", hearth.TaskRunning, 3), dec("late", "reused", "reused s-spawn"), ev("late", hearth.TaskSucceeded, 4),
	} {
		f.event(e)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "[1/3] spawn ") || !strings.HasPrefix(lines[1], "[2/3] reuse ") || !strings.HasPrefix(lines[2], "[3/3] late ") {
		t.Errorf("lines:\n%s\nwant spawn, then the reuse that found the pool full, then late, numbered in that order", out.String())
	}
}
