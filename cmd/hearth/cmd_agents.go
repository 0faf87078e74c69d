package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

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
			for _, a := range cfg.Agents {
				seen[a.Bundled] = true
				views = append(views, agentView{
					Name: a.Name, Bundled: a.Bundled, Command: a.Command, External: a.External, SHA256: a.SHA256,
					Capacity: a.Capacity, MaxSessions: a.Pool.MaxSessions, IdleTimeout: a.Pool.IdleTimeout.String(),
					WhenFull: string(a.Pool.WhenFull), StartTimeout: a.StartTimeout.String(), Configured: cfg.Path != "",
				})
			}
			// Bundled agents the config does not use can still be added
			// to it with `bundled = "<name>"`.
			for _, n := range plugins.Names() {
				if !seen[n] {
					// Not configured: no pool settings to show.
					views = append(views, agentView{Name: n, Bundled: n, IdleTimeout: "-", WhenFull: "-", StartTimeout: "-"})
				}
			}
			if asJSON {
				return m.printJSON(views)
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tPROGRAM\tCAPACITY\tMAX SESSIONS\tIDLE TIMEOUT")
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
				if v.MaxSessions == 0 {
					fmt.Fprintf(w, "%s\t%s\t-\t-\t- (not configured)\n", v.Name, prog)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", v.Name, prog, capacity, v.MaxSessions, v.IdleTimeout)
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	agents.AddCommand(list, m.agentsTestCommand())
	return agents
}
