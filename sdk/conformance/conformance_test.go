package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

func TestConformingAgentPasses(t *testing.T) {
	t.Parallel()
	tasks := []sdk.Task{
		{Name: "read", Prompt: "read:src/a.go;read:src/b.go;echo:done"},
		{Name: "flood", Prompt: "tools:200;progress:1"},
	}
	newAgent := func() sdk.Agent { return testagent.New("scripted", 4) }
	if err := conformance.TestAgent(context.Background(), newAgent, tasks...); err != nil {
		t.Fatal(err)
	}
}

func TestToolsAgentPasses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("hello hearth\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	newAgent := func() sdk.Agent { return &toolsAgent{root: root} }
	if err := conformance.TestAgent(context.Background(), newAgent, sdk.Task{Name: "words", Prompt: "notes.md"}); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrencyCheckRunsTasksAtOnce: the concurrency case really runs
// capacity tasks at the same time, which is what lets -race see a race
// between them: this agent fails unless all four are in flight together.
func TestConcurrencyCheckRunsTasksAtOnce(t *testing.T) {
	t.Parallel()
	gate := &together{n: 4, all: make(chan struct{})}
	err := conformance.TestAgent(context.Background(), func() sdk.Agent { return gate }, sdk.Task{Name: "t", Prompt: "go"})
	if err == nil {
		t.Fatal("got no violation; the agent fails every task that runs on its own")
	}
	if strings.Contains(err.Error(), "concurrent tasks:") {
		t.Errorf("the concurrency check did not run 4 tasks at once:\n%v", err)
	}
	if !strings.Contains(err.Error(), "tasks: task 0 (t): Run failed") {
		t.Errorf("got %v\nwant the lone task of the tasks check to fail (a sign that the agent really waits)", err)
	}
}

func TestConformanceFindsViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		agent func() sdk.Agent
		want  []string
	}{
		{
			name:  "unnamed",
			agent: func() sdk.Agent { return &badAgent{info: sdk.Info{}} },
			want:  []string{"Info.Name is empty", "Info.Version is empty"},
		},
		{
			name:  "spaces in name",
			agent: func() sdk.Agent { return &badAgent{info: sdk.Info{Name: "my agent", Version: "1"}} },
			want:  []string{`contains whitespace; use a single word such as "my-agent"`},
		},
		{
			name:  "ignores denials, with a call ID",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, ignoreDenial: true, callID: "c1"} },
			want:  []string{"denied tool uses: task 0 (t) with every tool use denied: tool use Read [.env] was denied but reported as done"},
		},
		{
			name:  "ignores denials, without a call ID",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, ignoreDenial: true} },
			want:  []string{"tool use Read [.env] was denied but reported as done"},
		},
		{
			name:  "never asks",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, neverAsks: true} },
			want:  []string{"asks first: task 0 (t): tool use Read [.env] was reported without a CheckToolUse before it"},
		},
		{
			name:  "asks about another file",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, asksOther: true} },
			want:  []string{"tool use Read [.env] was reported without a CheckToolUse before it"},
		},
		{
			name:  "unset outcome, error ignored",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, unsetOutcome: true} },
			want:  []string{`tasks: task 0 (t): Run failed`, `tool use "Read" has no outcome: set ToolUse.Outcome`},
		},
		{
			name:  "unset outcome, error returned",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, unsetOutcome: true, returnReportErr: true} },
			want:  []string{`tasks: task 0 (t): Run failed`, `tool use "Read" has no outcome: set ToolUse.Outcome`},
		},
		{
			name:  "ignores cancellation",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, ignoreCancel: true} },
			want:  []string{"did not return within 5s of its context being cancelled"},
		},
		{
			name:  "fails its task",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, fail: true} },
			want:  []string{"Run failed: run: nope"},
		},
		{
			name:  "chokes on context beside the prompt",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, strictPrompt: true} },
			want:  []string{"context beside the prompt: task 0 (t): Run failed", "prompt must be one word"},
		},
		{
			name:  "panics on bad state",
			agent: func() sdk.Agent { return &statefulBadAgent{badAgent{info: okInfo}} },
			want:  []string{"malformed state made the agent panic"},
		},
		{
			name:  "empty tool name, empty path, blank artifact item",
			agent: func() sdk.Agent { return &badAgent{info: okInfo, sloppyReport: true} },
			want:  []string{"has no Tool name", "reports an empty path", "Result.Artifact.KeyDecisions[0] is blank"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := conformance.TestAgent(context.Background(), tt.agent, sdk.Task{Name: "t", Prompt: "go"})
			if err == nil {
				t.Fatal("got no violations")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %v\nwant a violation containing %q", err, w)
				}
			}
		})
	}
}

