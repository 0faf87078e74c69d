package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// callLimit bounds each call the conformance check makes, so that an agent
// that hangs fails the check instead of hanging the author's test run.
const callLimit = 30 * time.Second

// cancelLimit is how long Run may take to return once its context is done.
const cancelLimit = 5 * time.Second

// concurrencyRounds is how many times the concurrency check starts its
// tasks at once: more rounds, more interleavings for the race detector.
const concurrencyRounds = 2

// besideCalls bounds the Describe and ExportState calls the concurrency
// check makes beside each round of tasks.
const besideCalls = 64

// TestAgent checks that the agents made by newAgent keep the hearth agent
// contract while running tasks, each of which the agent should complete
// successfully. It returns nil, or an error listing every violation found.
// The checks are those of Checks, in order:
//
//   - Describe names the agent and its version and declares a non-negative
//     capacity.
//   - Every task succeeds through the plugin protocol, and reports
//     well-formed tool uses: a tool name, a known kind, an outcome (a
//     report without one is refused by the SDK, which fails the task), no
//     empty path; its artifact has no blank item.
//   - Every task also succeeds with upstream context and feedback beside
//     its prompt (Task.Upstream, Context, Feedback).
//   - The agent asks before each tool use: every tool use reported as done
//     or failed follows a CheckToolUse with the same call ID, or with the
//     same tool and paths.
//   - With every tool use denied, Run still returns, and no tool use that
//     was denied (by call ID, or by tool and paths) is reported as done.
//   - With a guard denying the suite's guarded paths only (RunSuite,
//     Fixture), the agent asks about one, and does not report a denied
//     use as done.
//   - Run returns promptly when its context is already cancelled.
//   - Capacity tasks run at once on one session (at least one), twice
//     over, while Describe and ExportState are called beside them, and
//     all succeed. The agent runs in the test's own process, so run your
//     tests with -race: the race detector then fails the test on any
//     data race among concurrent tasks, their tool reports and the
//     session's other calls. Without -race a race goes unseen.
//   - An agent that exports state can be rehydrated into a fresh agent
//     that then runs the first task, and does not panic on malformed state.
//   - A plugin program (a Target that is a Program, such as Command's;
//     `hearth agents test` runs these checks on one) also exits within 2s
//     of the host's request to shut down and within 1s of its host being
//     killed, and gives up a tool question the host holds within 5s of its
//     task's cancellation. Agents in this process skip these.
//
// A check that applies but never saw what it checks fails, saying why it
// could not run: the checks of asking first and of denials need tasks the
// agent uses a tool for. A check that does not apply to the agent (state,
// for one that exports none; how a program ends, for an agent in this
// process; the guarded path, without guarded paths) is left out.
//
// newAgent is called once per fresh session the checks need.
func TestAgent(ctx context.Context, newAgent func() sdk.Agent, tasks ...sdk.Task) error {
	return TestTarget(ctx, InProcess(newAgent), tasks...)
}

// TestTarget runs Checks against the agent reached through t, as
// TestAgent does for an agent in this process.
func TestTarget(ctx context.Context, t Target, tasks ...sdk.Task) error {
	r, err := RunChecks(ctx, t, tasks...)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range r.Checks {
		for _, e := range c.Errors {
			errs = append(errs, fmt.Errorf("conformance: agent %q: %s: %w", r.Info.Name, c.Name, e))
		}
	}
	return errors.Join(errs...)
}

// Report is what RunChecks found.
type Report struct {
	// Info is what the agent's Describe said.
	Info sdk.Info
	// ExportsState is whether it exports its session's state.
	ExportsState bool
	// Checks are the results, in the order of Checks.
	Checks []Result
}

// Result is one check's outcome: it passed when Errors is empty and
// NotApplicable is "". A check that applies but could not run (a check
// of how tool uses are asked about, when no task used a tool) failed:
// its error says why it could not run.
type Result struct {
	// Name and Description are the check's.
	Name, Description string
	// Errors are the violations found, one per error.
	Errors []error
	// NotApplicable, when set, says why the check does not apply to
	// this agent (an agent that exports no state has no state to
	// check); it neither passed nor failed.
	NotApplicable string
}

// notApplicable is what a check returns, alone, when it does not apply
// to the agent: RunSuite records it as the Result's NotApplicable.
type notApplicable string

func (n notApplicable) Error() string { return "does not apply: " + string(n) }

