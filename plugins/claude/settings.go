package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The environment variables a managed Claude Code agent reads its
// settings from. A config's `claude_code` block sets them (host/config);
// a hand-written agent block may set them in its env map instead. Lists
// and the extra settings are JSON. The API key itself is never among
// them: APIKeyEnv names the variable that holds it, which reaches the
// plugin through the block's pass_env.
const (
	EnvCommand            = "HEARTH_CLAUDE_COMMAND"
	EnvModel              = "HEARTH_CLAUDE_MODEL"
	EnvPermissionMode     = "HEARTH_CLAUDE_PERMISSION_MODE"
	EnvAllowedTools       = "HEARTH_CLAUDE_ALLOWED_TOOLS"
	EnvDisallowedTools    = "HEARTH_CLAUDE_DISALLOWED_TOOLS"
	EnvMaxTurns           = "HEARTH_CLAUDE_MAX_TURNS"
	EnvAppendSystemPrompt = "HEARTH_CLAUDE_APPEND_SYSTEM_PROMPT"
	EnvSettings           = "HEARTH_CLAUDE_SETTINGS"
	EnvBaseURL            = "HEARTH_CLAUDE_BASE_URL"
	EnvAPIKeyEnv          = "HEARTH_CLAUDE_API_KEY_ENV"
	EnvRoot               = "HEARTH_CLAUDE_ROOT"
	EnvHookRelay          = "HEARTH_CLAUDE_HOOK_RELAY"
	defaultMaxTurns       = 40
)

// PermissionModes are Claude Code's permission modes (its
// --permission-mode).
var PermissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

// MinVersion is the oldest Claude Code the agent runs: the oldest its
// tests have run against.
const MinVersion = "2.1.197"

// ConfinedMinVersion is the first Claude Code that runs under Landlock:
// earlier versions read /proc/self/maps as they start, which a confined
// process cannot (only the plugin's own /proc entry is granted), and
// abort. Older versions run with the agent's confinement = "off".
const ConfinedMinVersion = "2.1.314"

// FailurePolicyVersion is the first Claude Code that honours a hook's
// failure policy (onFailure: "block"); before it, a hook that cannot run
// is a non-blocking error and the tool use goes ahead.
const FailurePolicyVersion = "2.1.295"

// Settings configure one managed Claude Code agent.
type Settings struct {
	// Command is the claude program: a path, or a name looked up in PATH.
	Command string
	// Model is Claude Code's --model ("claude-sonnet-4-5", "sonnet");
	// empty leaves Claude Code's default.
	Model string
	// PermissionMode is Claude Code's --permission-mode; empty leaves
	// its default ("default": in headless runs, tools that would ask are
	// refused unless AllowedTools allow them).
	PermissionMode string
	// AllowedTools and DisallowedTools are Claude Code's --allowedTools
	// and --disallowedTools rules ("Read", "Bash(go test:*)").
	AllowedTools, DisallowedTools []string
	// MaxTurns bounds the turns of one task (--max-turns).
	MaxTurns int
	// AppendSystemPrompt is added to Claude Code's system prompt.
	AppendSystemPrompt string
	// Extra is more Claude Code settings, a JSON object merged into the
	// settings file hearth writes for each run; "hooks" is hearth's.
	Extra map[string]json.RawMessage
	// BaseURL reaches another endpoint than Anthropic's own: a proxy, or
	// a local server (ANTHROPIC_BASE_URL).
	BaseURL string
	// APIKeyEnv names the variable holding the key, which Claude Code is
	// given as ANTHROPIC_API_KEY; empty means no key (a local server).
	APIKeyEnv string
	// APIKey is the key read from APIKeyEnv; never exported, logged or
	// stored.
	APIKey string
	// Root is the workspace claude works in; empty means the current
	// directory (the host starts a plugin in its agent's workspace).
	Root string
	// HookRelay is the program the hooks run, as `HookRelay --socket
	// SOCKET`: cmd/hearth-hook, which starts in a millisecond. Empty
	// means the agent's own program, as `PROGRAM __hearth-claude-hook
	// SOCKET` (the hearth binary, for the bundled agent: over ten).
	HookRelay string
}

// SettingsFromEnv reads the settings from the environment, as lookup
// (os.LookupEnv in a plugin) returns it.
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	s := Settings{
		Command:            get(EnvCommand),
		Model:              get(EnvModel),
		PermissionMode:     get(EnvPermissionMode),
		AppendSystemPrompt: get(EnvAppendSystemPrompt),
		BaseURL:            get(EnvBaseURL),
		Root:               get(EnvRoot),
		HookRelay:          get(EnvHookRelay),
		APIKeyEnv:          "ANTHROPIC_API_KEY",
	}
	if v, ok := lookup(EnvAPIKeyEnv); ok {
		s.APIKeyEnv = v
	}
	var errs []error
	list := func(k string, dst *[]string) {
		if v := get(k); v != "" {
			if err := json.Unmarshal([]byte(v), dst); err != nil {
				errs = append(errs, fmt.Errorf("%s = %q: want a JSON list of strings, such as [\"Read\", \"Bash(go test:*)\"]", k, v))
			}
		}
	}
	list(EnvAllowedTools, &s.AllowedTools)
	list(EnvDisallowedTools, &s.DisallowedTools)
	if v := get(EnvMaxTurns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s = %q: want a whole number of turns, 1 or more", EnvMaxTurns, v))
		}
		s.MaxTurns = n
	}
	if v := get(EnvSettings); v != "" {
		if err := json.Unmarshal([]byte(v), &s.Extra); err != nil {
			errs = append(errs, fmt.Errorf("%s: want a JSON object of Claude Code settings: %v", EnvSettings, err))
		}
	}
	if s.APIKeyEnv != "" {
		s.APIKey = get(s.APIKeyEnv)
	}
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	return s, s.validate()
}

