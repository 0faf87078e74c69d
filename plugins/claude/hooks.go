package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/plugins/claude/relay"
	"github.com/hearth-dev/hearth/sdk"
)

// HookArg is the first argument of a program run as the agent's hook
// relay (RelayHook): `PROGRAM __hearth-claude-hook SOCKET`.
const HookArg = "__hearth-claude-hook"

// hookEvents are the events each run's settings send to the agent:
// before a tool use (the guards), after it (the fingerprint), and after
// one that failed. A managed session needs no others: the agent starts
// and ends each turn itself.
var hookEvents = []string{claudecode.PreToolUse, claudecode.PostToolUse, claudecode.PostToolUseFailure}

// hookTimeout is how long Claude Code waits for a hook, in seconds. The
// agent answers from memory or through the host's guards, in
// milliseconds; a host that hangs longer than this fails the tool use
// closed (the relay's own deadline, hookRelayTimeout, comes first).
const hookTimeout = 30

// hookRelayTimeout is how long the agent gives one hook call: the relay
// gives up before it (relay.Timeout) and fails closed.
const hookRelayTimeout = 25 * time.Second

// hookSettings is the settings file of one run: extra, with hooks that
// run the relay for every tool use. The PreToolUse hook fails closed
// where Claude Code honours it (onFailure, from FailurePolicyVersion);
// before that, a relay that cannot run at all is a non-blocking error
// and the tool use goes ahead, which only a missing or broken program
// file can cause (the relay itself answers a deny when the agent cannot
// be reached).
func hookSettings(extra map[string]json.RawMessage, command string, v CLIVersion) ([]byte, error) {
	s := make(map[string]any, len(extra)+1)
	for k, val := range extra {
		s[k] = val
	}
	hooks := make(map[string]any, len(hookEvents))
	for _, ev := range hookEvents {
		h := map[string]any{"type": "command", "command": command, "timeout": hookTimeout}
		if ev == claudecode.PreToolUse && !v.Less(policyVersion) {
			h["onFailure"] = "block"
		}
		hooks[ev] = []any{map[string]any{"matcher": "*", "hooks": []any{h}}}
	}
	s["hooks"] = hooks
	return json.MarshalIndent(s, "", "  ")
}

// shellQuote quotes s for the POSIX shell Claude Code runs a command
// hook with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookServer is the unix socket Claude Code's hooks reach the agent
// through: the relay connects, writes the hook's payload, closes its
// side, and reads the answer. One server serves one agent (one session);
// the turns running (the session's own, and any forks) decide what a
// payload is about, by the Claude Code session it speaks for.
type hookServer struct {
	ln   net.Listener
	path string
	wg   sync.WaitGroup

	mu    sync.Mutex
	turns map[*turn]bool
	// started is closed and replaced whenever a running turn learns
	// which session it is.
	started chan struct{}
}

// turn is what the hooks of one claude run report to: the task's host
// callbacks, the Claude Code sessions it may speak for, and what the
// hooks taught it.
type turn struct {
	ctx    context.Context
	cb     sdk.Callbacks
	cwd    string
	server *hookServer

	mu       sync.Mutex
	sessions map[string]bool
	uses     int
	modified []string
	denials  []string
	errs     []error
}

func listenHooks(path string) (*hookServer, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("claude: listen for Claude Code's hooks on %s: %w", path, err)
	}
	s := &hookServer{ln: ln, path: path, turns: map[*turn]bool{}, started: make(chan struct{})}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// add makes t a turn hooks report to, until remove.
func (s *hookServer) add(t *turn) {
	s.mu.Lock()
	s.turns[t] = true
	t.server = s
	s.mu.Unlock()
}

func (s *hookServer) remove(t *turn) {
	s.mu.Lock()
	delete(s.turns, t)
	s.mu.Unlock()
}

// find returns the running turn that speaks for Claude Code session id,
// or nil. A hook may beat the stream's reader to the init line that
// says which session a run is: find waits for the next one, within
// limits, before it gives up.
func (s *hookServer) find(id string) *turn {
	deadline := time.NewTimer(hookRelayTimeout / 2)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for t := range s.turns {
			if t.speaksFor(id) {
				s.mu.Unlock()
				return t
			}
		}
		started, running := s.started, len(s.turns) > 0
		s.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-started:
		case <-deadline.C:
			return nil
		}
	}
}

// learned wakes the hooks waiting in find.
func (s *hookServer) learned() {
	s.mu.Lock()
	close(s.started)
	s.started = make(chan struct{})
	s.mu.Unlock()
}

func (s *hookServer) close() {
	_ = s.ln.Close()
	s.wg.Wait()
}

func (s *hookServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(hookRelayTimeout))
			payload, err := io.ReadAll(io.LimitReader(c, claudecode.MaxPayload+1))
			if err != nil {
				return
			}
			_, _ = c.Write(s.handle(payload))
		}()
	}
}

