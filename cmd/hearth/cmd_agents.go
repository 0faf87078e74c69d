package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/plugins"
)

type agentView struct {
	Name         string   `json:"name"`
	Bundled      string   `json:"bundled,omitempty"`
	Command      []string `json:"command,omitempty"`
	External     string   `json:"external,omitempty"`
	SHA256       string   `json:"sha256,omitempty"`
	Capacity     int      `json:"capacity,omitempty"`
	MaxSessions  int      `json:"max_sessions"`
	IdleTimeout  string   `json:"idle_timeout"`
	WhenFull     string   `json:"when_full"`
	StartTimeout string   `json:"start_timeout"`
	Configured   bool     `json:"configured"`
	// Confinement is whether the agent's plugins run under Landlock on
	// this machine; nil for an external agent (hearth runs no process).
	Confinement *confinementView `json:"confinement,omitempty"`
}

// confinementView is an agent's confinement on this machine.
type confinementView struct {
	// Mode is the config's setting: auto, require or off.
	Mode string `json:"mode"`
	// Confined says whether its plugins run under Landlock here.
	Confined bool `json:"confined"`
	// LandlockABI is the kernel's Landlock ABI, 0 without Landlock.
	LandlockABI int `json:"landlock_abi"`
	// Detail says why, in words.
	Detail string `json:"detail"`
}

// confinementOf is how a's plugins run given st.
func confinementOf(a *config.Agent, st process.LandlockStatus) *confinementView {
	if a.External != "" {
		return nil
	}
	v := &confinementView{Mode: string(a.Confinement), LandlockABI: st.ABI}
	switch {
	case a.Confinement == config.ConfinementOff:
		v.Detail = "no: confinement = \"off\""
	case st.Available():
		v.Confined, v.Detail = true, "yes: "+st.String()
	case a.Confinement == config.ConfinementRequire:
		v.Detail = "will not start: confinement = \"require\" and " + st.String()
	default:
		v.Detail = "NO: " + st.String()
	}
	return v
}

func (m *Main) agentsCommand() *cobra.Command {
	agents := &cobra.Command{Use: "agents", Short: "Work with agents"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the configured agents and the agents bundled with hearth",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			cfg, err := m.loadConfig()
			if err != nil {
				return err
			}
			var views []agentView
			seen := map[string]bool{}
			st := process.Landlock()
			for _, a := range cfg.Agents {
				seen[a.Bundled] = true
				// The pool's values, its defaults applied: what it runs with.
				sp := engine.PoolSettings(a, cfg.Matcher)
				views = append(views, agentView{
					Name: a.Name, Bundled: a.Bundled, Command: a.Command, External: a.External, SHA256: a.SHA256,
					Capacity: a.Capacity, MaxSessions: sp.MaxSessions, IdleTimeout: sp.IdleTimeout.String(),
					WhenFull: string(a.Pool.WhenFull), StartTimeout: a.StartTimeout.String(), Configured: cfg.Path != "",
					Confinement: confinementOf(a, st),
				})
			}
			// Bundled agents the config does not use can still be added
			// to it with `bundled = "<name>"`.
			for _, n := range plugins.Names() {
				if !seen[n] {
					// Not configured: no pool settings to show.
					views = append(views, agentView{Name: n, Bundled: n, IdleTimeout: "-", WhenFull: "-", StartTimeout: "-",
						Confinement: confinementOf(config.DefaultAgent(n), st)})
				}
			}
			if asJSON {
				return m.printJSON(views)
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tPROGRAM\tCAPACITY\tMAX SESSIONS\tIDLE TIMEOUT\tCONFINED")
			for _, v := range views {
				prog := "bundled " + v.Bundled
				switch {
				case v.External != "":
					prog = "external " + v.External + " (reports through hooks)"
				case v.Bundled == "":
					prog = strings.Join(v.Command, " ")
					if v.SHA256 != "" {
						prog += " (sha256 pinned)"
					}
				}
				capacity := "agent's"
				if v.Capacity > 0 {
					capacity = fmt.Sprint(v.Capacity)
				}
				confined := "-"
				if v.Confinement != nil {
					confined = v.Confinement.Detail
				}
				if v.MaxSessions == 0 {
					fmt.Fprintf(w, "%s\t%s\t-\t-\t- (not configured)\t%s\n", v.Name, prog, confined)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", v.Name, prog, capacity, v.MaxSessions, v.IdleTimeout, confined)
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	agents.AddCommand(list, m.agentsTestCommand())
	return agents
}

// pluginsLine is what hearth serve says of its plugins' confinement when
// it starts: "" when it runs no plugins.
func pluginsLine(cfg *config.Config, st process.LandlockStatus) string {
	var confined, off int
	for _, a := range cfg.Agents {
		switch {
		case a.External != "":
		case a.Confinement == config.ConfinementOff:
			off++
		default:
			confined++
		}
	}
	var line string
	switch {
	case confined == 0 && off == 0:
		return ""
	case confined == 0:
		return `unconfined (confinement = "off"); hearth agents list shows each agent`
	case st.Available():
		line = "confined by " + st.String()
	default:
		line = "UNCONFINED: " + st.String()
	}
	if off > 0 {
		line += fmt.Sprintf(`, except %d agent(s) with confinement = "off"`, off)
	}
	return line + "; hearth agents list shows each agent"
}
