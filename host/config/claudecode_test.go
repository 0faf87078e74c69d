package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeClaude puts an executable "claude" in a temp dir behind a symbolic
// link, as npm installs it, and returns the link and the directory of
// the file it leads to.
func fakeClaude(t *testing.T) (link, realDir string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	realDir = filepath.Join(dir, "pkg", "bin")
	if err := os.MkdirAll(realDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(realDir, "claude.exe"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "claude")
	if err := os.Symlink(filepath.Join(realDir, "claude.exe"), link); err != nil {
		t.Fatal(err)
	}
	return link, realDir
}

func TestClaudeCodeBlock(t *testing.T) {
	t.Setenv("HEARTH_TEST_CLAUDE_KEY", "sk-claude-secret")
	bin, realDir := fakeClaude(t)
	relay := filepath.Join(t.TempDir(), "hearth-hook")
	if err := os.WriteFile(relay, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	relay, _ = filepath.EvalSymlinks(relay)
	src := `
agent "coder" {
  bundled  = "claude"
  pass_env = ["PATH"]
  claude_code {
    command              = "` + bin + `"
    model                = "claude-sonnet-4-5"
    permission_mode      = "acceptEdits"
    allowed_tools        = ["Read", "Bash(go test:*)"]
    disallowed_tools     = ["WebFetch"]
    max_turns            = 12
    append_system_prompt = "Be brief."
    settings             = { env = { GOFLAGS = "-mod=mod" } }
    base_url             = "http://127.0.0.1:8089"
    api_key_env          = "HEARTH_TEST_CLAUDE_KEY"
  }
}

agent "plain" {
  bundled = "claude"
  claude_code {
    command     = "` + bin + `"
    api_key_env = "HEARTH_TEST_CLAUDE_KEY"
  }
}

agent "relayed" {
  bundled = "claude"
  claude_code {
    command     = "` + bin + `"
    hook_relay  = "` + relay + `"
    api_key_env = "HEARTH_TEST_CLAUDE_KEY"
  }
}

agent "ports" {
  bundled       = "claude"
  connect_ports = [443, 8443]
  claude_code {
    command     = "` + bin + `"
    api_key_env = "HEARTH_TEST_CLAUDE_KEY"
  }
}
`
	cfg, err := Parse([]byte(src), "/etc/hearth/hearth.hcl", Options{Bundled: []string{"claude"}})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agent("coder")
	want := map[string]string{
		"HEARTH_CLAUDE_COMMAND":              bin,
		"HEARTH_CLAUDE_MODEL":                "claude-sonnet-4-5",
		"HEARTH_CLAUDE_PERMISSION_MODE":      "acceptEdits",
		"HEARTH_CLAUDE_ALLOWED_TOOLS":        `["Read","Bash(go test:*)"]`,
		"HEARTH_CLAUDE_DISALLOWED_TOOLS":     `["WebFetch"]`,
		"HEARTH_CLAUDE_MAX_TURNS":            "12",
		"HEARTH_CLAUDE_APPEND_SYSTEM_PROMPT": "Be brief.",
		"HEARTH_CLAUDE_SETTINGS":             `{"env":{"GOFLAGS":"-mod=mod"}}`,
		"HEARTH_CLAUDE_BASE_URL":             "http://127.0.0.1:8089",
		"HEARTH_CLAUDE_API_KEY_ENV":          "HEARTH_TEST_CLAUDE_KEY",
	}
	for k, v := range want {
		if a.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, a.Env[k], v)
		}
	}
	if len(a.Env) != len(want) {
		t.Errorf("env %v has more than %v", a.Env, want)
	}
	if !slices.Equal(a.PassEnv, []string{"PATH", "HEARTH_TEST_CLAUDE_KEY"}) {
		t.Errorf("pass_env %q, want the block's and the key's variable", a.PassEnv)
	}
	if !slices.Equal(a.ReadPaths, []string{realDir}) {
		t.Errorf("read_paths %q, want the directory the claude program is in, through its link: %s", a.ReadPaths, realDir)
	}
	if !slices.Equal(a.ConnectPorts, []uint16{8089}) {
		t.Errorf("connect_ports %v, want the base URL's port alone", a.ConnectPorts)
	}
	if p := cfg.Agent("plain").ConnectPorts; !slices.Equal(p, []uint16{443}) {
		t.Errorf("connect_ports %v without base_url, want 443 (Anthropic's API)", p)
	}
	if p := cfg.Agent("ports").ConnectPorts; !slices.Equal(p, []uint16{443, 8443}) {
		t.Errorf("connect_ports %v, want the agent block's own", p)
	}
	if r := cfg.Agent("relayed"); r.Env["HEARTH_CLAUDE_HOOK_RELAY"] != relay || !slices.Equal(r.ReadPaths, []string{realDir, filepath.Dir(relay)}) {
		t.Errorf("hook_relay: env %q, read_paths %q; want the relay, and its directory granted", r.Env["HEARTH_CLAUDE_HOOK_RELAY"], r.ReadPaths)
	}
	for _, ag := range cfg.Agents {
		for k, v := range ag.Env {
			if strings.Contains(v, "sk-claude-secret") {
				t.Errorf("agent %s: env %s holds the key", ag.Name, k)
			}
		}
	}
}

