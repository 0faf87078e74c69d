// Package claude is a bundled hearth agent whose sessions are Claude Code
// sessions: hearth starts, resumes and places them like any other, and
// Claude Code does the work, with its own tools and its own loop.
//
// # A session is a Claude Code session
//
// One agent value is one hearth session, and owns one Claude Code
// session ID, chosen by the agent (a random UUID) at the session's first
// task. Each task runs `claude -p` once, headless (--output-format
// stream-json --verbose), with the task's prompt on stdin: the first
// with --session-id ID, every later one with --resume ID, so the model
// sees the conversation of the session's earlier tasks and reads nothing
// again that it already holds. A task that fails (a cancelled one, one
// past its deadline) leaves the conversation as it found it: its turns
// are cut from the transcript, as a half-done turn would otherwise be
// resumed. A task that arrives while another runs on the same session
// (capacity above 1) forks the conversation (--resume ID --fork-session):
// it sees everything before it, and what it does stays in its fork; one
// that arrives while a cancelled task winds down waits for it instead. hearth's matcher places tasks on these
// sessions like any other, from the fingerprints their hooks report.
//
// # Hooks wired by the agent
//
// Each run gets a settings file (--settings) written by the agent, whose
// command hooks (PreToolUse, PostToolUse, PostToolUseFailure) run the
// agent's own program as a relay (RelayHook) to a unix socket the agent
// listens on in its state directory. The agent hands each payload to the
// host through the task's callbacks: a PreToolUse to CheckToolUse, so
// the host's pre_tool_use guards decide, and a denial reaches the model
// as Claude Code reports a hook's denial; each tool use, failed ones
// included, to ReportToolUse, with the paths package host/claudecode
// reads from it (the same reading as for tracked sessions: a Bash
// command names what its words name that exists), so the fingerprint is
// what Claude Code read, edited and ran. It works the same with or
// without a daemon: the hooks never leave the plugin. A hook that cannot
// reach the agent denies the tool use; from Claude Code 2.1.295 the
// PreToolUse hook also carries onFailure: "block", so a relay that cannot
// even start blocks too. The user's own Claude Code settings are neither
// read nor changed: CLAUDE_CONFIG_DIR is the agent's own state directory.
// A project's .claude/settings.json still applies, as it would to anyone
// running Claude Code in that workspace.
//
// # Confinement and environment
//
// claude runs as the plugin's child, so under the plugin's Landlock
// policy; a config's claude_code block grants what it needs (the claude
// program's directory, the model endpoint's port; see host/config). The
// state directory (CLAUDE_CONFIG_DIR, HOME, TMPDIR for claude) is a
// directory in the plugin's private temporary directory. claude starts
// with an explicit environment: PATH, LANG, LC_ALL and TZ as the plugin
// has them, the state directory's variables, ANTHROPIC_BASE_URL when set,
// the key as ANTHROPIC_API_KEY (read from the variable APIKeyEnv names),
// and the switches that keep Claude Code from phoning home; nothing else
// of the plugin's environment. claude runs under a keeper (this
// program, as KeepArg), which ends every process of the run, those of
// Claude Code's Bash commands included, when claude ends, when the task
// is cancelled or past its deadline, and when the plugin dies (the
// host's kill -9 kills the plugin): see keep_linux.go.
//
// # Results
//
// The stream's assistant messages become the task's progress (which the
// host records as events); the final result is the output; the result's
// tokens become the metrics input_tokens (uncached input, cache writes
// included, as the model agent counts them), cached_input_tokens,
// cache_write_tokens and output_tokens, with turns, model_calls,
// tool_calls and claude_seconds; the cost Claude Code reports for the
// run is Result.Cost, in dollars. A refused key fails the task for good,
// naming the key's variable, at Claude Code's first retry rather than
// after all of them; a rate limit or overload is retried by Claude Code
// after the server's delay (reported as progress), and one that outlasts
// its retries fails the task so that the host may retry it; max_turns
// reached fails the task, saying so.
//
// # State
//
// ExportState is the Claude Code session ID, the session's cost so far,
// and its transcript, compressed; ImportState writes the transcript back
// into a new state directory, so a dormant session rehydrated into a new
// plugin process resumes the same conversation.
package claude

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Version of the agent.
const Version = "0.1.0"

