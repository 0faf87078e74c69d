package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// dashboardLink is what `hearth dashboard --json` prints.
type dashboardLink struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

func (m *Main) dashboardCommand() *cobra.Command {
	var asJSON, revoke bool
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Print a one-time link that signs a browser in to the daemon's dashboard",
		Long: `Ask the daemon serving the data directory (over its unix socket, which
only its owner can use) for a link into its dashboard. The link signs
the browser that opens it in, once: it works for 15 minutes and then
never again, and the browser keeps a cookie for a day (or until the
daemon restarts). Nobody pastes the token anywhere, and it never
appears in an address.

With --revoke, sign every browser out instead, and void the links not
yet used: for a link or a cookie that may have leaked.`,
		Example: `  hearth dashboard
  hearth --data-dir ~/.hearth dashboard --json
  hearth dashboard --revoke`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return m.dashboard(cmd.Context(), asJSON, revoke) },
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: url, expires")
	c.Flags().BoolVar(&revoke, "revoke", false, "sign every browser out, and void the links not yet used")
	return c
}

func (m *Main) dashboard(ctx context.Context, asJSON, revoke bool) error {
	c, err := m.daemon(ctx)
	if err != nil {
		return err
	}
	if c == nil {
		sock, _ := m.socketPath()
		return fmt.Errorf("no daemon serves this data directory (no answer on %s); start one with %s serve", sock, m.hearth())
	}
	defer c.Close()
	if revoke {
		if err := c.DashboardRevoke(ctx); err != nil {
			return err
		}
		fmt.Fprintln(m.Stderr, "signed every browser out of the dashboard; links made before are void")
		return nil
	}
	url, exp, err := c.DashboardLogin(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return m.printJSON(dashboardLink{URL: url, Expires: exp})
	}
	fmt.Fprintln(m.Stdout, url)
	fmt.Fprintf(m.Stderr, "open it in your browser: it signs you in once, until %s\n", exp.Format("15:04:05"))
	return nil
}