// couldNotRun is the violation of a check that applies but never saw
// what it checks.
func couldNotRun(format string, args ...any) error {
	return fmt.Errorf("could not run: "+format, args...)
}

// Suite is what an agent is checked with.
type Suite struct {
	// Tasks are tasks the agent should complete with every tool use
	// allowed. At least one.
	Tasks []sdk.Task
	// Guarded, when set, are paths (as the tasks name them, or
	// directories holding them) that a guard denies in the "guarded
	// path" check; without them that check does not apply. Fixture
	// makes tasks and a guarded path that every check can run on.
	Guarded []string
}

// RunChecks describes the agent reached through t and runs every check of
// Checks against it, with tasks it should complete. The error is for an
// agent that cannot be started or described at all; violations are in
// the Report.
func RunChecks(ctx context.Context, t Target, tasks ...sdk.Task) (*Report, error) {
	return RunSuite(ctx, t, Suite{Tasks: tasks})
}

// RunSuite is RunChecks with a Suite: tasks, and the paths a guard
// denies.
func RunSuite(ctx context.Context, t Target, suite Suite) (*Report, error) {
	if len(suite.Tasks) == 0 {
		return nil, errors.New("conformance: TestAgent needs at least one task the agent should complete")
	}
	s := &Subject{Target: t, Tasks: suite.Tasks, Guarded: suite.Guarded}
	h, err := t.Start(Options{})
	if err != nil {
		return nil, err // Start says what it started and how it failed
	}
	cctx, cancel := context.WithTimeout(ctx, callLimit)
	s.Info, err = h.Agent.Describe(cctx)
	cancel()
	err = h.explain(err)
	s.ExportsState = h.Agent.ExportsState()
	if cerr := h.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("conformance: Describe failed: %w", err)
	}
	r := &Report{Info: s.Info, ExportsState: s.ExportsState}
	for _, c := range Checks() {
		res := Result{Name: c.Name, Description: c.Description, Errors: c.Run(ctx, s)}
		var na notApplicable
		if len(res.Errors) == 1 && errors.As(res.Errors[0], &na) {
			res.Errors, res.NotApplicable = nil, string(na)
		}
		r.Checks = append(r.Checks, res)
	}
	return r, nil
}

// Target is the agent under test, however the checks reach it: an agent
// in this process (InProcess) or a plugin program spoken to over the real
// protocol. Every check starts the sessions it needs.
type Target interface {
	// Start starts a fresh session of the agent, served over the plugin
	// protocol, with a Recorder answering with opts.Policy. Close it when
	// done.
	Start(opts Options) (*Harness, error)
}

// Local is an optional upgrade of a Target whose agent lives in this
// process. The check of a Run whose context is already cancelled needs
// one: gRPC does not even send such a call, and it is the author's code
// that must notice.
type Local interface {
	Target
	// NewAgent returns a fresh agent, called directly.
	NewAgent() sdk.Agent
}

// InProcess returns the Target of the agents newAgent makes, each served
// in this process with Start. It implements Local.
func InProcess(newAgent func() sdk.Agent) Target { return localAgents(newAgent) }

// Command returns the Target of the plugin program argv: each session is
// a process of its own, started with StartCommand, with env added to the
// environment it inherits. It is not Local: the check of a Run whose
// context is already cancelled is skipped.
func Command(env []string, argv ...string) Target { return command{env: env, argv: argv} }

// CommandIn is Command with the program run in the directory dir.
func CommandIn(dir string, env []string, argv ...string) Target {
	return command{dir: dir, env: env, argv: argv}
}

type command struct {
	dir       string
	env, argv []string
}

func (c command) Cmd() *exec.Cmd {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Dir = c.dir
	return cmd
}

func (c command) Start(opts Options) (*Harness, error) {
	if len(c.argv) == 0 {
		return nil, errors.New("conformance: Command needs the program to run")
	}
	return StartCommand(c.Cmd(), opts)
}

type localAgents func() sdk.Agent

func (f localAgents) Start(opts Options) (*Harness, error) { return Start(f(), opts) }
func (f localAgents) NewAgent() sdk.Agent                  { return f() }

// Program is an optional upgrade of a Target whose agent is a plugin
// program: the checks of how it ends (shutdown, host crash) start it
// themselves. Command's Target implements it.
type Program interface {
	Target
	// Cmd returns a new, unstarted command that runs the program.
	Cmd() *exec.Cmd
}