// stopGrace is how long a cancelled claude has between SIGTERM and
// SIGKILL.
const stopGrace = 3 * time.Second

// Agent is the managed Claude Code agent. One Agent is one session. Use
// New or NewFromEnv.
type Agent struct {
	s   Settings
	err error // a settings error, reported by every task
	// relay is the program the hooks run (this program, as HookArg).
	relay string

	// setup makes the state directory and the hook socket, once.
	setup    sync.Once
	setupErr error
	state    string
	hooks    *hookServer
	version  CLIVersion

	// mu guards the session's Claude Code session ID and what it cost;
	// busy is held by the task that continues the conversation.
	mu   sync.Mutex
	busy bool
	// holder is the context of the task holding the conversation;
	// freed is signalled when it lets go.
	holder    context.Context
	freed     *sync.Cond
	sessionID string
	cost      float64
	tasks     int
	// transcript is an imported session's transcript, written into the
	// state directory at setup.
	transcript *exportedTranscript
}

// Option adjusts an Agent.
type Option func(*Agent)

// WithRelay makes the hooks run program (as `program HookArg SOCKET`)
// instead of this process's own executable: for tests, and for hosts
// that serve the agent from a program without RelayIfRequested.
func WithRelay(program string) Option { return func(a *Agent) { a.relay = program } }

// New returns a session of the agent with settings s. Bad settings are
// not an error here, where a plugin's main cannot report one: every task
// fails with them, permanently, saying what to fix.
func New(s Settings, opts ...Option) *Agent {
	a := &Agent{s: s.withDefaults()}
	a.freed = sync.NewCond(&a.mu)
	a.err = a.s.validate()
	for _, o := range opts {
		o(a)
	}
	if a.relay == "" {
		exe, err := os.Executable()
		if err != nil && a.err == nil {
			a.err = fmt.Errorf("find this program, which the hooks run: %w", err)
		}
		a.relay = exe
	}
	return a
}

// NewFromEnv returns a session configured by the environment (see
// SettingsFromEnv): what the bundled agent and hearth-claude serve.
func NewFromEnv() *Agent {
	s, err := SettingsFromEnv(os.LookupEnv)
	a := New(s)
	if err != nil {
		a.err = err
	}
	return a
}

// Describe implements sdk.Agent.
func (a *Agent) Describe(context.Context) (sdk.Info, error) {
	desc := "runs tasks as Claude Code sessions that hearth starts, resumes and places"
	if a.s.Model != "" {
		desc += " (" + a.s.Model + ")"
	}
	return sdk.Info{Name: "claude", Version: Version, Description: desc, Technologies: []string{"claude-code"}, Capacity: 1}, nil
}

// init makes the state directory and listens for hooks, once.
func (a *Agent) init() error {
	a.setup.Do(func() {
		path, v, err := CheckCLI(a.s.Command)
		if err != nil {
			a.setupErr = sdk.Permanent(fmt.Errorf("claude: %w", err))
			return
		}
		a.s.Command, a.version = path, v
		dir, err := os.MkdirTemp("", "hearth-claude-")
		if err != nil {
			a.setupErr = fmt.Errorf("claude: make the state directory: %w", err)
			return
		}
		for _, sub := range []string{"config", "home", "tmp"} {
			if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
				a.setupErr = fmt.Errorf("claude: make the state directory: %w", err)
				return
			}
		}
		a.state = dir
		if t := a.transcript; t != nil {
			if err := t.restore(filepath.Join(dir, "config")); err != nil {
				a.setupErr = fmt.Errorf("claude: restore the session's transcript: %w", err)
				return
			}
			a.transcript = nil
		}
		a.hooks, a.setupErr = listenHooks(filepath.Join(dir, "hooks.sock"))
	})
	return a.setupErr
}

