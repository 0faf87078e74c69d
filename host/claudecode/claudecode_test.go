package claudecode

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, payload, err string
	}{
		{"start", `{"session_id":"s1","hook_event_name":"SessionStart","cwd":"/w","source":"resume","extra":{"new":"field"}}`, ""},
		{"pre tool use", `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`, ""},
		{"null tool input", `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":null}`, ""},
		{"unknown event", `{"session_id":"s1","hook_event_name":"Notification","message":"hi"}`, ""},
		{"empty", "  \n", "it is empty"},
		{"syntax", "{\n\"session_id\": \"s1\",\n\"hook_event_name\": Stop}", "line 3, column 20"},
		{"type", `{"session_id":["s1"],"hook_event_name":"Stop"}`, "session_id must be a string"},
		{"no session", `{"hook_event_name":"Stop"}`, "session_id is missing"},
		{"no event", `{"session_id":"s1"}`, "hook_event_name is missing"},
		{"tool use without tool", `{"session_id":"s1","hook_event_name":"PostToolUse"}`, "needs tool_name"},
		{"input not an object", `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`, "tool_input must be a JSON object"},
		{"too big", `{"session_id":"` + strings.Repeat("s", MaxPayload) + `"}`, "more than the 16 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.payload))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrPayload)):
				t.Fatalf("got %v, %+v; want an ErrPayload saying %q", err, p, tc.err)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct {
		tool, input string
		want        []string
	}{
		{"Read", `{"file_path":"/w/src/a.go","offset":10}`, []string{"/w/src/a.go"}},
		{"Write", `{"file_path":"notes.md","content":"x"}`, []string{"/w/notes.md"}},
		{"Edit", `{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`, []string{"/w/a.go"}},
		{"MultiEdit", `{"file_path":"/w/a.go","edits":[]}`, []string{"/w/a.go"}},
		{"NotebookEdit", `{"notebook_path":"/w/n.ipynb"}`, []string{"/w/n.ipynb"}},
		{"Glob", `{"pattern":"**/*.go"}`, []string{"/w/"}},
		{"Glob", `{"pattern":"*.go","path":"/w/src"}`, []string{"/w/src/"}},
		{"Grep", `{"pattern":"x","path":"/w/src"}`, []string{"/w/src/"}},
		{"Grep", `{"pattern":"x","path":"/w/src/a.go"}`, []string{"/w/src/a.go"}},
		{"Grep", `{"pattern":"x"}`, []string{"/w/"}},
		{"LS", `{"path":"/w/pkg/"}`, []string{"/w/pkg/"}},
		{"Bash", `{"command":"cat /w/.env"}`, nil},
		{"mcp__db__query", `{"sql":"select 1"}`, nil},
		{"Read", `not json`, nil},
	} {
		if got := Paths(tc.tool, json.RawMessage(tc.input), "/w"); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: got %q, want %q", tc.tool, tc.input, got, tc.want)
		}
	}
}

func TestDeny(t *testing.T) {
	var got map[string]map[string]string
	if err := json.Unmarshal(Deny(`no "secrets"`), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": `no "secrets"`}
	if !maps(got["hookSpecificOutput"], want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// FuzzParse feeds Parse anything: it returns a payload with the fields a
// hook needs, or an ErrPayload, and never panics; Paths on what it
// returns never panics either, and names absolute paths only.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/claude-code/payloads/*.json")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Grep","tool_input":{"path":"rel/x.go"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrPayload) {
				t.Fatalf("error %v does not wrap ErrPayload", err)
			}
			return
		}
		if p.SessionID == "" || p.HookEventName == "" {
			t.Fatalf("accepted a payload without session or event: %+v", p)
		}
		for _, pa := range Paths(p.ToolName, p.ToolInput, "/work") {
			if !path.IsAbs(pa) {
				t.Fatalf("relative path %q from %s", pa, b)
			}
		}
	})
}
