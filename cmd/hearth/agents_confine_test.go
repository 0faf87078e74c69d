package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
)

// TestAgentsListConfinement: agents list says, per agent, whether its
// plugins run confined on this machine, in words and in --json.
func TestAgentsListConfinement(t *testing.T) {
	t.Parallel()
	st := process.Landlock()
	cfg := writeConfig(t, `
agent "strict" {
  bundled     = "gotour"
  confinement = "require"
}
agent "loose" {
  bundled     = "workshop"
  confinement = "off"
}
agent "cc" { external = "claude-code" }
`)
	code, out, _ := run(t, map[string]string{"HEARTH_CONFIG": cfg}, "agents", "list", "--json")
	var views []agentView
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil || len(configured(views)) != 3 {
		t.Fatalf("got %d %q", code, out)
	}
	views = configured(views)
	strict, loose, cc := views[0].Confinement, views[1].Confinement, views[2].Confinement
	if strict == nil || strict.Mode != "require" || strict.Confined != st.Available() || strict.LandlockABI != st.ABI {
		t.Errorf("strict: %+v, want require, confined=%v, ABI %d", strict, st.Available(), st.ABI)
	}
	if loose == nil || loose.Mode != "off" || loose.Confined || loose.Detail != `no: confinement = "off"` {
		t.Errorf("loose: %+v, want off, not confined", loose)
	}
	if cc != nil {
		t.Errorf("external agent: %+v, want no confinement (hearth runs no process)", cc)
	}

	code, out, _ = run(t, map[string]string{"HEARTH_CONFIG": cfg}, "agents", "list")
	if code != 0 || !regexp.MustCompile(`CONFINED\n`).MatchString(out) || !regexp.MustCompile(`loose\s+bundled workshop.*no: confinement = "off"\n`).MatchString(out) {
		t.Errorf("table: %q", out)
	}
}

// TestConfinementOf: what agents list says on a machine without
// Landlock, for each mode.
func TestConfinementOf(t *testing.T) {
	t.Parallel()
	none := process.LandlockStatus{Reason: "this kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"}
	seven := process.LandlockStatus{ABI: 7}
	for _, tc := range []struct {
		mode     config.Confinement
		st       process.LandlockStatus
		confined bool
		detail   string
	}{
		{config.ConfinementAuto, seven, true, "yes: Landlock ABI 7"},
		{config.ConfinementRequire, seven, true, "yes: Landlock ABI 7"},
		{config.ConfinementAuto, none, false, "NO: Landlock unavailable: this kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"},
		{config.ConfinementRequire, none, false, `will not start: confinement = "require" and Landlock unavailable: this kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)`},
		{config.ConfinementOff, seven, false, `no: confinement = "off"`},
	} {
		a := config.DefaultAgent("a")
		a.Confinement = tc.mode
		v := confinementOf(a, tc.st)
		if v.Confined != tc.confined || v.Detail != tc.detail || v.Mode != string(tc.mode) {
			t.Errorf("%s with %v: got %+v, want confined=%v %q", tc.mode, tc.st, v, tc.confined, tc.detail)
		}
	}
}

// TestReadmeConfinement checks the README's "Confined plugins" section:
// its config is valid as written, and agents list reads it as the text
// says.
func TestReadmeConfinement(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n### Confined plugins\n")
	section, _, _ = strings.Cut(section, "\n## ")
	m := hclBlock.FindStringSubmatch(section)
	if m == nil || !strings.Contains(m[1], "read_paths") {
		t.Fatalf("the README's Confined plugins section has no HCL block with grants:\n%s", section)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hearth.hcl")
	if err := os.WriteFile(cfg, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	// The grants do not exist yet: validate says so, naming them.
	code, _, errOut := run(t, nil, "config", "validate", cfg)
	if code != exitUsage || !strings.Contains(errOut, `agent "coder": plugin cannot be confined as configured: read_paths entry `+filepath.Join(dir, "docs")+" does not exist") ||
		!strings.Contains(errOut, "write_paths entry "+filepath.Join(dir, "build")) {
		t.Errorf("config validate without the granted paths: %d %s", code, errOut)
	}
	for _, d := range []string{"src", "docs", "build"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := run(t, nil, "config", "validate", cfg); code != 0 {
		t.Fatalf("config validate: %d %s %s", code, out, errOut)
	}
	code, out, _ := run(t, map[string]string{"HEARTH_CONFIG": cfg}, "agents", "list", "--json")
	var views []agentView
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil || len(configured(views)) != 2 {
		t.Fatalf("agents list: %d %q", code, out)
	}
	views = configured(views)
	st := process.Landlock()
	if c := views[0].Confinement; views[0].Name != "coder" || c.Mode != "auto" || c.Confined != st.Available() {
		t.Errorf("coder: %+v, want auto, confined=%v", c, st.Available())
	}
	if c := views[1].Confinement; views[1].Name != "legacy" || c.Mode != "off" || c.Confined {
		t.Errorf("legacy: %+v, want off", c)
	}
}

// TestPluginsLine: what hearth serve says of its plugins when it starts.
func TestPluginsLine(t *testing.T) {
	t.Parallel()
	seven, none := process.LandlockStatus{ABI: 7}, process.LandlockStatus{Reason: "faked"}
	agent := func(name string, mode config.Confinement) *config.Agent {
		a := config.DefaultAgent(name)
		a.Confinement = mode
		return a
	}
	ext := config.DefaultExternal("cc", config.ExternalClaudeCode)
	for _, tc := range []struct {
		agents []*config.Agent
		st     process.LandlockStatus
		want   string
	}{
		{[]*config.Agent{agent("a", "auto"), ext}, seven, "confined by Landlock ABI 7; hearth agents list shows each agent"},
		{[]*config.Agent{agent("a", "auto"), agent("b", "off")}, seven, `confined by Landlock ABI 7, except 1 agent(s) with confinement = "off"; hearth agents list shows each agent`},
		{[]*config.Agent{agent("a", "auto")}, none, "UNCONFINED: Landlock unavailable: faked; hearth agents list shows each agent"},
		{[]*config.Agent{agent("b", "off")}, seven, `unconfined (confinement = "off"); hearth agents list shows each agent`},
		{[]*config.Agent{ext}, seven, ""},
	} {
		if got := pluginsLine(&config.Config{Agents: tc.agents}, tc.st); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// configured leaves out the bundled agents the config does not declare,
// which agents list shows too.
func configured(views []agentView) []agentView {
	var out []agentView
	for _, v := range views {
		if v.Configured {
			out = append(out, v)
		}
	}
	return out
}