// Run implements sdk.Agent: the task is the next turn of the session's
// Claude Code conversation, or a fork of it when another task holds the
// conversation.
func (a *Agent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	if a.err != nil {
		return sdk.Result{}, sdk.Permanent(fmt.Errorf("claude: the agent's settings: %w", a.err))
	}
	if err := a.init(); err != nil {
		return sdk.Result{}, err
	}
	a.mu.Lock()
	// A task held by one that was cancelled or ran out of time waits for
	// it to wind down (seconds at most, stopGrace) rather than fork: the
	// host sends the next task as soon as it has given up on the last,
	// and that task is the conversation's next turn, not a side branch.
	for a.busy && a.holder != nil && a.holder.Err() != nil {
		a.freed.Wait()
	}
	fork := a.busy && a.sessionID != ""
	resume, before := a.sessionID, a.cost
	id := resume
	if id == "" || fork {
		id = newUUID()
	}
	if !fork {
		a.busy, a.holder, a.sessionID = true, ctx, id
	}
	a.mu.Unlock()
	mark := a.transcriptSize(id)
	res, cost, ran, err := a.run(ctx, t, cb, runSpec{id: id, resume: resume, fork: fork, before: before})
	a.mu.Lock()
	defer a.mu.Unlock()
	if !fork {
		a.busy, a.holder = false, nil
		a.freed.Broadcast()
		switch {
		case err == nil:
			a.cost, a.tasks = a.cost+cost, a.tasks+1
			if ran != "" {
				// Claude Code may carry a resumed conversation on under a
				// new ID (seen after a run was killed mid-turn): the
				// conversation is where it says it is.
				a.sessionID = ran
			}
		default:
			// A task that fails leaves the conversation as it found it:
			// a turn cut short (a cancelled task, a deadline) would
			// otherwise be resumed half done, and Claude Code resumes
			// such a transcript from a branch the next task cannot see.
			a.rollback(id, resume == "", mark)
		}
	}
	return res, err
}

// transcriptSize is the size of session id's transcript, -1 for none.
func (a *Agent) transcriptSize(id string) int64 {
	p, err := a.transcriptPath(id)
	if err != nil {
		return -1
	}
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// rollback puts session id's transcript back as it was before a task
// that failed (its size then, mark; the transcript is append-only): a
// new session's is removed, and the next task starts the session anew.
func (a *Agent) rollback(id string, first bool, mark int64) {
	p, err := a.transcriptPath(id)
	switch {
	case first:
		if err == nil {
			_ = os.Remove(p)
		}
		a.sessionID = ""
	case err == nil && mark >= 0:
		_ = os.Truncate(p, mark)
	}
}

type runSpec struct {
	id, resume string
	fork       bool
	before     float64
}

// args are claude's arguments for one run.
func (a *Agent) args(r runSpec, settings string) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--settings", settings}
	switch {
	case r.resume == "":
		args = append(args, "--session-id", r.id)
	case r.fork:
		args = append(args, "--resume", r.resume, "--fork-session", "--session-id", r.id)
	default:
		args = append(args, "--resume", r.resume)
	}
	if a.s.Model != "" {
		args = append(args, "--model", a.s.Model)
	}
	if a.s.PermissionMode != "" {
		args = append(args, "--permission-mode", a.s.PermissionMode)
	}
	if len(a.s.AllowedTools) > 0 {
		args = append(args, "--allowedTools", strings.Join(a.s.AllowedTools, ","))
	}
	if len(a.s.DisallowedTools) > 0 {
		args = append(args, "--disallowedTools", strings.Join(a.s.DisallowedTools, ","))
	}
	args = append(args, "--max-turns", fmt.Sprint(a.s.MaxTurns))
	if a.s.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", a.s.AppendSystemPrompt)
	}
	return args
}

