package config

import (
	"encoding/json"
	"maps"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hearth-dev/hearth/internal/hclspot"
)

// ClaudeCode is an agent block's `claude_code { ... }`: the settings of
// the managed Claude Code agent (plugins/claude). They reach the plugin
// as HEARTH_CLAUDE_* variables added to the block's env; the API key
// reaches it through pass_env, from the variable APIKeyEnv names, and is
// never in the config or the store. The block also grants what claude
// needs under confinement: the directories of the claude program and of
// the hook relay (read and execute) and, unless the agent block sets connect_ports itself, the
// TCP port of the model endpoint alone.
type ClaudeCode struct {
	// Command is the claude program as the block names it; Program is
	// where it was found (through symbolic links).
	Command, Program string
	// Model is Claude Code's --model; empty: its default.
	Model string
	// PermissionMode is Claude Code's --permission-mode; empty: its
	// default.
	PermissionMode string
	// AllowedTools and DisallowedTools are Claude Code's permission rules.
	AllowedTools, DisallowedTools []string
	// MaxTurns bounds one task's turns; 0: the agent's default (40).
	MaxTurns int
	// AppendSystemPrompt is added to Claude Code's system prompt.
	AppendSystemPrompt string
	// Settings is more Claude Code settings, as a JSON object; nil for
	// none.
	Settings json.RawMessage
	// BaseURL reaches a proxy or a local server; APIKeyEnv names the
	// variable that holds the key ("" for none: a local server).
	BaseURL, APIKeyEnv string
	// HookRelay is the program Claude Code's hooks run (cmd/hearth-hook,
	// found and resolved as Program is); empty: the agent's own program.
	HookRelay string
}

// ClaudePermissionModes are the permission modes a claude_code block may
// name (Claude Code's own).
var ClaudePermissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

type rawClaudeCode struct {
	Command            *string   `hcl:"command,optional"`
	Model              *string   `hcl:"model,optional"`
	PermissionMode     *string   `hcl:"permission_mode,optional"`
	AllowedTools       []string  `hcl:"allowed_tools,optional"`
	DisallowedTools    []string  `hcl:"disallowed_tools,optional"`
	MaxTurns           *int      `hcl:"max_turns,optional"`
	AppendSystemPrompt *string   `hcl:"append_system_prompt,optional"`
	Settings           cty.Value `hcl:"settings,optional"`
	BaseURL            *string   `hcl:"base_url,optional"`
	APIKeyEnv          *string   `hcl:"api_key_env,optional"`
	HookRelay          *string   `hcl:"hook_relay,optional"`
	Body               hcl.Body  `hcl:",body"`
	DefRange           hcl.Range `hcl:",def_range"`
}

// lookPath finds the claude program, as the plugin will.
var lookPath = exec.LookPath

