package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pre = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/.env"}}`

func decision(t *testing.T, out string) string {
	t.Helper()
	if out == "" {
		return ""
	}
	var a struct {
		Out struct {
			Decision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return a.Out.Decision
}

// TestRunToTheDaemon: hearth-hook posts the payload with the data
// directory's token and prints the daemon's answer; without an answer it
// fails as --when-unreachable says.
func TestRunToTheDaemon(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer tok-123" || r.Header.Get("Content-Type") != "application/json" || string(body) != pre {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`)
	}))
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := Run(args, strings.NewReader(pre), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	if out, errOut, code := run("--url", srv.URL, "--data-dir", dir); code != 0 || decision(t, out) != "deny" {
		t.Errorf("through the daemon: %d %q %q, want its denial", code, out, errOut)
	}
	url := srv.URL
	srv.Close()
	if out, errOut, code := run("--url", url, "--data-dir", dir, "--when-unreachable", "deny"); code != 0 || decision(t, out) != "deny" || errOut == "" {
		t.Errorf("daemon down, failing closed: %d %q %q, want a denial and a word on stderr", code, out, errOut)
	}
	if out, _, code := run("--url", url, "--data-dir", dir); code != 0 || decision(t, out) != "" || !strings.Contains(out, "could not check") {
		t.Errorf("daemon down, failing open: %d %q, want a notice and no decision", code, out)
	}
	if out, _, code := run("--url", url); code != 0 || decision(t, out) != "" || !strings.Contains(out, "no token") {
		t.Errorf("no token: %d %q", code, out)
	}
}

// TestRunToASocketFailsClosed: a managed session's agent that cannot be
// reached gets its tool uses denied.
func TestRunToASocketFailsClosed(t *testing.T) {
	var out bytes.Buffer
	code := Run([]string{"--socket", filepath.Join(t.TempDir(), "gone.sock")}, strings.NewReader(pre), &out, io.Discard)
	if code != 0 || decision(t, out.String()) != "deny" {
		t.Errorf("%d %q, want a denial", code, out.String())
	}
}