// withDefaults fills what s leaves unset.
func (s Settings) withDefaults() Settings {
	if s.Command == "" {
		s.Command = "claude"
	}
	if s.MaxTurns == 0 {
		s.MaxTurns = defaultMaxTurns
	}
	return s
}

// validate says what is wrong with s, and how to fix it.
func (s Settings) validate() error {
	var errs []error
	if s.PermissionMode != "" && !slices.Contains(PermissionModes, s.PermissionMode) {
		errs = append(errs, fmt.Errorf("permission_mode %q is not one of Claude Code's: %s", s.PermissionMode, strings.Join(PermissionModes, ", ")))
	}
	if _, ok := s.Extra["hooks"]; ok {
		errs = append(errs, errors.New("the extra Claude Code settings set \"hooks\", which hearth writes itself to follow the session; remove them (a project's .claude/settings.json hooks still run)"))
	}
	switch {
	case s.APIKeyEnv == "" && s.BaseURL == "":
		errs = append(errs, fmt.Errorf("no api_key_env for Anthropic's own endpoint; name the variable that holds the key (%s)", EnvAPIKeyEnv))
	case s.APIKeyEnv != "" && s.APIKey == "":
		errs = append(errs, fmt.Errorf("the API key variable %s is not set in the agent's environment; export it where hearth runs and list it in the agent block's pass_env (a claude_code block does that)", s.APIKeyEnv))
	}
	return errors.Join(errs...)
}

var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)`)

// CLIVersion is a Claude Code version: major, minor, patch.
type CLIVersion [3]int

// ParseVersion reads a version from `claude --version`'s output
// ("2.1.332 (Claude Code)").
func ParseVersion(s string) (CLIVersion, error) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return CLIVersion{}, fmt.Errorf("%q is not a Claude Code version (want MAJOR.MINOR.PATCH)", firstLine(s))
	}
	var v CLIVersion
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

// Less reports whether v is older than w.
func (v CLIVersion) Less(w CLIVersion) bool { return slices.Compare(v[:], w[:]) < 0 }

func (v CLIVersion) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func mustVersion(s string) CLIVersion {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

var (
	minVersion      = mustVersion(MinVersion)
	confinedVersion = mustVersion(ConfinedMinVersion)
	policyVersion   = mustVersion(FailurePolicyVersion)
)

// CheckConfinable says whether Claude Code v runs confined, and what to
// do if not.
func CheckConfinable(v CLIVersion) error {
	if v.Less(confinedVersion) {
		return fmt.Errorf("%w: Claude Code %s cannot run confined (it aborts without /proc/self/maps); upgrade to %s or later (npm install -g @anthropic-ai/claude-code@latest), or set confinement = \"off\" on the agent", ErrOldCLI, v, ConfinedMinVersion)
	}
	return nil
}

// CheckCLI finds command (a path, or a name in PATH), runs it with
// --version, and returns its path and version; the error says what is
// missing or too old, and how to get it. `hearth config validate` calls
// it for every claude_code agent.
func CheckCLI(command string) (string, CLIVersion, error) {
	if command == "" {
		command = "claude"
	}
	path, err := exec.LookPath(command)
	if err != nil {
		return "", CLIVersion{}, fmt.Errorf("%w: %q not found (%v); install it (npm install -g @anthropic-ai/claude-code) or set the claude_code block's command to its path", ErrNoCLI, command, err)
	}
	cmd := exec.Command(path, "--version")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		hint := "is it Claude Code?"
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ProcessState != nil && !ee.Exited() {
			// Killed by a signal: under Landlock, that is an older Claude
			// Code that cannot run confined.
			hint = fmt.Sprintf("a Claude Code older than %s aborts so when confined: upgrade it, or set confinement = \"off\" on the agent", ConfinedMinVersion)
		}
		return path, CLIVersion{}, fmt.Errorf("%w: %s --version failed (%v); %s", ErrNoCLI, path, err, hint)
	}
	v, err := ParseVersion(string(out))
	if err != nil {
		return path, v, fmt.Errorf("%w: %s --version: %v", ErrNoCLI, path, err)
	}
	if v.Less(minVersion) {
		return path, v, fmt.Errorf("%w: %s is Claude Code %s; hearth needs %s or later (npm install -g @anthropic-ai/claude-code@latest)", ErrOldCLI, path, v, MinVersion)
	}
	return path, v, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