// Subject is the agent under test as a check sees it.
type Subject struct {
	// Target starts its sessions.
	Target Target
	// Tasks are tasks the agent should complete.
	Tasks []sdk.Task
	// Guarded are paths a guard denies in the guarded path check
	// (Suite.Guarded).
	Guarded []string
	// Info is what its Describe said.
	Info sdk.Info
	// ExportsState is whether it exports its session's state.
	ExportsState bool

	ranOnce sync.Once
	ran     []taskRun
	ranErr  error
}

// taskRun is one of the subject's tasks run on a session that allows
// every tool use.
type taskRun struct {
	task sdk.Task
	res  sdk.Result
	err  error
	log  []Entry
}

// allowed runs every task once on one session that allows all tool uses,
// for the checks that read what they did.
func (s *Subject) allowed(ctx context.Context) ([]taskRun, error) {
	s.ranOnce.Do(func() {
		h, err := s.Target.Start(Options{})
		if err != nil {
			s.ranErr = err
			return
		}
		defer h.Close()
		for i, t := range s.Tasks {
			t.ID = fmt.Sprintf("conformance-%d", i)
			cctx, cancel := context.WithTimeout(ctx, callLimit)
			res, err := h.Run(cctx, t)
			cancel()
			s.ran = append(s.ran, taskRun{task: t, res: res, err: h.explain(err), log: h.Recorder.Log(t.ID)})
		}
	})
	return s.ran, s.ranErr
}

// Check is one check of the contract. Checks run in the order Checks
// lists them, each on sessions of its own.
type Check struct {
	// Name names the check in its failures.
	Name string
	// Description says what the check holds the agent to.
	Description string
	// Run checks s and returns what it found wrong, one error per
	// violation.
	Run func(ctx context.Context, s *Subject) []error
}

// Checks returns the contract's checks, in the order TestAgent runs them.
func Checks() []Check {
	return []Check{
		{"Describe", "Describe names the agent (one word) and its version, and declares a capacity of 0 or more.", checkDescribe},
		{"tasks", "Every task succeeds through the plugin protocol and reports well-formed tool uses (a tool name, a known kind, an outcome, no empty path); its artifact has no blank item.", checkTasks},
		{"context beside the prompt", "Every task succeeds when upstream context and feedback come beside its prompt (Task.Upstream, Task.Context, Task.Feedback).", checkContext},
		{"asks first", "Every tool use reported as done or failed follows a CheckToolUse with the same call ID, or with the same tool and paths.", checkAsksFirst},
		{"denied tool uses", "With every tool use denied, Run returns, and no denied tool use (by call ID, or by tool and paths) is reported as done.", checkDenied},
		{"guarded path", "With a guard denying the guarded paths only, every task returns, the agent asks about a guarded path, and no denied tool use is reported as done, while the others go on.", checkGuarded},
		{"cancelled context", "Run returns within 5s when its context is already cancelled (agents in this process); a plugin program gives up a tool question the host holds within 5s of its task's cancellation, and runs the next task.", checkCancelled},
		{"concurrent tasks", "Capacity tasks run at once on one session, twice over, beside Describe and ExportState calls, and all succeed; run with -race to catch data races.", checkConcurrent},
		{"state", "An agent that exports state is rehydrated into a fresh session that runs the first task, and malformed state is an error, not a panic.", checkState},
		{"shutdown", "A plugin program exits within 2s of the host's request to shut down (programs only).", checkShutdown},
		{"host crash", "A plugin program exits within 1s of its host being killed with SIGKILL (programs only).", checkHostCrash},
	}
}

func checkDescribe(_ context.Context, s *Subject) []error {
	var errs []error
	info := s.Info
	switch {
	case info.Name == "":
		errs = append(errs, errors.New("Info.Name is empty; name the agent"))
	case strings.ContainsAny(info.Name, " \t\n"):
		errs = append(errs, fmt.Errorf("Info.Name %q contains whitespace; use a single word such as %q", info.Name, strings.Join(strings.Fields(info.Name), "-")))
	}
	if info.Version == "" {
		errs = append(errs, errors.New("Info.Version is empty; give the agent a version such as \"0.1.0\""))
	}
	if info.Capacity < 0 {
		errs = append(errs, fmt.Errorf("Info.Capacity is %d; use 0 or 1 for one task at a time, more for concurrent tasks", info.Capacity))
	}
	return errs
}