// TestRacyAgentFailsUnderRace runs the conformance check on an agent with
// a data race in a test binary of its own: built with -race, the race
// detector fails it. (Run in this process, the race would fail this test.)
func TestRacyAgentFailsUnderRace(t *testing.T) {
	t.Parallel()
	if os.Getenv("SDKTEST_RACY_AGENT") == "1" {
		if err := conformance.TestAgent(context.Background(), func() sdk.Agent { return &racyAgent{} }, sdk.Task{Name: "t", Prompt: "go"}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !raceEnabled {
		testenv.Missing(t, "this test needs the race detector", "run go test -race")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRacyAgentFailsUnderRace$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SDKTEST_RACY_AGENT=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the racy agent passed the conformance check under -race:\n%s", out)
	}
	if !strings.Contains(string(out), "DATA RACE") || !strings.Contains(string(out), "racyAgent") {
		t.Errorf("got %v and\n%s\nwant a data race report naming racyAgent", err, out)
	}
}

func TestChecksAreListed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range conformance.Checks() {
		if c.Name == "" || c.Description == "" || c.Run == nil {
			t.Errorf("check %+v: want a name, a description and a Run", c)
		}
		if seen[c.Name] {
			t.Errorf("check %q is listed twice", c.Name)
		}
		seen[c.Name] = true
	}
	for _, want := range []string{"asks first", "denied tool uses", "concurrent tasks", "context beside the prompt"} {
		if !seen[want] {
			t.Errorf("no check %q", want)
		}
	}
}

func TestConformanceNeedsATask(t *testing.T) {
	t.Parallel()
	err := conformance.TestAgent(context.Background(), func() sdk.Agent { return &badAgent{info: okInfo} })
	if err == nil || !strings.Contains(err.Error(), "needs at least one task") {
		t.Errorf("got %v, want a request for a task", err)
	}
}

var okInfo = sdk.Info{Name: "bad", Version: "1"}

// badAgent breaks the contract in the ways its flags say; with none set,
// it keeps it.
type badAgent struct {
	info            sdk.Info
	ignoreDenial    bool
	callID          string
	neverAsks       bool
	asksOther       bool
	unsetOutcome    bool
	returnReportErr bool
	ignoreCancel    bool
	fail            bool
	strictPrompt    bool
	sloppyReport    bool
}

func (a *badAgent) Describe(context.Context) (sdk.Info, error) { return a.info, nil }

func (a *badAgent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if a.ignoreCancel && ctx.Err() != nil {
		<-hung // holds the task past the check's limit, until the tests end
		return sdk.Result{}, ctx.Err()
	}
	if a.fail {
		return sdk.Result{}, errors.New("nope")
	}
	if a.strictPrompt && (len(strings.Fields(t.Prompt)) != 1 || t.Context != "" || t.Feedback != "") {
		// An agent that folds context into its prompt and then parses it.
		return sdk.Result{}, sdk.Permanent(fmt.Errorf("prompt must be one word, got %q", t.Context+t.Prompt+t.Feedback))
	}
	read := []string{".env"}
	switch {
	case a.ignoreDenial:
		_, _ = cb.CheckToolUse(ctx, sdk.ToolCall{CallID: a.callID, Tool: "Read", Kind: sdk.KindRead, Paths: read})
		return sdk.Result{}, cb.ReportToolUse(ctx, sdk.ToolUse{CallID: a.callID, Tool: "Read", Kind: sdk.KindRead, Paths: read, Outcome: sdk.OutcomeOK})
	case a.neverAsks:
		return sdk.Result{}, cb.ReportToolUse(ctx, sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: read, Outcome: sdk.OutcomeOK})
	case a.asksOther:
		v, err := cb.CheckToolUse(ctx, sdk.ToolCall{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"README.md"}})
		if err != nil || !v.Allow {
			return sdk.Result{}, err
		}
		return sdk.Result{}, cb.ReportToolUse(ctx, sdk.ToolUse{Tool: "Read", Kind: sdk.KindRead, Paths: read, Outcome: sdk.OutcomeOK})
	case a.unsetOutcome:
		call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: read}
		v, err := cb.CheckToolUse(ctx, call)
		if err != nil || !v.Allow {
			return sdk.Result{}, err
		}
		err = cb.ReportToolUse(ctx, sdk.ToolUse{CallID: call.CallID, Tool: "Read", Kind: sdk.KindRead, Paths: read})
		if a.returnReportErr {
			return sdk.Result{}, err
		}
		return sdk.Result{Output: "read .env"}, nil
	case a.sloppyReport:
		call := sdk.ToolCall{CallID: sdk.NewID("call"), Paths: []string{" "}}
		if v, err := cb.CheckToolUse(ctx, call); err != nil || !v.Allow {
			return sdk.Result{}, err
		}
		err := cb.ReportToolUse(ctx, sdk.ToolUse{CallID: call.CallID, Paths: []string{" "}, Outcome: sdk.OutcomeOK})
		return sdk.Result{Artifact: sdk.ContextArtifact{KeyDecisions: []string{"  "}}}, err
	}
	return sdk.Result{}, nil
}