// handle answers one hook payload: a PreToolUse goes to the host's
// guards, and a denial is answered as Claude Code reads one (and
// reported as a denied tool use); a PostToolUse or PostToolUseFailure is
// reported as the tool use it was. A payload that cannot be read, or
// that speaks for another session than the turn's, or that comes when
// no turn runs, gets the answer of a hook that could not check: a
// PreToolUse is denied.
func (s *hookServer) handle(payload []byte) []byte {
	p, err := claudecode.Parse(payload)
	if err != nil {
		return claudecode.Failed(claudecode.EventName(payload), true, err.Error())
	}
	t := s.find(p.SessionID)
	if t == nil {
		return claudecode.Failed(p.HookEventName, true, fmt.Sprintf("no hearth task of this session runs Claude Code session %s", p.SessionID))
	}
	switch p.HookEventName {
	case claudecode.PreToolUse:
		call := claudecode.Call(p)
		v, err := t.cb.CheckToolUse(t.ctx, call)
		if err != nil {
			return claudecode.Failed(p.HookEventName, true, "the host could not check it: "+err.Error())
		}
		if v.Allow {
			return nil
		}
		reason := v.Reason
		if v.Guard != "" {
			reason = fmt.Sprintf("%s (hearth guard %q)", v.Reason, v.Guard)
		}
		t.mu.Lock()
		t.uses++
		t.denials = append(t.denials, fmt.Sprintf("%s denied: %s", p.ToolName, reason))
		t.mu.Unlock()
		u := sdk.ToolUse{CallID: call.CallID, Tool: call.Tool, Kind: call.Kind, Paths: claudecode.Paths(p.ToolName, p.ToolInput, p.Cwd), Outcome: sdk.OutcomeDenied, Error: reason}
		t.report(u)
		return claudecode.Deny(reason)
	case claudecode.PostToolUse, claudecode.PostToolUseFailure:
		u := claudecode.Use(p)
		t.mu.Lock()
		t.uses++
		if u.Outcome == sdk.OutcomeOK && (p.ToolName == "Write" || p.ToolName == "Edit" || p.ToolName == "MultiEdit" || p.ToolName == "NotebookEdit") {
			for _, f := range u.Paths {
				t.modified = appendNew(t.modified, relTo(t.cwd, f))
			}
		}
		t.mu.Unlock()
		t.report(u)
	}
	return nil
}

// started records the session the run's stream says it is: Claude Code
// may carry a resumed conversation on under a new ID.
func (t *turn) started(id string) {
	t.mu.Lock()
	t.sessions[id] = true
	t.mu.Unlock()
	if t.server != nil {
		t.server.learned()
	}
}

// speaksFor reports whether a hook for Claude Code session id belongs to
// this turn: the session it was started as, or the one its stream says
// it is.
func (t *turn) speaksFor(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[id]
}

// report hands a tool use to the host. A report that fails fails the
// task: its fingerprint would be wrong.
func (t *turn) report(u sdk.ToolUse) {
	if err := t.cb.ReportToolUse(t.ctx, u); err != nil {
		t.mu.Lock()
		t.errs = append(t.errs, fmt.Errorf("report %s: %w", u.Tool, err))
		t.mu.Unlock()
	}
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func relTo(dir, p string) string {
	if r, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/"); ok && dir != "" {
		return r
	}
	return p
}

// RelayHook is the command hook Claude Code runs for every tool use of
// a managed session: it hands the payload on stdin to the agent's socket
// and prints the answer. It is started for each tool use, so it does
// only that (the hearth binary runs it before anything else; see
// plugins.ServeIfRequested). When the agent cannot be reached, a
// PreToolUse is denied (the answer says why) and anything else gets
// nothing: hearth fails closed on its own sessions. It never exits 2
// (Claude Code's "block", which would keep a Stop from stopping).
func RelayHook(socket string, stdin io.Reader, stdout, stderr io.Writer) int {
	payload, err := io.ReadAll(io.LimitReader(stdin, claudecode.MaxPayload+1))
	var answer []byte
	if err == nil {
		answer, err = relay.Unix(socket, payload)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hearth claude hook: %v\n", err)
		answer = claudecode.Failed(claudecode.EventName(payload), true, "the hearth agent could not be reached: "+err.Error())
	}
	if len(answer) > 0 {
		if _, err := stdout.Write(answer); err != nil {
			return 1
		}
	}
	return 0
}

// RelayIfRequested runs RelayHook and exits when the program was started
// as the hook relay (HookArg), runs the keeper of a claude run and exits
// when started as one (KeepArg, keep_linux.go), or returns at once. Call
// it first thing in main.
func RelayIfRequested() {
	keepIfRequested()
	if len(os.Args) == 3 && os.Args[1] == HookArg {
		os.Exit(RelayHook(os.Args[2], os.Stdin, os.Stdout, os.Stderr))
	}
}