func checkTasks(ctx context.Context, s *Subject) []error {
	runs, err := s.allowed(ctx)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for i, r := range runs {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("task %d (%s): %s", i, describeTask(r.task), fmt.Sprintf(format, args...)))
		}
		if r.err != nil {
			fail("Run failed: %v", r.err)
			continue
		}
		j := 0
		for _, e := range r.log {
			if e.Use == nil {
				continue
			}
			u := e.Use
			if u.Tool == "" {
				fail("tool use %d has no Tool name", j)
			}
			switch {
			case u.Outcome == sdk.OutcomeUnset:
				fail("tool use %d (%s) has no outcome; set Outcome to OutcomeOK, OutcomeError or OutcomeDenied", j, u.Tool)
			case u.Outcome < sdk.OutcomeUnset || u.Outcome > sdk.OutcomeDenied:
				fail("tool use %d (%s) has an unknown outcome %d", j, u.Tool, u.Outcome)
			}
			if !u.Kind.Valid() {
				fail("tool use %d (%s) has an unknown kind %q; use one of the sdk.Kind constants, or leave it empty", j, u.Tool, u.Kind)
			}
			for _, p := range u.Paths {
				if strings.TrimSpace(p) == "" {
					fail("tool use %d (%s) reports an empty path", j, u.Tool)
				}
			}
			j++
		}
		a := r.res.Artifact
		for _, list := range []struct {
			name  string
			items []string
		}{{"KeyDecisions", a.KeyDecisions}, {"ModifiedFiles", a.ModifiedFiles}, {"NewPatterns", a.NewPatterns}, {"PotentialGotchas", a.PotentialGotchas}} {
			for k, item := range list.items {
				if strings.TrimSpace(item) == "" {
					fail("Result.Artifact.%s[%d] is blank; leave blank items out", list.name, k)
				}
			}
		}
	}
	return errs
}

// sampleUpstream is the context the context check puts beside a prompt.
func sampleUpstream() ([]sdk.Upstream, string, string) {
	up := []sdk.Upstream{{
		Task: "earlier", Version: 1, Session: "session-sdktest", CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		Artifact: sdk.ContextArtifact{
			KeyDecisions:     []string{"Used the standard library only."},
			ModifiedFiles:    []string{"notes.md"},
			PotentialGotchas: []string{"# headings and \"quotes\" in context must not confuse the agent"},
		},
	}}
	block := "# Context from Previous Steps\nThe following context was learned from the \"earlier\" session:\n\n" +
		"- **Key Decision:** Used the standard library only.\n- **Modified:** notes.md\n\n*Use this knowledge to maintain consistency.*\n"
	return up, block, "The evaluate step's quality gate sent this work back: say more."
}

func checkContext(ctx context.Context, s *Subject) []error {
	h, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	up, block, feedback := sampleUpstream()
	var errs []error
	for i, t := range s.Tasks {
		t.ID = fmt.Sprintf("context-%d", i)
		t.Upstream, t.Context, t.Feedback = up, block, feedback
		cctx, cancel := context.WithTimeout(ctx, callLimit)
		_, err := h.Run(cctx, t)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("task %d (%s): Run failed: %v; the prompt comes as written, with what earlier tasks learned beside it in Task.Upstream and Task.Context, and feedback in Task.Feedback", i, describeTask(t), err))
		}
	}
	return errs
}

// sameCall reports whether a question and a report are about the same
// tool use: the same call ID, or, without one, the same tool and paths.
func sameCall(c sdk.ToolCall, u *sdk.ToolUse) bool {
	if c.CallID != "" && c.CallID == u.CallID {
		return true
	}
	return c.Tool == u.Tool && samePaths(c.Paths, u.Paths)
}