// claudeCode decodes an agent's claude_code block into a.ClaudeCode,
// a.Env, a.PassEnv and its grants. It runs after the agent's confinement
// settings, which it adds to.
func (v *validator) claudeCode(ra *rawAgent, a *Agent) {
	rc := ra.ClaudeCode
	at := func(name string) hcl.Range { return hclspot.Attr(rc.Body, name, rc.DefRange) }
	if a.Bundled != "claude" && len(a.Command) == 0 {
		v.errorf(rc.DefRange, "claude_code on another agent", "Agent %q runs %s, not the managed Claude Code agent; a claude_code block configures bundled = \"claude\" (or command = [\"hearth-claude\"]).", ra.Name, bundledName(a.Bundled))
		return
	}
	c := &ClaudeCode{Command: "claude", APIKeyEnv: "ANTHROPIC_API_KEY"}
	str := func(p *string, dst *string) {
		if p != nil {
			*dst = *p
		}
	}
	str(rc.Command, &c.Command)
	str(rc.Model, &c.Model)
	str(rc.PermissionMode, &c.PermissionMode)
	str(rc.AppendSystemPrompt, &c.AppendSystemPrompt)
	str(rc.BaseURL, &c.BaseURL)
	str(rc.APIKeyEnv, &c.APIKeyEnv)
	c.AllowedTools, c.DisallowedTools = slices.Clone(rc.AllowedTools), slices.Clone(rc.DisallowedTools)

	if strings.TrimSpace(c.Command) == "" {
		v.errorf(at("command"), "Empty command", "command names the claude program, a path or a name looked up in PATH; remove it for \"claude\".")
	} else if cmd, p, err := v.program(c.Command); err != nil {
		v.errorf(at("command"), "Claude Code not found", "Agent %q runs %q, which is not there (%v). Install Claude Code (npm install -g @anthropic-ai/claude-code) or set command to the claude program's path.", ra.Name, c.Command, err)
	} else {
		c.Command, c.Program = cmd, p
	}
	if rc.HookRelay != nil {
		if _, p, err := v.program(*rc.HookRelay); err != nil {
			v.errorf(at("hook_relay"), "Hook relay not found", "hook_relay names the program Claude Code's hooks run, hearth-hook (go install ./cmd/hearth-hook); %q is not there (%v). Remove it to use the agent's own program.", *rc.HookRelay, err)
		} else {
			c.HookRelay = p
		}
	}
	if c.PermissionMode != "" && !slices.Contains(ClaudePermissionModes, c.PermissionMode) {
		v.errorf(at("permission_mode"), "Unknown permission mode", "permission_mode is one of Claude Code's: %s; got %q.", strings.Join(ClaudePermissionModes, ", "), c.PermissionMode)
	}
	for i, list := range [][]string{c.AllowedTools, c.DisallowedTools} {
		name := [2]string{"allowed_tools", "disallowed_tools"}[i]
		for j, r := range list {
			if strings.TrimSpace(r) == "" || strings.Contains(r, ",") && !strings.Contains(r, "(") {
				v.errorf(hclspot.Elem(rc.Body, name, j, rc.DefRange), "Invalid tool rule", "%s lists Claude Code permission rules, one a string, such as \"Read\" or \"Bash(go test:*)\"; %q is not one.", name, r)
			}
		}
	}
	if rc.MaxTurns != nil {
		c.MaxTurns = *rc.MaxTurns
		if c.MaxTurns < 1 {
			v.errorf(at("max_turns"), "Invalid max_turns", "max_turns bounds the turns of one task and must be at least 1 (got %d); remove it for the default, 40.", c.MaxTurns)
		}
	}
	if !rc.Settings.IsNull() && rc.Settings.IsKnown() {
		ty := rc.Settings.Type()
		if !ty.IsObjectType() && !ty.IsMapType() {
			v.errorf(at("settings"), "Invalid settings", "settings is an object of Claude Code settings, as in settings = { env = { FOO = \"1\" } }.")
		} else if b, err := ctyjson.Marshal(rc.Settings, ty); err != nil {
			v.errorf(at("settings"), "Invalid settings", "settings cannot be written as JSON: %v.", err)
		} else {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(b, &m)
			if _, ok := m["hooks"]; ok {
				v.errorf(at("settings"), "Hooks in settings", "hearth writes the hooks of a managed Claude Code session itself, to follow it; remove \"hooks\" from settings (a project's .claude/settings.json hooks still run).")
			}
			c.Settings = b
		}
	}
	port := 443
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.errorf(at("base_url"), "Invalid base_url", "base_url must be an http:// or https:// URL, such as \"http://127.0.0.1:8080\"; got %q.", c.BaseURL)
		} else if p := u.Port(); p != "" {
			port, _ = strconv.Atoi(p)
		} else if u.Scheme == "http" {
			port = 80
		}
	}
	v.apiKey(at("api_key_env"), ra.Name, c.APIKeyEnv, c.BaseURL, "gives Claude Code the key in")
	a.ClaudeCode = c
	v.blockEnv(ra, a, "claude_code", c.Env(), c.APIKeyEnv)
	// What claude needs under confinement: its program's directory (a
	// native binary, or a Node.js package and what it loads beside it),
	// and the model endpoint's port; its state lives in the plugin's
	// private temporary directory.
	for _, prog := range []string{c.Program, c.HookRelay} {
		if prog != "" && !slices.Contains(a.ReadPaths, filepath.Dir(prog)) {
			a.ReadPaths = append(a.ReadPaths, filepath.Dir(prog))
		}
	}
	if ra.ConnectPorts == nil {
		a.ConnectPorts = []uint16{uint16(port)}
	}
}