type statefulBadAgent struct{ badAgent }

func (a *statefulBadAgent) ExportState(context.Context) ([]byte, error) {
	return json.Marshal(map[string]int{"n": 1})
}

func (a *statefulBadAgent) ImportState(_ context.Context, b []byte) error {
	var m map[string]int
	_ = json.Unmarshal(b, &m)
	if m["n"] != 1 {
		panic("state without n")
	}
	return nil
}

// toolsAgent counts the words of the file its prompt names, through
// sdk.Tools: it keeps the contract without thinking about it.
type toolsAgent struct{ root string }

func (a *toolsAgent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "words", Version: "1", Capacity: 2}, nil
}

func (a *toolsAgent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	tools := sdk.NewTools(cb, a.root)
	b, err := tools.Read(ctx, t.Prompt)
	if errors.Is(err, sdk.ErrDenied) {
		return sdk.Result{Output: "not allowed to read " + t.Prompt}, nil
	}
	if err != nil {
		return sdk.Result{}, err
	}
	n := len(strings.Fields(string(b)))
	return sdk.Result{
		Output:   fmt.Sprintf("%d words", n),
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{fmt.Sprintf("%s has %d words", t.Prompt, n)}},
	}, nil
}

// together fails every task that does not find n-1 others running beside
// it within a few seconds.
type together struct {
	n       int
	mu      sync.Mutex
	running int
	all     chan struct{}
}

func (a *together) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "together", Version: "1", Capacity: a.n}, nil
}

func (a *together) Run(ctx context.Context, t sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
	a.mu.Lock()
	a.running++
	if a.running == a.n {
		close(a.all)
	}
	all := a.all
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.running--
		if a.running == 0 {
			a.all = make(chan struct{})
		}
		a.mu.Unlock()
	}()
	select {
	case <-all:
		return sdk.Result{Output: "together"}, nil
	case <-ctx.Done():
		return sdk.Result{}, ctx.Err()
	case <-time.After(2 * time.Second):
		return sdk.Result{}, fmt.Errorf("task %s ran alone: want %d tasks at once", t.ID, a.n)
	}
}

// racyAgent counts its tasks without a lock.
type racyAgent struct{ tasks int }

func (a *racyAgent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "racy", Version: "1", Capacity: 4}, nil
}

func (a *racyAgent) Run(context.Context, sdk.Task, sdk.Callbacks) (sdk.Result, error) {
	a.tasks++
	return sdk.Result{Output: fmt.Sprint(a.tasks)}, nil
}

// TestHelperPlugin is the plugin program of the tests over a command: the
// test binary run again, serving the agent SDKTEST_PLUGIN names.
func TestHelperPlugin(t *testing.T) {
	t.Parallel()
	switch os.Getenv("SDKTEST_PLUGIN") {
	case "":
		return
	case "scripted":
		plugin.Serve(testagent.New("scripted", 2))
	case "never-asks":
		plugin.Serve(&badAgent{info: okInfo, neverAsks: true})
	case "dies":
		fmt.Fprintln(os.Stderr, "no settings, no agent")
		os.Exit(7)
	}
	os.Exit(0)
}

// TestConformanceOverACommand runs the same checks against plugin
// processes, over the real protocol: a keeping agent passes, a breaking
// one is caught.
func TestConformanceOverACommand(t *testing.T) {
	t.Parallel()
	target := func(agent string) conformance.Target {
		return conformance.Command([]string{"SDKTEST_PLUGIN=" + agent}, os.Args[0], "-test.run=^TestHelperPlugin$")
	}
	if _, ok := target("scripted").(conformance.Local); ok {
		t.Error("a command's target claims to be in this process")
	}
	if err := conformance.TestTarget(context.Background(), target("scripted"), sdk.Task{Name: "read", Prompt: "read:src/a.go;echo:done"}); err != nil {
		t.Fatal(err)
	}
	err := conformance.TestTarget(context.Background(), target("never-asks"), sdk.Task{Name: "t", Prompt: "go"})
	if err == nil || !strings.Contains(err.Error(), "tool use Read [.env] was reported without a CheckToolUse before it") {
		t.Errorf("got %v, want the unasked tool use caught", err)
	}
}