// env is claude's whole environment: nothing else of the plugin's.
func (a *Agent) env() []string {
	env := []string{
		"HOME=" + filepath.Join(a.state, "home"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(a.state, "config"),
		"TMPDIR=" + filepath.Join(a.state, "tmp"),
		// Claude Code checks for updates, reports errors and telemetry,
		// and fetches feature flags unless told not to; none of it is the
		// task's, and a confined claude could not reach it anyway.
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TZ", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if a.s.BaseURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+a.s.BaseURL)
	}
	if a.s.APIKey != "" {
		env = append(env, "ANTHROPIC_API_KEY="+a.s.APIKey)
	}
	return env
}

// hookCommand is the command Claude Code's hooks run: the hook relay
// program, given the agent's socket.
func (a *Agent) hookCommand() string {
	if a.s.HookRelay != "" {
		return shellQuote(a.s.HookRelay) + " --socket " + shellQuote(a.hooks.path)
	}
	return shellQuote(a.relay) + " " + HookArg + " " + shellQuote(a.hooks.path)
}

// promptOf is what claude is asked: what upstream tasks learned, the
// prompt as written, and why the task was sent back.
func promptOf(t sdk.Task) string {
	var parts []string
	if t.Context != "" {
		parts = append(parts, t.Context)
	}
	parts = append(parts, t.Prompt)
	if t.Feedback != "" {
		parts = append(parts, "This task was sent back: "+t.Feedback)
	}
	return strings.Join(parts, "\n\n")
}

// run runs claude once for task t, and returns the result and what the
// run cost.
func (a *Agent) run(ctx context.Context, t sdk.Task, cb sdk.Callbacks, r runSpec) (sdk.Result, float64, string, error) {
	cwd := a.s.Root
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return sdk.Result{}, 0, "", fmt.Errorf("claude: the workspace: %w", err)
		}
	}
	settings, err := hookSettings(a.s.Extra, a.hookCommand(), a.version)
	if err != nil {
		return sdk.Result{}, 0, "", fmt.Errorf("claude: the settings file: %w", err)
	}
	sf := filepath.Join(a.state, "settings-"+r.id+".json")
	if err := os.WriteFile(sf, settings, 0o600); err != nil {
		return sdk.Result{}, 0, "", fmt.Errorf("claude: write the settings file: %w", err)
	}
	defer os.Remove(sf)

	tn := &turn{ctx: ctx, cb: cb, cwd: cwd, sessions: map[string]bool{r.id: true}}
	a.hooks.add(tn)
	defer a.hooks.remove(tn)

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cmd := sdk.Command(rctx, a.s.Command, a.args(r, sf)...)
	cmd.Dir = cwd
	cmd.Env = a.env()
	cmd.Stdin = strings.NewReader(promptOf(t))
	cmd.SysProcAttr.Setpgid = true
	// Cancelling asks the keeper's process group to stop; the keeper
	// passes it on to claude and, stopGrace later, kills what is left.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	// claude runs under a keeper, which ends everything claude started
	// when the run ends, and when the plugin dies (keep_linux.go).
	a.keepCommand(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, n: 64 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return sdk.Result{}, 0, "", fmt.Errorf("claude: %w", err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return sdk.Result{}, 0, "", sdk.Permanent(fmt.Errorf("claude: start %s: %w", a.s.Command, err))
	}
	// Whatever happens, nothing of claude's group outlives the run.
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()

	st := &runState{a: a, cb: cb, ctx: ctx, cancel: cancel, msgs: map[string]bool{}, turn: tn}
	readErr := st.read(out)
	waitErr := cmd.Wait()
	elapsed := time.Since(began)

	if cause := context.Cause(rctx); cause != nil && ctx.Err() == nil && !errors.Is(cause, context.Canceled) {
		return sdk.Result{}, 0, "", cause
	}
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, 0, "", err
	}
	tn.mu.Lock()
	hookErrs := errors.Join(tn.errs...)
	uses, modified, denials := tn.uses, tn.modified, tn.denials
	tn.mu.Unlock()
	if hookErrs != nil {
		return sdk.Result{}, 0, "", fmt.Errorf("claude: %w", hookErrs)
	}
	res := st.result
	if res == nil {
		why := firstLine(stderr.String())
		if readErr != nil {
			why = readErr.Error()
		}
		if waitErr != nil {
			why = fmt.Sprintf("%v: %s", waitErr, why)
		}
		return sdk.Result{}, 0, "", fmt.Errorf("claude: %w: it ended without a result (%s)", ErrFailed, why)
	}
	if res.IsError || res.Subtype != "success" {
		return sdk.Result{}, 0, "", a.resultError(res)
	}
	cost := res.cost(r.before)
	answer := strings.TrimSpace(res.Result)
	out2 := sdk.Result{
		Output: answer,
		Cost:   cost,
		Metrics: map[string]float64{
			"input_tokens":        float64(res.Usage.Input + res.Usage.CacheWrite),
			"cached_input_tokens": float64(res.Usage.CacheRead),
			"cache_write_tokens":  float64(res.Usage.CacheWrite),
			"output_tokens":       float64(res.Usage.Output),
			"turns":               float64(res.NumTurns),
			"model_calls":         float64(len(st.msgs)),
			"tool_calls":          float64(max(uses, st.toolUses)),
			"claude_seconds":      elapsed.Seconds(),
		},
		Artifact: sdk.ContextArtifact{ModifiedFiles: modified, PotentialGotchas: denials},
	}
	if answer != "" {
		out2.Artifact.KeyDecisions = []string{firstLine(answer)}
	}
	return out2, cost, st.session, nil
}

