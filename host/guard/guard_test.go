package guard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustCompile(t testing.TB, s Spec) *Rule {
	t.Helper()
	r, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		offset int
		want   string
	}{
		{"unknown name", Spec{Hook: PreToolUse, Condition: `tool == "Read" && any(pahts, true)`}, 22, "unknown name pahts (did you mean paths?); a pre_tool_use condition can use cwd, input"},
		{"unknown field", Spec{Hook: PreToolUse, Condition: `len(session.flies) > 0`}, 12, "session has no field flies (did you mean files?); its fields: age, agent, capacity"},
		{"type mismatch", Spec{Hook: PreToolUse, Condition: `tool + 1 > 0`}, 5, "mismatched types string and int"},
		{"not boolean", Spec{Hook: PreToolUse, Condition: `tool`}, -1, "expected bool"},
		{"syntax", Spec{Hook: PreToolUse, Condition: `tool == `}, 7, "unexpected token EOF"},
		{"now is not a function", Spec{Hook: PreToolUse, Condition: `now() > now`}, 0, "not callable"},
		{"hook's names only", Spec{Hook: Transition, Condition: `tool == "x"`}, 0, "a transition condition can use from, now, run, state, to"},
		{"unknown hook", Spec{Hook: "before_lunch", Condition: `true`}, -1, `unknown hook "before_lunch"; guards watch one of: pre_tool_use, task_admission, transition, task_result, session_reuse`},
		{"wrong action", Spec{Hook: PreToolUse, Action: Block, Condition: `true`}, -1, `a pre_tool_use guard can deny, not "block"`},
		{"send_back without a target", Spec{Hook: TaskResult, Action: SendBack, Condition: `true`}, -1, "needs back_to"},
		{"empty", Spec{Hook: PreToolUse, Condition: " "}, -1, "the condition is empty"},
		{"too long", Spec{Hook: PreToolUse, Condition: strings.Repeat("true && ", 600) + "true"}, -1, "more than the 4096 allowed"},
		{"bad glob pattern", Spec{Hook: PreToolUse, Condition: `any(paths, glob(#, "src/[a-"))`}, 19, `glob pattern: bad path pattern "src/[a-"`},
		{"bad helper pattern", Spec{Hook: PreToolUse, Condition: `tool == "Read" && touches("{a,b")`}, 26, `a { is not closed`},
		{"helper without its argument", Spec{Hook: PreToolUse, Condition: `touches()`}, 0, "touches takes one argument, a pattern"},
		{"helper with two", Spec{Hook: PreToolUse, Condition: `reads_under("~/.ssh", "x")`}, 0, "reads_under takes one argument, a directory"},
		{"helper elsewhere", Spec{Hook: Transition, Condition: `to == "x" || touches("**/.env")`}, 13, "touches is for pre_tool_use conditions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "g"
			_, err := Compile(tt.spec)
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *CompileError", err)
			}
			if ce.Offset != tt.offset {
				t.Errorf("offset: got %d, want %d (%v)", ce.Offset, tt.offset, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestTooManyNodes(t *testing.T) {
	cond := "1 < 2" + strings.Repeat(" && 1 < 2", 400)
	_, err := Compile(Spec{Name: "g", Hook: PreToolUse, Condition: cond})
	if err == nil || !strings.Contains(err.Error(), "exceeds maximum allowed nodes") {
		t.Errorf("got %v, want the node limit", err)
	}
}

func TestEveryHook(t *testing.T) {
	now := time.Date(2026, 2, 20, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		hook Hook
		cond string
		env  any
		want bool
	}{
		{PreToolUse, `tool == "Read" && any(paths, glob(#, "**/.env*"))`, ToolUseEnv{Tool: "Read", Paths: []string{"app/.env.local"}}, true},
		{PreToolUse, `tool == "Read" && any(paths, glob(#, "**/.env*"))`, ToolUseEnv{Tool: "Read", Paths: []string{"app/env.go"}}, false},
		{PreToolUse, `input.command matches "rm -rf /"`, ToolUseEnv{Input: map[string]any{"command": "sudo rm -rf / --no-preserve-root"}}, true},
		{PreToolUse, `"go" in session.technologies && session.idle > duration("10m")`, ToolUseEnv{Session: Session{Technologies: []string{"go"}, Idle: time.Hour}}, true},
		{PreToolUse, `task.metadata.env == "prod" && tool in ["Write", "Edit"]`, ToolUseEnv{Tool: "Edit", Task: Task{Metadata: map[string]string{"env": "prod"}}}, true},
		{TaskAdmission, `run.budget > 0 && run.cost + 1.5 > run.budget`, AdmissionEnv{Run: Run{Cost: 8, Budget: 9}}, true},
		{Transition, `from == "planning" && to == "reviewing" && len(state.plan_rows) == 0`, TransitionEnv{From: "planning", To: "reviewing", State: map[string]any{"plan_rows": []any{}}}, true},
		{TaskResult, `result.metrics.quality < 0.85`, ResultEnv{Result: Result{Metrics: map[string]float64{"quality": 0.8}}}, true},
		{TaskResult, `result.metrics.quality < 0.85`, ResultEnv{Result: Result{Metrics: map[string]float64{"quality": 0.9}}}, false},
		{SessionReuse, `session.age > duration("4h") || score < 0.7`, ReuseEnv{Session: Session{Age: time.Hour}, Score: 0.65}, true},
		{SessionReuse, `now.Hour() >= 12`, ReuseEnv{Now: now}, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.hook)+" "+tt.cond, func(t *testing.T) {
			r := mustCompile(t, Spec{Name: "g", Hook: tt.hook, Condition: tt.cond, Action: Actions(tt.hook)[0], To: "x"})
			got, err := r.Eval(tt.env)
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	tests := []struct {
		cond string
		want bool
	}{
		{`glob("a/b/c.pem", "**/*.pem")`, true},
		{`glob("c.pem", "**/*.pem")`, true},
		{`glob("a/b/c.pem", "*.pem")`, false},
		{`glob("src/x.go", "src/{*.go,*.s}")`, true},
		{`under("src/models/user.go", "src")`, true},
		{`under("src", "src/")`, true},
		{`under("srcs/x.go", "src")`, false},
		{`under("anything", ".")`, true},
		{`ext("a/b.tar.gz") == ".gz" && base("a/b.go") == "b.go" && dir("a/b.go") == "a"`, true},
		{`dates("2026-02-27", "2026-03-02") == ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02"]`, true},
		{`len(dates("2026-03-02", "2026-03-01")) == 0`, true},
		{`days_between("2026-02-01", "2026-03-01") == 28`, true},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			r := mustCompile(t, Spec{Name: "g", Hook: PreToolUse, Condition: tt.cond})
			got, err := r.Eval(ToolUseEnv{})
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestRuntimeErrorsFailClosed: a condition that cannot be evaluated
// counts as firing, with the reason.
func TestRuntimeErrorsFailClosed(t *testing.T) {
	tests := []struct {
		cond string
		want string
	}{
		{`dates(state.start, state.end)[0] == ""`, `want a date as "YYYY-MM-DD", got "soon"`},
		{`glob(from, state.pattern)`, "glob pattern"},
		{`state.items[3] > 0`, "index out of range"},
		{`len(dates("1900-01-01", "2100-01-01")) > 0`, "more than ten years"},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			r := mustCompile(t, Spec{Name: "g", Hook: Transition, Condition: tt.cond, Message: "stop"})
			s := NewSet([]*Rule{r})
			v := s.First(Transition, Match{}, TransitionEnv{From: "x", State: map[string]any{"start": "soon", "end": "later", "items": []any{1}, "pattern": "["}})
			if v == nil || v.Err == nil || !strings.Contains(v.Message, tt.want) || !strings.HasPrefix(v.Message, "stop (guard \"g\" could not decide") {
				t.Fatalf("got %+v, want the guard to fire with %q", v, tt.want)
			}
			if st := r.Stats(); st.Fired != 1 || st.Failed != 1 {
				t.Errorf("stats: got %+v", st)
			}
		})
	}
}

func TestMemoryBudget(t *testing.T) {
	r := mustCompile(t, Spec{Name: "hungry", Hook: PreToolUse, Condition: `len(map(1..1000000, # * 2)) > 0`})
	fired, err := r.Eval(ToolUseEnv{})
	if !fired || err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
		t.Errorf("got %v, %v; want the memory budget to stop it, firing", fired, err)
	}
}

func TestFiltersAndOrder(t *testing.T) {
	mk := func(name string, s Spec) *Rule {
		s.Name, s.Hook = name, PreToolUse
		return mustCompile(t, s)
	}
	set := NewSet([]*Rule{
		mk("coder-only", Spec{Condition: "true", Agents: []string{"coder"}}),
		mk("never", Spec{Condition: "false"}),
		mk("review-task", Spec{Condition: `tool == "Bash"`, Tasks: []string{"review"}, Message: "no shell in review"}),
		mk("catch-all", Spec{Condition: "true", Message: "everything"}),
	})
	tests := []struct {
		m    Match
		tool string
		want string
	}{
		{Match{Agent: "coder"}, "Read", "coder-only"},
		{Match{Agent: "writer", Task: "review"}, "Bash", "review-task"},
		{Match{Agent: "writer", Task: "review"}, "Read", "catch-all"},
		{Match{Agent: "writer", Task: "draft"}, "Bash", "catch-all"},
	}
	for _, tt := range tests {
		v := set.First(PreToolUse, tt.m, ToolUseEnv{Tool: tt.tool})
		if v == nil || v.Guard != tt.want || v.Action != Deny {
			t.Errorf("%+v %s: got %+v, want %s", tt.m, tt.tool, v, tt.want)
		}
	}
	all := set.All(PreToolUse, Match{Agent: "writer", Task: "draft"}, ToolUseEnv{Tool: "Bash"})
	if len(all) != 4 || all[0].Applies || all[1].Fired || all[2].Applies || !all[3].Fired || all[3].Message != "everything" {
		t.Errorf("all: got %+v", all)
	}
	if !set.Uses(PreToolUse, Match{Task: "review"}, "tool") || set.Uses(PreToolUse, Match{}, "session") {
		t.Error("Uses: wrong names")
	}
	var empty *Set
	if empty.First(PreToolUse, Match{}, ToolUseEnv{}) != nil || empty.Any(PreToolUse, Match{}) {
		t.Error("a nil set fired")
	}
}

func TestDecodeInput(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env, m, err := DecodeInput(PreToolUse, []byte(`{"tool":"Read","paths":["a"],"session":{"age":"5m","files":["x"]},"task":{"agent":"coder","name":"t1"}}`), now)
	if err != nil {
		t.Fatal(err)
	}
	e := env.(ToolUseEnv)
	if e.Tool != "Read" || e.Session.Age != 5*time.Minute || !e.Now.Equal(now) || m.Agent != "coder" || m.Task != "t1" {
		t.Errorf("got %+v %+v", e, m)
	}
	tests := []struct {
		hook Hook
		in   string
		want string
	}{
		{PreToolUse, `{"tool":"Read","pahts":[]}`, `a field "pahts" that a pre_tool_use condition cannot see`},
		{PreToolUse, `{"tool":3}`, "the input's tool should be a string, not a JSON number"},
		{PreToolUse, `{"session":{"idle":"soon"}}`, `idle: "soon" is not a duration`},
		{PreToolUse, `[1,2]`, "not a JSON object"},
		{"later", `{}`, `unknown hook "later"`},
	}
	for _, tt := range tests {
		if _, _, err := DecodeInput(tt.hook, []byte(tt.in), now); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.in, err, tt.want)
		}
	}
	_, m, err = DecodeInput(Transition, []byte(`{"from":"a","to":"b","state":{"x":1}}`), now)
	if err != nil || m.From != "a" || m.To != "b" {
		t.Errorf("transition match: got %+v, %v", m, err)
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`tool == "Read" && any(paths, glob(#, "**/.env*"))`,
		`any(state.courses, .midterm == nil)`,
		`let f = state.x; f == nil || f.status == "ok"`,
		`dates(state.a, state.b)[0] == "x"`,
		`result.metrics.quality < 0.8 ? true : false`,
		`1..10 | filter(# > 5) | len() > 2`,
		`"\u0000"`, `((((`, `#`, `.x`,
	} {
		f.Add(s, 0)
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, cond string, hook int) {
		h := Hooks[(hook%len(Hooks)+len(Hooks))%len(Hooks)]
		r, err := Compile(Spec{Name: "f", Hook: h, Condition: cond, To: "x"})
		if err != nil {
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("not a *CompileError: %v", err)
			}
			if ce.Offset > len([]rune(cond)) {
				t.Fatalf("offset %d beyond the condition's %d runes", ce.Offset, len([]rune(cond)))
			}
			return
		}
		// A compiled condition runs on the zero environment without
		// panicking: it fires, or not, or fails closed.
		_, _ = r.Eval(envs[h])
	})
}

func FuzzDecodeInput(f *testing.F) {
	f.Add(`{"tool":"Read","paths":["a"],"session":{"age":"5m"}}`, 0)
	f.Add(`{"from":"a","to":"b","state":{"x":[1,{"y":null}]}}`, 2)
	f.Add(`{"result":{"metrics":{"quality":0.5}}}`, 3)
	f.Add(`{"score":1e400}`, 4)
	f.Fuzz(func(t *testing.T, in string, hook int) {
		h := Hooks[(hook%len(Hooks)+len(Hooks))%len(Hooks)]
		env, _, err := DecodeInput(h, []byte(in), time.Time{})
		if err != nil {
			return
		}
		r := mustCompile(t, Spec{Name: "f", Hook: h, Condition: "true", To: "x"})
		if fired, err := r.Eval(env); !fired || err != nil {
			t.Fatalf("a decoded input does not run: %v %v", fired, err)
		}
	})
}
