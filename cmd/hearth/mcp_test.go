package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/nodetest"
)

// tsReport is what internal/nodetest/testdata/mcp_client.mjs prints.
type tsReport struct {
	Error  string `json:"error"`
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools []struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Input       []string `json:"input"`
	} `json:"tools"`
	Resources []string `json:"resources"`
	Templates []string `json:"templates"`
	Calls     []struct {
		Tool       string          `json:"tool"`
		IsError    bool            `json:"isError"`
		Text       string          `json:"text"`
		Structured json.RawMessage `json:"structured"`
		Progress   []struct {
			Progress float64 `json:"progress"`
			Message  string  `json:"message"`
		} `json:"progress"`
	} `json:"calls"`
	Reads []struct {
		URI      string          `json:"uri"`
		MIMEType string          `json:"mimeType"`
		JSON     json.RawMessage `json:"json"`
		Error    string          `json:"error"`
	} `json:"reads"`
}

// tsClient runs the official TypeScript SDK's client with plan and
// returns what it saw.
func tsClient(t *testing.T, plan map[string]any) tsReport {
	t.Helper()
	node := nodetest.Need(t)
	b, _ := json.Marshal(plan)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, nodetest.Script("mcp_client.mjs"), string(b))
	cmd.Dir = nodetest.Dir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
	}
	var r tsReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the TypeScript client printed %q: %v\n%s", out, err, stderr.String())
	}
	if r.Error != "" {
		t.Fatalf("the TypeScript client failed: %s\nstderr: %s", r.Error, stderr.String())
	}
	return r
}

// desktopServer is the server entry of examples/mcp's
// claude_desktop_config.json, with its placeholder paths made real.
func desktopServer(t *testing.T, dataDir string) (command string, args []string) {
	t.Helper()
	b, err := os.ReadFile("../../examples/mcp/claude_desktop_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("claude_desktop_config.json: %v", err)
	}
	s, ok := cfg.MCPServers["hearth"]
	if !ok || s.Command != "hearth" {
		t.Fatalf("claude_desktop_config.json has no hearth server run by the hearth command: %+v", cfg)
	}
	root, _ := filepath.Abs("../..")
	for i, a := range s.Args {
		a = strings.ReplaceAll(a, "/ABSOLUTE/PATH/TO/hearth", root)
		s.Args[i] = strings.ReplaceAll(a, "/ABSOLUTE/PATH/TO/.hearth", dataDir)
	}
	return s.Command, s.Args
}

