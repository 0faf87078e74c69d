package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/sdk"
)

// payloads are the recorded Claude Code hook payloads of one session,
// in order, from examples/claude-code.
func payloads(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../../examples/claude-code/payloads/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded payloads: %v", err)
	}
	out := make(map[string][]byte)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = b
	}
	return out
}

const ccSession = "3f1c2a9e-5d41-4b7e-9c0a-1e2f3a4b5c6d"

// claudeCodeDaemon is a daemon with the example's config: the external
// claude-code agent and its guards.
func claudeCodeDaemon(t testing.TB) *daemon {
	t.Helper()
	cfg, err := config.Load("../../examples/claude-code/hearth.hcl", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = filepath.Join(shortTempDir(t), "data")
	cfg.Server = config.Server{HTTP: "127.0.0.1:0"}
	return startDaemon(t, cfg)
}

// hookVia sends a payload through one of the daemon's two hook
// transports and returns the answer, or the error as a string.
type hookVia func(t *testing.T, d *daemon, payload []byte) (answer []byte, errText string)

func viaGRPC(t *testing.T, d *daemon, payload []byte) ([]byte, string) {
	out, err := d.c.Hook(context.Background(), config.ExternalClaudeCode, "", payload)
	if err != nil {
		return nil, err.Error()
	}
	return out, ""
}

// viaHTTP posts a payload as Claude Code's HTTP hook does. A call hearth
// could not handle is answered 200 with a message for the person (and a
// denial when failing closed); its error is in X-Hearth-Error.
func viaHTTP(t *testing.T, d *daemon, payload []byte) ([]byte, string) {
	req, err := http.NewRequest(http.MethodPost, "http://"+d.l.HTTP+"/hooks/claude-code", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, resp.Status + " " + string(b)
	}
	if e := resp.Header.Get("X-Hearth-Error"); e != "" {
		return b, e
	}
	return b, ""
}

func TestClaudeCodeSessionFromHooks(t *testing.T) {
	t.Parallel()
	for name, via := range map[string]hookVia{"grpc": viaGRPC, "http": viaHTTP} {
		t.Run(name, func(t *testing.T) {
			d := claudeCodeDaemon(t)
			ctx := context.Background()
			p := payloads(t)
			send := func(name string) []byte {
				t.Helper()
				out, errText := via(t, d, p[name])
				if errText != "" {
					t.Fatalf("%s: %s", name, errText)
				}
				return out
			}
			for _, n := range []string{"01-session-start", "02-user-prompt"} {
				if out := send(n); len(out) != 0 {
					t.Errorf("%s answered %s; want nothing", n, out)
				}
			}
			s, err := d.c.Session(ctx, ccSession, 20)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != "live" || s.Load != 1 || s.External != "claude-code" || s.Workspace != "/home/dev/shop" {
				t.Errorf("after the prompt: %+v; want live, busy, external, in /home/dev/shop", s.SessionInfo)
			}
			if out := send("03-pre-read"); len(out) != 0 {
				t.Errorf("an allowed read answered %s; want nothing (Claude Code's own permissions decide)", out)
			}
			for _, n := range []string{"04-post-read", "05-post-bash-grep", "06-post-bash-find", "07-post-bash-ls"} {
				send(n)
			}
			// A read of .env is denied with the guard's message, in Claude
			// Code's format.
			var ans struct {
				HookSpecificOutput struct {
					HookEventName            string `json:"hookEventName"`
					PermissionDecision       string `json:"permissionDecision"`
					PermissionDecisionReason string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			out := send("08-pre-read-env")
			if err := json.Unmarshal(out, &ans); err != nil {
				t.Fatalf("denial %q: %v", out, err)
			}
			h := ans.HookSpecificOutput
			if h.HookEventName != "PreToolUse" || h.PermissionDecision != "deny" ||
				!contains(h.PermissionDecisionReason, ".env files hold secrets", `hearth guard "no-env-files"`) {
				t.Errorf("denial: %+v", h)
			}
			for _, n := range []string{"09-pre-edit", "10-post-edit", "11-post-write", "12-post-bash-failure", "13-stop"} {
				send(n)
			}
			s, err = d.c.Session(ctx, ccSession, 50)
			if err != nil {
				t.Fatal(err)
			}
			// Reads count as well as writes. A Bash command names what its
			// words name that exists: the recorded session's tree is not on
			// this machine, so here its commands are activity alone
			// (cmd/hearth's TestTrackedClaudeCode shows them teaching).
			wantFiles := []string{"/home/dev/shop/src/cart/discount_test.go", "/home/dev/shop/src/cart/cart.go"}
			if !slices.Equal(s.Files, wantFiles) {
				t.Errorf("files %v; want %v", s.Files, wantFiles)
			}
			for _, dir := range []string{"/home/dev/shop/src/cart"} {
				if !slices.Contains(s.Directories, dir) {
					t.Errorf("directories %v lack %s", s.Directories, dir)
				}
			}
			if !slices.Equal(s.Technologies, []string{"go"}) || s.ToolUses != 7 || s.Load != 0 {
				t.Errorf("technologies %v, %d tool uses, load %d; want go, 7, idle after Stop", s.Technologies, s.ToolUses, s.Load)
			}
			denied := false
			for _, e := range s.Events {
				denied = denied || (e.Kind == hearth.EventGuardFired && e.Guard == "no-env-files" && e.Action == "deny")
			}
			if !denied {
				t.Errorf("no guard.fired event for the denial in %+v", s.Events)
			}
			// An orchestrator asking where cart work should go is told to
			// resume this session, and how.
			dec, err := d.c.Place(ctx, "claude-code", sdk.Hints{Directories: []string{"/home/dev/shop/src/cart"}, Technologies: []string{"go"}})
			if err != nil {
				t.Fatal(err)
			}
			if dec.Action != hearth.ActionResume || dec.Session != ccSession || dec.Resume != "claude --resume "+ccSession || dec.Workspace != "/home/dev/shop" {
				t.Errorf("placement %+v", dec)
			}
			// The session ends: dormant, still the one to resume.
			send("14-session-end")
			s, err = d.c.Session(ctx, ccSession, 5)
			if err != nil || s.Status != "dormant" || !contains(s.Reason, "prompt_input_exit") {
				t.Fatalf("after SessionEnd: %+v, %v", s.SessionInfo, err)
			}
			if dec, err := d.c.Place(ctx, "claude-code", sdk.Hints{Files: []string{"/home/dev/shop/src/cart/cart.go"}}); err != nil || dec.Action != hearth.ActionResume || dec.Session != ccSession {
				t.Errorf("placement after the end: %+v, %v", dec, err)
			}
			// Hooks may come back: the session is live again, with its
			// fingerprint.
			send("02-user-prompt")
			if s, _ := d.c.Session(ctx, ccSession, 5); s.Status != "live" || len(s.Files) != 2 {
				t.Errorf("after a new prompt: %+v", s.SessionInfo)
			}
		})
	}
}

// TestHTTPHookFailsClosed: a daemon whose config says when_unreachable =
// "deny" answers a PreToolUse it cannot read (too big, broken) with a
// denial, over HTTP as the command hook does (issue 13: a payload over
// the limit went through); other events go ahead, with a message.
func TestHTTPHookFailsClosed(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("../../examples/claude-code/hearth.hcl", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = filepath.Join(shortTempDir(t), "data")
	cfg.Server = config.Server{HTTP: "127.0.0.1:0"}
	cfg.Hooks.WhenUnreachable = config.HookDeny
	d := startDaemon(t, cfg)
	big := []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/w/.env","content":"` +
		strings.Repeat("x", claudecode.MaxPayload) + `"}}`)
	for _, tc := range []struct {
		name    string
		payload []byte
		deny    bool
	}{
		{"an oversized tool use", big, true},
		{"a broken tool use", []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":[1]}`), true},
		{"a payload whose event cannot be told", []byte(`{"session_id":`), true},
		{"a broken Stop", []byte(`{"session_id":7,"hook_event_name":"Stop"}`), false},
	} {
		out, errText := viaHTTP(t, d, tc.payload)
		var a struct {
			SystemMessage      string `json:"systemMessage"`
			HookSpecificOutput struct {
				PermissionDecision string `json:"permissionDecision"`
			} `json:"hookSpecificOutput"`
		}
		if errText == "" || json.Unmarshal(out, &a) != nil || (a.HookSpecificOutput.PermissionDecision == "deny") != tc.deny || a.SystemMessage == "" {
			t.Errorf("%s: %.300s (%s); want deny %v and a message", tc.name, out, errText, tc.deny)
		}
	}
}

// TestBadHookPayloads is not parallel: its oversized payload has to
// reach the daemon within the HTTP read timeout (httpRead, 30 s), which a
// sibling test's daemon and plugins on the same two cores, under -race,
// were seen to push it past.
func TestBadHookPayloads(t *testing.T) {
	d := claudeCodeDaemon(t)
	big := []byte(`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"content":"` +
		strings.Repeat("x", claudecode.MaxPayload) + `"}}`)
	for _, tc := range []struct {
		name    string
		payload []byte
		grpc    codes.Code
		says    string
	}{
		{"not JSON", []byte("session_id=1"), codes.InvalidArgument, "invalid JSON at line 1, column 1"},
		{"broken on line 3", []byte("{\n  \"session_id\": \"s\",\n  \"hook_event_name\": PreToolUse\n}"), codes.InvalidArgument, "line 3, column 22"},
		{"no session", []byte(`{"hook_event_name":"Stop"}`), codes.InvalidArgument, "session_id is missing"},
		{"no event", []byte(`{"session_id":"s"}`), codes.InvalidArgument, "hook_event_name is missing"},
		{"tool input not an object", []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":[1]}`), codes.InvalidArgument, "tool_input must be a JSON object"},
		{"wrong type", []byte(`{"session_id":7,"hook_event_name":"Stop"}`), codes.InvalidArgument, "session_id must be a string"},
		{"session ID hearth cannot keep", []byte(`{"session_id":"../../etc","hook_event_name":"Stop"}`), codes.InvalidArgument, "invalid session ID"},
		{"empty", nil, codes.InvalidArgument, "it is empty"},
		{"oversized", big, codes.InvalidArgument, "MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.c.Hook(context.Background(), config.ExternalClaudeCode, "", tc.payload)
			if st, _ := status.FromError(err); st.Code() != tc.grpc || !contains(err.Error(), tc.says) {
				t.Errorf("grpc: %v; want %v saying %q", err, tc.grpc, tc.says)
			}
			// Over HTTP: 200, so that Claude Code reads the answer; the
			// person is told (the example's config fails open). A
			// PostToolUse gets nothing more.
			out, errText := viaHTTP(t, d, tc.payload)
			if !contains(errText, tc.says) {
				t.Errorf("http: error %q; want it saying %q", errText, tc.says)
			}
			// (A PreToolUse's answer also tells the model, which is all a
			// headless run shows: additionalContext, never a decision.)
			var a struct {
				SystemMessage      string `json:"systemMessage"`
				HookSpecificOutput struct {
					PermissionDecision string `json:"permissionDecision"`
				} `json:"hookSpecificOutput"`
			}
			if ev := claudecode.EventName(tc.payload); ev != claudecode.PostToolUse {
				if json.Unmarshal(out, &a) != nil || !contains(a.SystemMessage, "hearth") || a.HookSpecificOutput.PermissionDecision != "" {
					t.Errorf("http: answer %s; want a message for the person, and no decision", out)
				}
			}
		})
	}
	// The daemon carries on.
	if out, errText := viaHTTP(t, d, payloads(t)["01-session-start"]); errText != "" || len(out) != 0 {
		t.Errorf("a good payload after the bad ones: %q %s", out, errText)
	}
	// Hooks for an agent hearth runs itself are refused.
	_, err := d.c.Hook(context.Background(), "claude-code", "nope", payloads(t)["01-session-start"])
	if !errors.Is(err, hearth.ErrUnknownAgent) {
		t.Errorf("hook for an unknown agent: %v", err)
	}
}

// TestHookGuardsReadTheWholeCall: the example's .env guard, given a
// Claude Code payload, sees the paths its tool input names however they
// are spelled, a shell command's included, read against the payload's
// cwd.
func TestHookGuardsReadTheWholeCall(t *testing.T) {
	t.Parallel()
	d := claudeCodeDaemon(t)
	for _, tc := range []struct {
		tool, input string
		deny        bool
	}{
		{"Read", `{"file_path":"./src/../.env"}`, true},
		{"Read", `{"file_path":"//home//dev/shop/.ENV"}`, true},
		{"Bash", `{"command":"cat .env | head -1"}`, true},
		{"Bash", `{"command":"sh -c 'cd config && cat ../.env.local'"}`, true},
		{"Grep", `{"pattern":"KEY","glob":".env*"}`, true},
		{"Bash", `{"command":"go test ./..."}`, false},
		{"Read", `{"file_path":"src/cart/cart.go"}`, false},
	} {
		for name, via := range map[string]hookVia{"grpc": viaGRPC, "http": viaHTTP} {
			payload := `{"session_id":"s-guards","hook_event_name":"PreToolUse","cwd":"/home/dev/shop","tool_name":"` + tc.tool + `","tool_input":` + tc.input + `}`
			out, errText := via(t, d, []byte(payload))
			if errText != "" {
				t.Fatalf("%s %s: %s", name, tc.input, errText)
			}
			if denied := bytes.Contains(out, []byte(`"permissionDecision":"deny"`)); denied != tc.deny {
				t.Errorf("%s %s %s: denied %v, want %v (%s)", name, tc.tool, tc.input, denied, tc.deny, out)
			}
		}
	}
}
