package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/text"
)

// Confinement says whether an agent's plugins run under Landlock (see
// docs/confinement.md for what a confined plugin may reach).
type Confinement string

// Confinement modes.
const (
	// ConfinementAuto confines plugins where the kernel has Landlock and
	// runs them unconfined where it does not; the host says which when
	// it starts, and `hearth agents list` shows it.
	ConfinementAuto Confinement = "auto"
	// ConfinementRequire refuses to start plugins that cannot be
	// confined.
	ConfinementRequire Confinement = "require"
	// ConfinementOff runs plugins unconfined: for an agent that needs
	// more of the machine than grants can describe.
	ConfinementOff Confinement = "off"
)

var confinementModes = []string{string(ConfinementAuto), string(ConfinementRequire), string(ConfinementOff)}

// confinementMode decodes a confinement attribute, def when absent.
func (v *validator) confinementMode(s *string, r hcl.Range, def Confinement) Confinement {
	if s == nil {
		return def
	}
	m := Confinement(strings.TrimSpace(*s))
	switch m {
	case ConfinementAuto, ConfinementRequire, ConfinementOff:
		return m
	}
	v.errorf(r, "Invalid confinement", "confinement must be %q (Landlock where the kernel has it), %q (refuse to start plugins that cannot be confined) or %q; got %q%s.",
		ConfinementAuto, ConfinementRequire, ConfinementOff, *s, text.Suggest(*s, confinementModes))
	return def
}

// agentConfinement decodes an agent block's confinement settings.
func (v *validator) agentConfinement(ra *rawAgent, a *Agent) {
	at := func(name string) hcl.Range { return hclspot.Attr(ra.Body, name, ra.DefRange) }
	a.Confinement = v.confinementMode(ra.Confinement, at("confinement"), v.confinement)
	a.ReadPaths = v.grants(ra.Body, "read_paths", ra.ReadPaths, ra.DefRange)
	a.WritePaths = v.grants(ra.Body, "write_paths", ra.WritePaths, ra.DefRange)
	if ra.ConnectPorts != nil {
		a.ConnectPorts = make([]uint16, 0, len(ra.ConnectPorts))
		for i, p := range ra.ConnectPorts {
			if p < 1 || p > 65535 {
				v.errorf(hclspot.Elem(ra.Body, "connect_ports", i, ra.DefRange), "Invalid port",
					"connect_ports lists the TCP ports a confined plugin may connect to, such as [443]; %d is not a port (1 to 65535). An empty list refuses every TCP connect.", p)
				continue
			}
			a.ConnectPorts = append(a.ConnectPorts, uint16(p))
		}
	}
}

// grants decodes read_paths or write_paths: absolute (relative to the
// file), and never the data directory or a path inside it.
func (v *validator) grants(body hcl.Body, name string, list []string, def hcl.Range) []string {
	var out []string
	for i, p := range list {
		r := hclspot.Elem(body, name, i, def)
		if strings.TrimSpace(p) == "" {
			v.errorf(r, "Empty path", "%s lists paths the agent's plugins may reach; remove the empty entry.", name)
			continue
		}
		if strings.HasPrefix(p, "~") {
			v.errorf(r, "Home directory shorthand", "%s entries are paths, and ~ is not expanded; write the home directory out, or use env(\"HOME\"), as in \"${env(\"HOME\")}/src\".", name)
			continue
		}
		abs := v.path(p)
		if v.dataDir != "" && paths.Within(abs, v.dataDir) {
			v.errorf(r, "Grant inside the data directory", "%s names %s, inside the data directory %s: no plugin may reach the host's records. Grant another path, or move data_dir.", name, abs, v.dataDir)
			continue
		}
		out = append(out, abs)
	}
	return out
}