// hearthCommand is a "hearth" on a PATH of its own: this test binary,
// which is the hearth command under that name (TestMain).
func hearthCommand(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(dir, "hearth")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The orchestrating agent's calls of examples/mcp: two questions about
// one package, then one for an agent that does not exist.
var exampleCalls = []map[string]any{
	{"tool": "submit_task", "arguments": map[string]any{"agent": "gotour", "prompt": "summary strings", "directories": []string{"strings"}, "technologies": []string{"go"}}},
	{"tool": "submit_task", "arguments": map[string]any{"agent": "gotour", "prompt": "symbol strings Builder", "directories": []string{"strings"}, "technologies": []string{"go"}}},
	{"tool": "submit_task", "arguments": map[string]any{"agent": "gotuor", "prompt": "summary strings", "directories": []string{"strings"}}},
	{"tool": "place_task", "arguments": map[string]any{"agent": "gotour", "directories": []string{"strings"}}},
}

// TestExampleMCP follows examples/mcp with the official MCP TypeScript
// SDK's client, as an orchestrating agent would: over stdio, with hearth
// started exactly as claude_desktop_config.json says, in its own process
// and through a daemon; and over the daemon's HTTP endpoint with its
// token. Each time the client lists hearth's tools and resources,
// submits two tasks about one package and sees the second land on the
// session the first spawned, gets progress notifications, an unknown
// agent as a tool error naming the configured one, and reads the
// sessions as resources.
func TestExampleMCP(t *testing.T) {
	t.Parallel()
	nodetest.Need(t)
	path := hearthCommand(t) + string(os.PathListSeparator) + os.Getenv("PATH")
	stdioPlan := func(dataDir string) map[string]any {
		command, args := desktopServer(t, dataDir)
		return map[string]any{"transport": "stdio", "command": command, "args": args,
			"env":   map[string]string{"PATH": path, "HOME": os.Getenv("HOME"), "GORACE": "atexit_sleep_ms=0"},
			"calls": exampleCalls, "read": []string{"hearth://sessions", "hearth://sessions/{session}", "hearth://runs"}}
	}
	t.Run("stdio in process", func(t *testing.T) {
		checkExample(t, tsClient(t, stdioPlan(filepath.Join(t.TempDir(), "data"))))
	})
	root, _ := filepath.Abs("../..")
	config := filepath.Join(root, "examples", "mcp", "hearth.hcl")
	t.Run("stdio through the daemon", func(t *testing.T) {
		s := serve(t, map[string]string{"HEARTH_CONFIG": config})
		defer s.stop(t)
		checkExample(t, tsClient(t, stdioPlan(s.dataDir)))
		// It was the daemon's work: its sessions know the package.
		code, out, _ := run(t, map[string]string{"HEARTH_DATA_DIR": s.dataDir}, "sessions", "list")
		if code != 0 || !strings.Contains(out, "strings") {
			t.Errorf("the daemon's sessions: %d %s", code, out)
		}
	})
	t.Run("http", func(t *testing.T) {
		s := serve(t, map[string]string{"HEARTH_CONFIG": config})
		defer s.stop(t)
		token, err := os.ReadFile(s.tokenFile)
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + s.http + "/mcp"
		checkExample(t, tsClient(t, map[string]any{"transport": "http", "url": url, "token": strings.TrimSpace(string(token)),
			"calls": exampleCalls, "read": []string{"hearth://sessions", "hearth://sessions/{session}", "hearth://runs"}}))
		// Without the token, or with another one, nothing is served.
		for _, bearer := range []string{"", "Bearer not-the-token"} {
			req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if bearer != "" {
				req.Header.Set("Authorization", bearer)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST /mcp with %q: %s, want 401", bearer, resp.Status)
			}
		}
	})
}

// checkExample checks what the client saw in examples/mcp's calls.
func checkExample(t *testing.T, r tsReport) {
	t.Helper()
	var tools []string
	for _, tool := range r.Tools {
		tools = append(tools, tool.Name)
		if len(tool.Description) < 60 {
			t.Errorf("tool %s is described in %d characters: %q; a model picks a tool by its description", tool.Name, len(tool.Description), tool.Description)
		}
	}
	for _, want := range []string{"submit_task", "place_task", "list_sessions", "show_session", "start_run", "list_runs", "show_run"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools %v lack %s", tools, want)
		}
	}
	if !slices.Contains(r.Resources, "hearth://sessions") || !slices.Contains(r.Templates, "hearth://sessions/{id}") || !slices.Contains(r.Templates, "hearth://runs/{id}") {
		t.Errorf("resources %v, templates %v", r.Resources, r.Templates)
	}
	if len(r.Calls) != len(exampleCalls) {
		t.Fatalf("%d calls answered, want %d", len(r.Calls), len(exampleCalls))
	}
	type outcome struct {
		Session  string `json:"session"`
		Decision struct {
			Action string `json:"action"`
		} `json:"decision"`
	}
	var first, second outcome
	for i, o := range []*outcome{&first, &second} {
		c := r.Calls[i]
		if c.IsError || json.Unmarshal(c.Structured, o) != nil {
			t.Fatalf("submit %d: error %v: %s", i+1, c.IsError, c.Text)
		}
		if len(c.Progress) == 0 {
			t.Errorf("submit %d: no progress notification", i+1)
		}
		for j := 1; j < len(c.Progress); j++ {
			if c.Progress[j].Progress <= c.Progress[j-1].Progress {
				t.Errorf("submit %d: progress went from %v to %v", i+1, c.Progress[j-1], c.Progress[j])
			}
		}
	}
	if first.Decision.Action != "spawned" || second.Decision.Action != "reused" || second.Session != first.Session {
		t.Errorf("the first task %s on %s, the second %s on %s; want the second reused on the first's session\n%s\n%s",
			first.Decision.Action, first.Session, second.Decision.Action, second.Session, r.Calls[0].Text, r.Calls[1].Text)
	}
	if !strings.Contains(r.Calls[1].Text, "reused") || !strings.Contains(r.Calls[1].Text, first.Session) {
		t.Errorf("the second answer's text does not say it reused %s: %s", first.Session, r.Calls[1].Text)
	}
	if bad := r.Calls[2]; !bad.IsError || !strings.Contains(bad.Text, "gotuor") || !strings.Contains(bad.Text, "gotour") {
		t.Errorf("an unknown agent: error %v %q; want a tool error naming it and the configured agent", bad.IsError, bad.Text)
	}
	if p := r.Calls[3]; p.IsError || !strings.Contains(p.Text, "reuse") {
		t.Errorf("place_task: %v %s", p.IsError, p.Text)
	}
	for _, rd := range r.Reads {
		if rd.Error != "" || rd.MIMEType != "application/json" {
			t.Errorf("read %s: %s (%s)", rd.URI, rd.Error, rd.MIMEType)
		}
	}
	if len(r.Reads) > 1 && !strings.Contains(string(r.Reads[1].JSON), `"strings"`) {
		t.Errorf("session %s's resource does not show the package it read: %.300s", first.Session, r.Reads[1].JSON)
	}
}