func samePaths(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// noToolUse is why a check of tool uses could not run.
const noToolUse = "no task used a tool, so %s was never seen; give tasks that make the agent use one (tasks that name files or directories: hearth agents test without --task, --file and --dir makes such tasks over files of its own)"

func checkAsksFirst(ctx context.Context, s *Subject) []error {
	runs, err := s.allowed(ctx)
	if err != nil {
		return []error{err}
	}
	var errs []error
	used := false
	for _, r := range runs {
		used = used || len(r.log) > 0
	}
	if !used {
		return []error{couldNotRun(noToolUse, "whether the agent asks before a tool use")}
	}
	for i, r := range runs {
		var asked []sdk.ToolCall
		for _, e := range r.log {
			if e.Call != nil {
				asked = append(asked, e.Call.Call)
				continue
			}
			u := e.Use
			if u.Outcome != sdk.OutcomeOK && u.Outcome != sdk.OutcomeError {
				continue
			}
			if !slices.ContainsFunc(asked, func(c sdk.ToolCall) bool { return sameCall(c, u) }) {
				errs = append(errs, fmt.Errorf("task %d (%s): tool use %s %v was reported without a CheckToolUse before it; ask the host first, with the same call ID (sdk.Tools asks, does the work and reports in one call)",
					i, describeTask(r.task), u.Tool, u.Paths))
			}
		}
	}
	return errs
}

func checkDenied(ctx context.Context, s *Subject) []error {
	h, err := s.Target.Start(Options{Policy: DenyAll})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	var errs []error
	asked := false
	for i, t := range s.Tasks {
		t.ID = fmt.Sprintf("denied-%d", i)
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("task %d (%s) with every tool use denied: %s", i, describeTask(t), fmt.Sprintf(format, args...)))
		}
		cctx, cancel := context.WithTimeout(ctx, callLimit)
		_, err := h.Run(cctx, t)
		cancel()
		err = h.explain(err)
		if errors.Is(err, context.DeadlineExceeded) {
			fail("Run did not return within %s", callLimit)
			continue
		}
		if errors.Is(err, sdk.ErrAgentPanicked) || errors.Is(err, sdk.ErrConnectionLost) {
			fail("Run failed: %v", err)
			continue
		}
		denied := deniedReportedDone(h.Recorder.Log(t.ID), func(u *sdk.ToolUse) {
			fail("tool use %s %v was denied but reported as done; skip a denied call and report it with OutcomeDenied", u.Tool, u.Paths)
		})
		asked = asked || denied > 0
	}
	if !asked && len(errs) == 0 {
		return []error{couldNotRun(noToolUse, "whether the agent honours a denial")}
	}
	return errs
}

// deniedReportedDone calls done for each tool use of log that was denied
// (by call ID, or by tool and paths) but reported as done or failed, and
// returns how many questions were denied.
func deniedReportedDone(log []Entry, done func(*sdk.ToolUse)) int {
	var denied []sdk.ToolCall
	for _, e := range log {
		if e.Call != nil {
			if !e.Call.Verdict.Allow {
				denied = append(denied, e.Call.Call)
			}
			continue
		}
		u := e.Use
		if u.Outcome != sdk.OutcomeOK && u.Outcome != sdk.OutcomeError {
			continue
		}
		if slices.ContainsFunc(denied, func(c sdk.ToolCall) bool { return sameCall(c, u) }) {
			done(u)
		}
	}
	return len(denied)
}

// guardPolicy denies a tool use that touches a path under one of
// guarded, as a guard would, and allows the rest.
func guardPolicy(guarded []string) Policy {
	return func(_ string, c sdk.ToolCall) sdk.Verdict {
		for _, p := range c.Paths {
			p = filepath.Clean(p)
			for _, g := range guarded {
				g = filepath.Clean(g)
				if p == g || strings.HasPrefix(p, g+string(filepath.Separator)) {
					return sdk.Verdict{Allow: false, Guard: "sdktest-guard", Reason: g + " is guarded: sdktest denies it"}
				}
			}
		}
		return sdk.Verdict{Allow: true}
	}
}

func checkGuarded(ctx context.Context, s *Subject) []error {
	if len(s.Guarded) == 0 {
		return []error{notApplicable("no guarded paths given (Suite.Guarded; hearth agents test guards a path of its own fixture)")}
	}
	h, err := s.Target.Start(Options{Policy: guardPolicy(s.Guarded)})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	var errs []error
	asked := false
	for i, t := range s.Tasks {
		t.ID = fmt.Sprintf("guarded-%d", i)
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("task %d (%s) with %s guarded: %s", i, describeTask(t), strings.Join(s.Guarded, ", "), fmt.Sprintf(format, args...)))
		}
		cctx, cancel := context.WithTimeout(ctx, callLimit)
		_, err := h.Run(cctx, t)
		cancel()
		err = h.explain(err)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fail("Run did not return within %s", callLimit)
			continue
		case errors.Is(err, sdk.ErrAgentPanicked) || errors.Is(err, sdk.ErrConnectionLost):
			fail("Run failed: %v", err)
			continue
		}
		// A task may fail for want of the guarded file: the contract is
		// that the agent does not use it anyway.
		if deniedReportedDone(h.Recorder.Log(t.ID), func(u *sdk.ToolUse) {
			fail("tool use %s %v was denied but reported as done; skip a denied call and report it with OutcomeDenied", u.Tool, u.Paths)
		}) > 0 {
			asked = true
		}
	}
	if !asked && len(errs) == 0 {
		return []error{couldNotRun("no task asked about a guarded path (%s), so whether the agent keeps out of it was never seen; give a task that names one", strings.Join(s.Guarded, ", "))}
	}
	return errs
}

