package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

func (m *Main) submitCommand() *cobra.Command {
	var (
		hints  sdk.Hints
		name   string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "submit AGENT PROMPT",
		Short: "Run one task on an agent and print its result",
		Long: `Run one task on an agent and print its result, where it ran, and
what the agent learned. Hints tell hearth what the task will touch, so that
it can be placed on a session that already knows those files.`,
		Example: `  hearth submit gotour "summary net/http" --dir net/http --tech go
  hearth submit gotour "symbol strings Builder" --json`,
		Args: exactArgs("AGENT", "PROMPT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := hearth.Task{Agent: args[0], Name: name, Prompt: args[1], Hints: hints}
			print := func(out *hearth.Outcome) error {
				if asJSON {
					return m.printJSON(out)
				}
				m.printOutcome(out)
				return nil
			}
			return m.withService(cmd.Context(), m.loadConfig, func(ctx context.Context, svc hearth.Service, _ *target) error {
				out, err := svc.Submit(ctx, task)
				if err != nil {
					return err
				}
				return print(out)
			})
		},
	}
	f := c.Flags()
	f.StringSliceVar(&hints.Files, "file", nil, "a file the task will touch (repeatable)")
	f.StringSliceVar(&hints.Directories, "dir", nil, "a directory the task will work in (repeatable)")
	f.StringSliceVar(&hints.Technologies, "tech", nil, "a technology the task needs, such as go (repeatable)")
	f.StringVar(&name, "name", "", "a name for the task")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (m *Main) printOutcome(o *hearth.Outcome) {
	w := m.Stdout
	where := o.Session
	if o.Decision.Host != "" {
		where += " (host " + o.Decision.Host + ")"
	}
	fmt.Fprintf(w, "%s ran on %s in %s: %s\n", o.TaskID, where, o.Duration.Round(100_000), o.Decision.Reason)
	for _, c := range o.Decision.Candidates {
		fmt.Fprintf(w, "  candidate %s\n", explain(c, o.Decision.Threshold))
	}
	if len(o.Decision.Attempts) > 1 {
		// A task placed again after a host left, stopped or refused it:
		// where each attempt went and what came of it, so that an
		// operator sees it ran to completion once without --json.
		for i, a := range o.Decision.Attempts {
			fmt.Fprintf(w, "  attempt %d: host %s, %s: %s\n", i+1, a.Host, cmp.Or(a.Session, "a new session"), a.Result)
		}
	}
	if note := strings.TrimPrefix(tokenNote(o.Result.Metrics, o.Result.Cost), "; "); note != "" {
		fmt.Fprintf(w, "  %s\n", note)
	} else if o.Result.Cost > 0 {
		fmt.Fprintf(w, "  cost %s\n", costCell(o.Result.Cost))
	}
	if o.TraceID != "" {
		fmt.Fprintf(w, "  trace %s\n", o.TraceID)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, o.Result.Output)
	a := o.Artifact
	if a.Empty() {
		return
	}
	fmt.Fprintln(w, "\nlearned:")
	for _, group := range []struct {
		label string
		items []string
	}{
		{"decision", a.KeyDecisions}, {"modified", a.ModifiedFiles},
		{"pattern", a.NewPatterns}, {"gotcha", a.PotentialGotchas},
	} {
		for _, it := range group.items {
			fmt.Fprintf(w, "  %-9s %s\n", group.label+":", strings.TrimSpace(it))
		}
	}
}