// resultError is the error of a result that is not a success.
func (a *Agent) resultError(res *line) error {
	detail := strings.Join(res.Errors, "; ")
	if detail == "" {
		detail = firstLine(res.Result)
	}
	switch {
	case res.Subtype == "error_max_turns":
		return sdk.Permanent(fmt.Errorf("claude: %w (%d) without an answer: raise max_turns, or narrow the task (%s)", ErrMaxTurns, a.s.MaxTurns, detail))
	case res.APIErrorStatus != nil:
		return apiError(*res.APIErrorStatus, a.s.APIKeyEnv, detail)
	}
	return fmt.Errorf("claude: %w (%s): %s", ErrFailed, res.Subtype, detail)
}

// runState follows one run's stream.
type runState struct {
	a        *Agent
	cb       sdk.Callbacks
	ctx      context.Context
	cancel   context.CancelCauseFunc
	msgs     map[string]bool
	toolUses int
	result   *line
	// session is the Claude Code session the run says it is (its init
	// line); turn is told, so that its hooks are taken.
	session string
	turn    *turn
}

// read reads claude's stream to its end.
func (st *runState) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var bad error
	for sc.Scan() {
		l, err := parseLine(sc.Bytes())
		if err != nil {
			// One bad line is reported, not fatal: the result decides.
			bad = err
			continue
		}
		st.take(l)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return bad
}

// take acts on one line of the stream.
func (st *runState) take(l *line) {
	switch {
	case l.Type == "system" && l.Subtype == "init":
		st.session = l.SessionID
		if st.turn != nil {
			st.turn.started(l.SessionID)
		}
	case l.Type == "system" && l.Subtype == "api_retry":
		status := 0
		if l.ErrorStatus != nil {
			status = *l.ErrorStatus
		}
		if status == 401 || status == 403 {
			// Claude Code retries a refused key as it would a passing
			// fault; the key will not change: stop now.
			st.cancel(authError(status, st.a.s.APIKeyEnv, l.Error))
			return
		}
		st.progress(fmt.Sprintf("the model API answered HTTP %d (%s); Claude Code retries in %s (attempt %d of %d)",
			status, l.Error, time.Duration(l.RetryDelay)*time.Millisecond, l.Attempt, l.MaxRetries))
	case l.Type == "assistant" && l.Message != nil:
		if l.Message.ID != "" {
			st.msgs[l.Message.ID] = true
		}
		for _, b := range l.Message.Content {
			if b.Type == "tool_use" {
				st.toolUses++
			}
		}
		if d := l.Message.describe(); d != "" {
			st.progress(d)
		}
	case l.Type == "result":
		st.result = l
	}
}