func checkCancelled(ctx context.Context, s *Subject) []error {
	local, ok := s.Target.(Local)
	if !ok {
		return checkCancelledProgram(ctx, s)
	}
	a := local.NewAgent()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	t := s.Tasks[0]
	t.ID = "cancelled"
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		_, _ = a.Run(cctx, t, NewRecorder(nil).ForTask(t))
	}()
	select {
	case <-done:
		if panicked != nil {
			return []error{fmt.Errorf("Run panicked: %v", panicked)}
		}
	case <-time.After(cancelLimit):
		return []error{fmt.Errorf("Run did not return within %s of its context being cancelled; check ctx.Done() or ctx.Err() in long loops and pass ctx to blocking calls", cancelLimit)}
	}
	return nil
}

func checkConcurrent(ctx context.Context, s *Subject) []error {
	n := min(max(s.Info.Capacity, 1), 8)
	h, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for round := range concurrencyRounds {
		cctx, cancel := context.WithTimeout(ctx, callLimit)
		var tasks, beside sync.WaitGroup
		stop := make(chan struct{})
		// The session's other calls come at any time: a host describes
		// it and saves its state while tasks run. The calls are bounded,
		// not paced: a long task should not turn into a flood.
		beside.Go(func() {
			for range besideCalls {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := h.Agent.Describe(cctx); err != nil {
					fail(fmt.Errorf("Describe while tasks ran failed: %v", err))
					return
				}
				if s.ExportsState {
					if _, err := h.Agent.ExportState(cctx); err != nil {
						fail(fmt.Errorf("ExportState while tasks ran failed: %v", err))
						return
					}
				}
			}
		})
		for i := range n {
			tasks.Go(func() {
				t := s.Tasks[i%len(s.Tasks)]
				t.ID = fmt.Sprintf("concurrent-%d-%d", round, i)
				if _, err := h.Run(cctx, t); err != nil {
					fail(fmt.Errorf("task %d of %d running at once (capacity %d) failed: %v", i+1, n, s.Info.Capacity, err))
				}
			})
		}
		tasks.Wait()
		close(stop)
		beside.Wait()
		cancel()
	}
	return errs
}

func checkState(ctx context.Context, s *Subject) []error {
	if !s.ExportsState {
		return []error{notApplicable("the agent exports no state (sdk.StateExporter)")}
	}
	cctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	h, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	t := s.Tasks[0]
	t.ID = "before-export"
	if _, err := h.Run(cctx, t); err != nil {
		return []error{fmt.Errorf("the first task failed: %v", err)}
	}
	state, err := h.Agent.ExportState(cctx)
	if err != nil {
		return []error{fmt.Errorf("ExportState: %v", err)}
	}
	fresh, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer fresh.Close()
	var errs []error
	if err := fresh.Agent.ImportState(cctx, state); err != nil {
		errs = append(errs, fmt.Errorf("importing the state a session exported failed: %v", err))
	} else {
		t.ID = "rehydrated"
		if _, err := fresh.Run(cctx, t); err != nil {
			errs = append(errs, fmt.Errorf("a rehydrated session failed the first task: %v", err))
		}
	}
	garbage, err := s.Target.Start(Options{})
	if err != nil {
		return append(errs, err)
	}
	defer garbage.Close()
	if err := garbage.Agent.ImportState(cctx, []byte("\x00not state\xff")); errors.Is(err, sdk.ErrAgentPanicked) {
		errs = append(errs, fmt.Errorf("malformed state made the agent panic: %v; return an error instead", err))
	}
	return errs
}

func describeTask(t sdk.Task) string {
	if t.Name != "" {
		return t.Name
	}
	p := t.Prompt
	if len(p) > 40 {
		p = p[:40] + "..."
	}
	return fmt.Sprintf("%q", p)
}