// TestClaudeCodeKeyMissing: as for a model block, a key variable not set
// where hearth runs is a warning at its spot: only the agent's tasks
// need it, and they fail saying so.
func TestClaudeCodeKeyMissing(t *testing.T) {
	bin, _ := fakeClaude(t)
	src := "agent \"coder\" {\n  bundled = \"claude\"\n  claude_code {\n    api_key_env = \"HEARTH_TEST_UNSET_KEY\"\n    command = \"" + bin + "\"\n  }\n}\n"
	o := Options{Bundled: []string{"claude"}, Getenv: func(string) string { return "" }}
	cfg, err := Parse([]byte(src), "hearth.hcl", o)
	if err != nil {
		t.Fatalf("a missing key refused the file: %v", err)
	}
	var b strings.Builder
	if err := cfg.WriteWarnings(&b, 0, false); err != nil {
		t.Fatal(err)
	}
	if w := b.String(); !strings.Contains(w, "HEARTH_TEST_UNSET_KEY, which is not set") || !strings.Contains(w, "hearth.hcl:4:19") || !strings.Contains(w, "Warning") {
		t.Errorf("warnings:\n%s\nwant the missing HEARTH_TEST_UNSET_KEY named at hearth.hcl:4:19, as a warning", w)
	}
	o.Getenv = func(k string) string { return map[string]string{"HEARTH_TEST_UNSET_KEY": "k"}[k] }
	if cfg, err = Parse([]byte(src), "hearth.hcl", o); err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("with the key set: %v, warnings %v; want none", err, cfg.Warnings)
	}
}

func TestClaudeCodeBlockErrors(t *testing.T) {
	t.Setenv("HEARTH_TEST_CLAUDE_KEY", "k")
	t.Setenv("HEARTH_TEST_UNSET_KEY", "")
	bin, _ := fakeClaude(t)
	for _, c := range []struct {
		name, agent, block, want, at string
	}{
		{"unknown permission mode", `bundled = "claude"`, `permission_mode = "yolo"`, "Unknown permission mode", "hearth.hcl:4:23"},
		{"max_turns", `bundled = "claude"`, `max_turns = 0`, "Invalid max_turns", "hearth.hcl:4:17"},
		{"hooks in settings", `bundled = "claude"`, `settings = { hooks = {} }`, "Hooks in settings", "hearth.hcl:4:16"},
		{"settings not an object", `bundled = "claude"`, `settings = "x"`, "Invalid settings", "hearth.hcl:4:16"},
		{"claude missing", `bundled = "claude"`, `command = "/nonexistent/claude"`, "Claude Code not found", "hearth.hcl:4:15"},
		{"bad base_url", `bundled = "claude"`, `base_url = "ftp://x"`, "Invalid base_url", "hearth.hcl:4:16"},
		{"no key, no base_url", `bundled = "claude"`, `api_key_env = ""`, "No API key", "hearth.hcl:4:19"},
		{"hook relay missing", `bundled = "claude"`, `hook_relay = "/nonexistent/hearth-hook"`, "Hook relay not found", "hearth.hcl:4:18"},
		{"empty tool rule", `bundled = "claude"`, `allowed_tools = ["Read", ""]`, "Invalid tool rule", "hearth.hcl:4:30"},
		{"on another bundled agent", `bundled = "gotour"`, ``, "claude_code on another agent", "hearth.hcl:3:3"},
		{"on an external agent", `external = "claude-code"`, ``, "claude_code on an external agent", "hearth.hcl:3:3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			block := c.block
			if !strings.Contains(block, "command") {
				block += "\n    command = \"" + bin + "\""
			}
			if !strings.Contains(block, "api_key_env") {
				block += "\n    api_key_env = \"HEARTH_TEST_CLAUDE_KEY\""
			}
			src := "agent \"coder\" {\n  " + c.agent + "\n  claude_code {\n    " + block + "\n  }\n}\n"
			_, err := Parse([]byte(src), "hearth.hcl", Options{Bundled: []string{"claude", "gotour"}})
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.at) {
				t.Errorf("got %v, want %q at %s", err, c.want, c.at)
			}
		})
	}
}