// progress reports what the run is doing. Progress is informative; a
// report that fails must not fail the task.
func (st *runState) progress(msg string) {
	turns := len(st.msgs)
	_ = st.cb.ReportProgress(st.ctx, sdk.Progress{Fraction: min(0.9, float64(turns)/float64(st.a.s.MaxTurns)), Message: msg})
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// newUUID returns a random (version 4) UUID, as Claude Code's session IDs
// are.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// stateVersion is the version of ExportState's format.
const stateVersion = 1

// maxTranscript bounds the compressed transcript a session exports: the
// host receives state in one message.
const maxTranscript = 3 << 20

type exportedState struct {
	Version    int                 `json:"version"`
	SessionID  string              `json:"session_id,omitempty"`
	Cost       float64             `json:"cost,omitempty"`
	Tasks      int                 `json:"tasks,omitempty"`
	Transcript *exportedTranscript `json:"transcript,omitempty"`
}

// exportedTranscript is a session's transcript: its path in the config
// directory, and its bytes, gzipped.
type exportedTranscript struct {
	Path string `json:"path"`
	Gzip []byte `json:"gzip"`
}

// transcriptPath finds session id's transcript in the config directory.
func (a *Agent) transcriptPath(id string) (string, error) {
	if a.state == "" || id == "" {
		return "", fs.ErrNotExist
	}
	m, _ := filepath.Glob(filepath.Join(a.state, "config", "projects", "*", id+".jsonl"))
	if len(m) == 0 {
		return "", fs.ErrNotExist
	}
	return m[0], nil
}

// ExportState implements sdk.StateExporter: the session's Claude Code
// ID, its cost so far, and its transcript.
func (a *Agent) ExportState(context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := exportedState{Version: stateVersion, SessionID: a.sessionID, Cost: a.cost, Tasks: a.tasks}
	if p, err := a.transcriptPath(a.sessionID); err == nil {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("claude: read the transcript: %w", err)
		}
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, _ = w.Write(b)
		_ = w.Close()
		if z.Len() > maxTranscript {
			// Too large to carry: the rehydrated session starts a new
			// conversation rather than fail to retire.
			return json.Marshal(exportedState{Version: stateVersion})
		}
		rel, _ := filepath.Rel(filepath.Join(a.state, "config"), p)
		st.Transcript = &exportedTranscript{Path: filepath.ToSlash(rel), Gzip: z.Bytes()}
	} else if a.transcript != nil {
		st.Transcript = a.transcript
	}
	return json.Marshal(st)
}

// ImportState implements sdk.StateExporter: the session resumes the
// exported Claude Code session.
func (a *Agent) ImportState(_ context.Context, b []byte) error {
	var st exportedState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("claude: the session's state is not this agent's (%v)", err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("claude: the session's state has version %d; this agent reads %d", st.Version, stateVersion)
	}
	if st.SessionID != "" && !uuidRE.MatchString(st.SessionID) {
		// It becomes an argument of claude (--resume ID).
		return fmt.Errorf("claude: the session's state names Claude Code session %q, which is not a UUID", firstLine(st.SessionID))
	}
	if st.Transcript != nil {
		if err := st.Transcript.check(st.SessionID); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sessionID, a.cost, a.tasks, a.transcript = st.SessionID, st.Cost, st.Tasks, st.Transcript
	if st.Transcript == nil {
		// No conversation to resume: start a new one.
		a.sessionID = ""
	}
	return nil
}

// check refuses a transcript whose path could lead out of the config
// directory, or that is not session id's.
func (t *exportedTranscript) check(id string) error {
	p := filepath.FromSlash(t.Path)
	if !filepath.IsLocal(p) || filepath.Base(p) != id+".jsonl" || !strings.HasPrefix(p, "projects"+string(filepath.Separator)) {
		return fmt.Errorf("claude: the session's state names transcript %q, not session %s's in projects/", t.Path, id)
	}
	return nil
}

// restore writes the transcript into config directory dir.
func (t *exportedTranscript) restore(dir string) error {
	r, err := gzip.NewReader(bytes.NewReader(t.Gzip))
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<30))
	if err != nil {
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(t.Path))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o600)
}

var (
	_ sdk.Agent         = (*Agent)(nil)
	_ sdk.StateExporter = (*Agent)(nil)
)
