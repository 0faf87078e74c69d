package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

func (m *Main) placeCommand() *cobra.Command {
	var (
		hints  sdk.Hints
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "place AGENT",
		Short: "Say which session a task would run on, and why, without running anything",
		Long: `Ask the matcher where a task for AGENT with these hints would go now:
which session, with every candidate's factor scores, and what hearth
would do (reuse, rehydrate, spawn). For an external agent (Claude Code),
the answer names the session to resume and the command that resumes it,
in its workspace; relative --dir and --file are read against the current
directory, as Claude Code reports absolute paths.
Through the daemon when one serves the data directory.`,
		Example: `  hearth place gotour --dir net/http --tech go
  hearth place claude-code --file /src/app/handlers/user.go --json`,
		Args: exactArgs("AGENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			hints := m.externalHints(args[0], hints)
			var d hearth.Decision
			if err := m.withService(cmd.Context(), m.loadConfig, func(ctx context.Context, svc hearth.Service, _ *target) (err error) {
				d, err = svc.Place(ctx, args[0], hints)
				return err
			}); err != nil {
				return err
			}
			if asJSON {
				return m.printJSON(d)
			}
			m.printPlacement(d)
			return nil
		},
	}
	f := c.Flags()
	f.StringSliceVar(&hints.Files, "file", nil, "a file the task will touch (repeatable)")
	f.StringSliceVar(&hints.Directories, "dir", nil, "a directory the task will work in (repeatable)")
	f.StringSliceVar(&hints.Technologies, "tech", nil, "a technology the task needs, such as go (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// externalHints makes the relative paths of hints absolute, against the
// current directory, for an external agent that keeps its sessions'
// paths absolute (no workspace): Claude Code reports absolute paths, and
// "src/cart" would otherwise match none of them. Other agents' hints are
// relative to their workspace, as given.
func (m *Main) externalHints(agent string, h sdk.Hints) sdk.Hints {
	cfg, err := m.loadConfig()
	if err != nil {
		return h
	}
	a := cfg.Agent(agent)
	if a == nil || a.External == "" || a.Workspace != "" {
		return h
	}
	cwd, err := os.Getwd()
	if err != nil {
		return h
	}
	abs := func(ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p
			if !filepath.IsAbs(p) {
				out[i] = filepath.Join(cwd, p)
			}
		}
		return out
	}
	h.Files, h.Directories = abs(h.Files), abs(h.Directories)
	return h
}

func (m *Main) printPlacement(d hearth.Decision) {
	w := m.Stdout
	fmt.Fprintln(w, d.Reason)
	if d.Resume != "" {
		if d.Workspace != "" {
			fmt.Fprintf(w, "resume it with: cd %s && %s\n", text.ShellQuote(d.Workspace), d.Resume)
		} else {
			fmt.Fprintf(w, "resume it with: %s\n", d.Resume)
		}
	}
	for _, c := range d.Candidates {
		fmt.Fprintf(w, "  candidate %s\n", explain(c, d.Threshold))
	}
}
