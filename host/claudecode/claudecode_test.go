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
		// Clean, whatever the spelling.
		{"Read", `{"file_path":"./src/../a.go"}`, []string{"/w/a.go"}},
		{"Write", `{"file_path":"//w//b//c.go"}`, []string{"/w/b/c.go"}},
		{"Glob", `{"pattern":"src/**/*.go"}`, []string{"/w/src/"}},
		{"Glob", `{"pattern":"../other/*.go"}`, []string{"/other/"}},
		{"LS", `{"path":"/"}`, []string{"/"}},
		{"NotebookRead", `{"notebook_path":"n.ipynb"}`, []string{"/w/n.ipynb"}},
		// Keys the decoders settle differently all count.
		{"Read", `{"file_path":"/w/a","FILE_PATH":"/w/b"}`, []string{"/w/a", "/w/b"}},
	} {
		if got := Paths(tc.tool, json.RawMessage(tc.input), "/w"); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: got %q, want %q", tc.tool, tc.input, got, tc.want)
		}
	}
}

// TestGrepPathOnDisk is finding 4: Grep's path is a file or a
// directory as the file system says, extension or not.
func TestGrepPathOnDisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".ssh", "keys.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".ssh", "id_rsa"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := filepath.ToSlash(dir)
	for _, tc := range []struct{ in, want string }{
		{`{"pattern":"x","path":".ssh/id_rsa"}`, d + "/.ssh/id_rsa"},
		{`{"pattern":"x","path":".ssh/keys.d"}`, d + "/.ssh/keys.d/"},
		{`{"pattern":"x","path":"missing"}`, d + "/missing/"},
		{`{"pattern":"x","path":"missing.go"}`, d + "/missing.go"},
	} {
		if got := Paths("Grep", json.RawMessage(tc.in), dir); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEventName is finding 6: the name the hook's fail-closed handling
// reads is the name the daemon decodes, duplicate and differently cased
// keys included.
func TestEventName(t *testing.T) {
	for _, tc := range []struct{ payload, want string }{
		{`{"session_id":"s","hook_event_name":"PreToolUse"}`, "PreToolUse"},
		{`{"hook_event_name":"Stop","hook_event_name":"PreToolUse","session_id":"s"}`, "PreToolUse"},
		{`{"hook_event_name":"PreToolUse","Hook_Event_Name":"Stop","session_id":"s"}`, "Stop"},
		{`{"HOOK_EVENT_NAME":"PreToolUse","session_id":"s"}`, "PreToolUse"},
		{"{\"hoo\u212a_event_name\":\"PreToolUse\",\"session_id\":\"s\"}", "PreToolUse"}, // the Kelvin sign folds to k
		{`{"hook_event_name":"PreToolUse","hook_event_name":null,"session_id":"s"}`, "PreToolUse"},
		{`{"hook\u005fevent_name":"PreToolUse","session_id":"s"}`, "PreToolUse"},
		// Broken after the name, or too big: the name read before.
		{`{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{"content":"abc`, "PreToolUse"},
		{`{"hook_event_name":"Stop","hook_event_name":"PreToolUse",`, "PreToolUse"},
		// Broken, and not naming PreToolUse: a later key could, so it
		// cannot tell.
		{`{"hook_event_name":"PreToolUse","hook_event_name":"Stop",`, "PreToolUse"},
		{`{"hook_event_name":"Stop","tool_input":{"content":"abc`, ""},
		{`{"hook_event_name":"Stop","hook_event_name":"PreTo`, ""},
		{`{"hook_event_name":5}`, ""},
		{`[1]`, ""},
		{``, ""},
	} {
		got := EventName([]byte(tc.payload))
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.payload, got, tc.want)
		}
		if p, err := Parse([]byte(tc.payload)); err == nil && p.HookEventName != got {
			t.Errorf("%s: Parse reads %q, EventName %q", tc.payload, p.HookEventName, got)
		}
	}
}

// FuzzEventName: on every input the decoder accepts, EventName and Parse
// read the same name; on any input, EventName does not panic.
func FuzzEventName(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read"}`,
		`{"hook_event_name":"Stop","HOOK_EVENT_NAME":"PreToolUse","session_id":"s"}`,
		`{"hook_event_name":"PreToolUse","hook_event_name":null}`,
		"{\"hoo\u212a_event_name\":\"x\"}",
		`{"hook_event_name":"A"} trailing`,
		`{"hook_event_name":"A","x":[1,{"hook_event_name":"B"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := EventName(b)
		var p Payload
		if json.Unmarshal(b, &p) == nil && p.HookEventName != got {
			t.Fatalf("the decoder reads %q, EventName %q, from %s", p.HookEventName, got, b)
		}
		if pp, err := Parse(b); err == nil && pp.HookEventName != got {
			t.Fatalf("Parse reads %q, EventName %q, from %s", pp.HookEventName, got, b)
		}
	})
}

// FuzzEventNameCutShort: a PreToolUse payload cut short anywhere (as
// the size limit cuts one) is never taken for another event: EventName
// says PreToolUse or "", both of which failing closed denies.
func FuzzEventNameCutShort(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"abc"}}`,
		`{"hook_event_name":"Stop","session_id":"s","tool_name":"Read","tool_input":{"x":[1,2,{"y":"z"}]},"HOOK_EVENT_NAME":"PreToolUse"}`,
		`{"hook_event_name":"Stop","hook_event_name":"PreToolUse","session_id":"s","tool_name":"Read"}`,
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		p, err := Parse(b)
		if err != nil || p.HookEventName != PreToolUse {
			return
		}
		k := int(cut) % (len(b) + 1)
		if got := EventName(b[:k]); got != PreToolUse && got != "" {
			t.Fatalf("a PreToolUse cut at %d reads as %q: %s", k, got, b[:k])
		}
		if a := Failed(EventName(b[:k]), true, "cut short"); !strings.Contains(string(a), `"permissionDecision":"deny"`) {
			t.Fatalf("a PreToolUse cut at %d is not denied failing closed: %s", k, a)
		}
	})
}

// TestFailed: what a hook call hearth could not handle gets.
func TestFailed(t *testing.T) {
	for _, tc := range []struct {
		event            string
		deny             bool
		decision, notice string
	}{
		{PreToolUse, true, "deny", "hearth denied a tool use it could not check: boom"},
		{"", true, "deny", "hearth denied a tool use it could not check: boom"},
		{PreToolUse, false, "", "goes ahead unchecked by its guards: boom"},
		{Stop, true, "", "hearth is not following this session (Stop): boom"},
		{PostToolUse, true, "", ""},
	} {
		a := Failed(tc.event, tc.deny, "boom")
		var got struct {
			HookSpecificOutput struct{ PermissionDecision string } `json:"hookSpecificOutput"`
			SystemMessage      string                              `json:"systemMessage"`
		}
		if len(a) > 0 {
			if err := json.Unmarshal(a, &got); err != nil {
				t.Fatal(err)
			}
		}
		if got.HookSpecificOutput.PermissionDecision != tc.decision || !strings.Contains(got.SystemMessage, tc.notice) || (tc.notice == "" && len(a) != 0) {
			t.Errorf("Failed(%q, %v): %s; want decision %q and a message saying %q", tc.event, tc.deny, a, tc.decision, tc.notice)
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