// program finds the program cmd names (a path, relative to the file, or
// a name in PATH), as the plugin will, and where it leads through
// symbolic links: cmd as the plugin is to run it, and the file.
func (v *validator) program(cmd string) (string, string, error) {
	if strings.ContainsRune(cmd, filepath.Separator) {
		cmd = v.path(cmd)
	}
	p, err := lookPath(cmd)
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	return cmd, p, err
}

// blockEnv adds the variables a block (model, claude_code) carries its
// settings in to the agent's env, refusing one the env sets too, and the
// variable holding its key (keyEnv, "" for none) to pass_env.
func (v *validator) blockEnv(ra *rawAgent, a *Agent, block string, env map[string]string, keyEnv string) {
	what := map[string]string{"model": "Model", "claude_code": "Claude Code"}[block]
	for k := range env {
		if _, ok := a.Env[k]; ok {
			v.errorf(hclspot.Attr(ra.Body, "env", ra.DefRange), what+" setting set twice", "Agent %q sets %s in env and in its %s block; keep the %s block.", ra.Name, k, block, block)
		}
	}
	merged := make(map[string]string, len(a.Env)+len(env))
	maps.Copy(merged, a.Env)
	maps.Copy(merged, env)
	a.Env = merged
	if keyEnv != "" {
		if a.PassEnv == nil {
			a.PassEnv = slices.Clone(DefaultPassEnv)
		}
		if !slices.Contains(a.PassEnv, keyEnv) {
			a.PassEnv = append(a.PassEnv, keyEnv)
		}
	}
}

// Env returns the variables that carry c to the managed Claude Code
// agent (see plugins/claude's README).
func (c *ClaudeCode) Env() map[string]string {
	env := map[string]string{
		"HEARTH_CLAUDE_COMMAND":     c.Command,
		"HEARTH_CLAUDE_API_KEY_ENV": c.APIKeyEnv,
	}
	set := func(k, v string) {
		if v != "" {
			env[k] = v
		}
	}
	list := func(k string, l []string) {
		if len(l) > 0 {
			b, _ := json.Marshal(l)
			env[k] = string(b)
		}
	}
	set("HEARTH_CLAUDE_MODEL", c.Model)
	set("HEARTH_CLAUDE_PERMISSION_MODE", c.PermissionMode)
	set("HEARTH_CLAUDE_APPEND_SYSTEM_PROMPT", c.AppendSystemPrompt)
	set("HEARTH_CLAUDE_BASE_URL", c.BaseURL)
	set("HEARTH_CLAUDE_SETTINGS", string(c.Settings))
	set("HEARTH_CLAUDE_HOOK_RELAY", c.HookRelay)
	list("HEARTH_CLAUDE_ALLOWED_TOOLS", c.AllowedTools)
	list("HEARTH_CLAUDE_DISALLOWED_TOOLS", c.DisallowedTools)
	if c.MaxTurns != 0 {
		env["HEARTH_CLAUDE_MAX_TURNS"] = strconv.Itoa(c.MaxTurns)
	}
	return env
}

func bundledName(bundled string) string {
	if bundled == "" {
		return "no bundled agent"
	}
	return "the bundled agent " + strconv.Quote(bundled)
}