// TestACheckThatCouldNotRunFails: an agent whose tasks use no tool gives
// the checks of asking first and of denials nothing to see; they fail,
// saying so, instead of passing. A check that does not apply (state, for
// an agent that exports none) is neither.
func TestACheckThatCouldNotRunFails(t *testing.T) {
	t.Parallel()
	r, err := conformance.RunChecks(context.Background(), conformance.InProcess(func() sdk.Agent { return &badAgent{info: okInfo} }), sdk.Task{Name: "t", Prompt: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		switch c.Name {
		case "asks first", "denied tool uses":
			if len(c.Errors) != 1 || !strings.Contains(c.Errors[0].Error(), "could not run: no task used a tool") {
				t.Errorf("%s: %v, want it failed as a check that could not run", c.Name, c.Errors)
			}
		case "state", "guarded path", "shutdown", "host crash":
			if c.NotApplicable == "" || len(c.Errors) > 0 {
				t.Errorf("%s: %+v, want it not applicable", c.Name, c)
			}
		}
	}
}

// TestFixture: the fixture's tasks name its files, one directory behind
// a guard; an agent that reads what its tasks name passes every check
// that applies, the guarded path one included; one that reads a denied
// file anyway fails it.
func TestFixture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite, remove, err := conformance.Fixture(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tasks) != 2 || len(suite.Guarded) != 1 {
		t.Fatalf("suite %+v, want two tasks and a guarded path", suite)
	}
	for _, f := range append(suite.Tasks[0].Hints.Files, suite.Tasks[1].Hints.Files...) {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("a task names %s: %v", f, err)
		}
	}
	t.Run("honest", func(t *testing.T) {
		r, err := conformance.RunSuite(context.Background(), conformance.InProcess(func() sdk.Agent { return &hintsAgent{root: dir} }), suite)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if len(c.Errors) > 0 || c.Name == "guarded path" && c.NotApplicable != "" {
				t.Errorf("%s: %v %s", c.Name, c.Errors, c.NotApplicable)
			}
		}
	})
	t.Run("reads denied files", func(t *testing.T) {
		r, err := conformance.RunSuite(context.Background(), conformance.InProcess(func() sdk.Agent { return &hintsAgent{root: dir, ignoreDenials: true} }), suite)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Checks {
			if c.Name == "guarded path" && (len(c.Errors) == 0 || !strings.Contains(c.Errors[0].Error(), "keys.md] was denied but reported as done")) {
				t.Errorf("guarded path: %v, want the guarded file's read caught", c.Errors)
			}
		}
	})
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("after remove: %v", entries)
	}
}

// hintsAgent reads the files its task names; with ignoreDenials it asks
// but reads and reports them as done anyway.
type hintsAgent struct {
	root          string
	ignoreDenials bool
}

func (a *hintsAgent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "hints", Version: "1"}, nil
}

func (a *hintsAgent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	tools := sdk.NewTools(cb, a.root)
	for _, f := range t.Hints.Files {
		if a.ignoreDenials {
			call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{f}}
			if _, err := cb.CheckToolUse(ctx, call); err != nil {
				return sdk.Result{}, err
			}
			if err := cb.ReportToolUse(ctx, sdk.ToolUse{CallID: call.CallID, Tool: "Read", Kind: sdk.KindRead, Paths: []string{f}, Outcome: sdk.OutcomeOK}); err != nil {
				return sdk.Result{}, err
			}
			continue
		}
		if _, err := tools.Read(ctx, f); err != nil && !errors.Is(err, sdk.ErrDenied) {
			return sdk.Result{}, err
		}
	}
	return sdk.Result{Output: "read"}, nil
}

// TestADeadProgramIsExplained: a program that dies before its handshake
// is explained by its exit status and its stderr.
func TestADeadProgramIsExplained(t *testing.T) {
	t.Parallel()
	target := conformance.Command([]string{"SDKTEST_PLUGIN=dies"}, os.Args[0], "-test.run=^TestHelperPlugin$")
	_, err := conformance.RunChecks(context.Background(), target, sdk.Task{Name: "t", Prompt: "go"})
	var ee *conformance.ExitError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "the program exited with status 7") || !strings.Contains(err.Error(), "no settings, no agent") {
		t.Errorf("got %v, want the exit status and the stderr of the program", err)
	}
}
