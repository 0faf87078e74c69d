package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/text"
)

func (m *Main) hostsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "hosts",
		Short: "The hosts of the daemon's cluster",
		Long: `Several 'hearth serve' hosts that share an etcd (the config's cluster
block) place each task on the session, on whichever host, that already
holds its context. See the README's cluster section.`,
	}
	c.AddCommand(m.hostsListCommand(), m.hostsDrainCommand(true), m.hostsDrainCommand(false))
	return c
}

// hostsDrainCommand is `hosts drain HOST` (drain true) or `hosts undrain
// HOST`.
func (m *Main) hostsDrainCommand(drain bool) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "drain HOST",
		Short: "Drain a host for maintenance: the others place no new work on it",
		Long: `Mark a host of the cluster drained for maintenance, through the daemon
serving the data directory (any host of the cluster): the other hosts
place no new task on its sessions and spawn nothing there, and it refuses
forwarded tasks (they go elsewhere); what it runs finishes. The mark is
kept in etcd and outlives the host's restarts until 'hearth hosts
undrain HOST'. 'hearth hosts list' shows the host as draining.`,
		Example: `  hearth hosts drain b
  hearth hosts drain b --json`,
	}
	if !drain {
		c.Use, c.Short = "undrain HOST", "Take a host's drain mark away: it takes new work again"
		c.Long = `Take the drain mark of a host of the cluster away ('hearth hosts drain'):
the other hosts place tasks on it again.`
		c.Example = `  hearth hosts undrain b`
	}
	c.Args = exactArgs("HOST")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := m.daemon(cmd.Context())
		if err != nil {
			return err
		}
		if cl == nil {
			return usagef("hosts %s asks the daemon: start one with hearth serve (its config needs a cluster block)", strings.Fields(c.Use)[0])
		}
		defer cl.Close()
		h, err := cl.DrainHost(cmd.Context(), args[0], drain)
		if err != nil {
			return err
		}
		if asJSON {
			return m.printJSON(h)
		}
		if drain {
			fmt.Fprintf(m.Stdout, "host %s drained: the others place no new work on it (hearth hosts undrain %s takes it back)\n", h.ID, h.ID)
		} else {
			fmt.Fprintf(m.Stdout, "host %s undrained: it takes new work again\n", h.ID)
		}
		return nil
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (m *Main) hostsListCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the cluster's hosts with their sessions, load, address and config hash",
		Long: `List the hosts of the cluster the daemon serving the data directory
belongs to, as it sees them: each host's address, its sessions, its
running tasks against its slots, its state, and a hash of its config.

STATE is "self" (the host that answers), "up", "draining: maintenance"
(hearth hosts drain), "shutting down", or "unhealthy": the answering host
cannot work with it (its peer handshake fails, e.g. a certificate from
another CA, or it does not answer), so it is left out of placement until
it answers again; why is said below the table. When etcd does not answer
the host, the listing says so: the hosts are then as it last saw them.
Hosts whose config hashes differ run different guards or agents: a note
says so.`,
		Example: `  hearth hosts list
  hearth hosts list --json`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := m.daemon(cmd.Context())
			if err != nil {
				return err
			}
			if c == nil {
				return usagef("hosts list asks the daemon: start one with hearth serve (its config needs a cluster block)")
			}
			defer c.Close()
			hs, err := c.Members(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return m.printJSON(listedMembers(hs))
			}
			if !hs.Clustered {
				fmt.Fprintf(m.Stdout, "the daemon on %s is not in a cluster: add a cluster block to its config (see the README's cluster section)\n", c.Target())
				return nil
			}
			if hs.EtcdErr != "" {
				// Not a smaller cluster: one this host cannot see now.
				fmt.Fprintf(m.Stdout, "etcd does not answer host %s, which serves locally meanwhile: %s\nthe hosts as it last saw them (may be stale: hosts may have left or joined since):\n", hs.Self, hs.EtcdErr)
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "HOST\tSTATE\tADDRESS\tSESSIONS\tLOAD\tAGENTS\tCONFIG\tSTARTED")
			hashes := map[string][]string{}
			var unhealthy []string
			for _, h := range hs.Hosts {
				state := h.State()
				if h.Unhealthy != "" {
					// The reason is long (a TLS error); it goes below the table.
					state = "unhealthy"
					unhealthy = append(unhealthy, fmt.Sprintf("host %s at %s is unhealthy: %s", h.ID, h.Addr, h.Unhealthy))
				}
				load, slots := 0, 0
				var agents []string
				for _, a := range h.Agents {
					load, slots = load+a.Load, slots+a.Capacity
					agents = append(agents, fmt.Sprintf("%s %d/%d", a.Name, a.Live, a.MaxSessions))
				}
				hashes[h.ConfigHash] = append(hashes[h.ConfigHash], h.ID)
				id := h.ID
				if h.Self {
					id += " *"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", id, state, h.Addr, h.Sessions, load, slots, strings.Join(agents, ", "), h.ConfigHash, ago(h.Started))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(hashes) > 1 {
				var groups []string
				for hash, ids := range hashes {
					groups = append(groups, hash+": "+strings.Join(ids, ", "))
				}
				slices.Sort(groups)
				fmt.Fprintf(m.Stdout, "note: the hosts' configs differ (%s); guards and agents are each host's own\n", strings.Join(groups, "; "))
			}
			for _, u := range unhealthy {
				fmt.Fprintf(m.Stdout, "%s; it is left out of placement until it answers again\n", u)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// listedMember is a member as hosts list --json prints it: its state
// (hearth.Member.State) beside its fields, for scripts that want one.
type listedMember struct {
	hearth.Member
	State string `json:"state"`
}

// listedMembers is hs as hosts list --json prints it.
func listedMembers(hs hearth.Members) any {
	out := struct {
		hearth.Members
		Hosts []listedMember `json:"hosts"`
	}{Members: hs, Hosts: []listedMember{}}
	for _, h := range hs.Hosts {
		out.Hosts = append(out.Hosts, listedMember{Member: h, State: h.State()})
	}
	return out
}

// clusterRunsList is `runs list` through a daemon of a cluster: every
// host's runs, with their owners. done is false when no daemon serves
// the data directory or it is not in a cluster: the local listing
// applies.
func (m *Main) clusterRunsList(ctx context.Context, asJSON bool) (done bool, err error) {
	c, err := m.daemon(ctx)
	if err != nil || c == nil {
		return false, err
	}
	defer c.Close()
	cr, err := c.ClusterRuns(ctx)
	if err != nil || !cr.Clustered {
		return err != nil, err
	}
	self, hosts := cr.Self, cr.Hosts
	if asJSON {
		type ownedRun struct {
			hearth.RunInfo
			Owner      string            `json:"owner"`
			OwnerState hearth.OwnerState `json:"owner_state"`
		}
		out := []ownedRun{}
		for _, hr := range hosts {
			for _, r := range hr.Runs {
				out = append(out, ownedRun{RunInfo: r, Owner: hr.Host, OwnerState: hr.State})
			}
		}
		return true, m.printJSON(out)
	}
	w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tPIPELINE\tSTATUS\tTASKS\tSTAGE\tCOST\tLAST ACTIVE\tOWNER")
	n := 0
	for _, hr := range hosts {
		owner := hr.Host
		switch {
		case hr.State == hearth.OwnerGone:
			// Its runs are in its store: when it is back, they are there
			// to resume (a host that crashed pauses what it ran).
			owner += " (gone: as listed " + ago(hr.Listed) + "; back with its host)"
		case hr.State == hearth.OwnerUnreachable:
			owner += " (unreachable: as listed " + ago(hr.Listed) + ")"
		case hr.Host == self:
			owner += " *"
		}
		for _, r := range hr.Runs {
			n++
			fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", r.ID, r.Pipeline, statusText(r), r.Succeeded, r.Tasks, text.OrDash(r.Stage), costText(r), ago(r.LastActivity), owner)
		}
		if len(hr.Runs) == 0 && hr.State == hearth.OwnerUnreachable {
			fmt.Fprintf(m.Stderr, "hearth: host %s did not answer: %s\n", hr.Host, hr.Error)
		}
	}
	if n == 0 {
		fmt.Fprintf(m.Stdout, "no runs on any of the cluster's %d hosts yet; start one with hearth run\n", len(hosts))
		return true, nil
	}
	return true, w.Flush()
}
