package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/matcher"
)

func (m *Main) sessionsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "sessions",
		Short: "Show the sessions in the data directory",
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List sessions, most recently active first",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var (
				sessions []hearth.SessionInfo
				dir      string
			)
			if err := m.withReader(cmd.Context(), func(ctx context.Context, r hearth.Reader, where string) (err error) {
				dir = where
				sessions, err = r.Sessions(ctx)
				return err
			}); err != nil {
				return err
			}
			if listJSON {
				if sessions == nil {
					sessions = []hearth.SessionInfo{}
				}
				return m.printJSON(sessions)
			}
			if len(sessions) == 0 {
				fmt.Fprintf(m.Stdout, "no sessions in %s yet\n", dir)
				return nil
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SESSION\tAGENT\tSTATUS\tTASKS\tTOOL USES\tFILES\tLAST ACTIVE\tWORKED IN")
			for _, s := range sessions {
				status, tasks := s.Status, fmt.Sprint(s.Tasks)
				switch {
				case s.External != "":
					// Its own program resumes it; hearth runs no task on it.
					tasks = "-"
				case s.Status == "dormant" && s.HasState:
					status += "*"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.ID, s.Agent, status, tasks, s.ToolUses, len(s.Files), ago(s.LastActivity), topDirs(s.Directories, 3))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if slices.ContainsFunc(sessions, func(s hearth.SessionInfo) bool { return s.Status == "dormant" && s.HasState && s.External == "" }) {
				fmt.Fprintln(m.Stdout, "* dormant with saved state: a matching task rehydrates it")
			}
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	var (
		showJSON bool
		limit    int
	)
	show := &cobra.Command{
		Use:   "show SESSION",
		Short: "Show a session: its fingerprint, recent events, and the decisions that involved it",
		Args:  exactArgs("SESSION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d *hearth.SessionDetail
			if err := m.withReader(cmd.Context(), func(ctx context.Context, r hearth.Reader, _ string) (err error) {
				d, err = r.Session(ctx, args[0], limit)
				return err
			}); err != nil {
				return err
			}
			if showJSON {
				return m.printJSON(d)
			}
			m.printSession(d)
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	show.Flags().IntVar(&limit, "limit", 20, "how many recent events and decisions to show")
	c.AddCommand(list, show)
	return c
}

// openStore opens the data directory without a daemon, in the mode the
// command says: store.Read for a command that only reads, which changes
// nothing in the directory and refuses one a crash left with writes to
// replay (store.ErrNeedsRecovery, naming hearth recover); store.Write
// for one that writes, which replays them. Either refuses a directory
// that does not add up (store.DirError), changing nothing.
func (m *Main) openStore(mode store.Mode) (*store.Store, error) {
	dir, from, err := m.dataDirPath()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, usagef("no data directory at %s (%s): run some work first (hearth run, hearth submit), or point --data-dir at one", dir, from)
	}
	return store.Open(dir, mode, store.Options{Logger: m.logger().Named("store"), GCInterval: -1, Command: "hearth " + m.commandName})
}

func (m *Main) printSession(d *hearth.SessionDetail) {
	w := m.Stdout
	fmt.Fprintf(w, "session %s (agent %s%s)\n", d.ID, d.Agent, prefixed(" ", d.AgentVersion))
	status := d.Status
	if d.Reason != "" {
		status += ": " + d.Reason
	}
	fmt.Fprintf(w, "  status      %s\n", status)
	fmt.Fprintf(w, "  created     %s\n", d.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "  last active %s (%s)\n", d.LastActivity.Format(time.RFC3339), ago(d.LastActivity))
	if d.External != "" {
		fmt.Fprintf(w, "  external    a %s session (it reports through hooks; hearth did not start it), %d tool uses\n", d.External, d.ToolUses)
		if d.Workspace != "" {
			fmt.Fprintf(w, "  workspace   %s\n", d.Workspace)
		}
		if d.Resume != "" {
			fmt.Fprintf(w, "  resume      cd %s && %s\n", text.ShellQuote(cmp.Or(d.Workspace, ".")), d.Resume)
		}
	} else {
		fmt.Fprintf(w, "  tasks       %d (%d failed), %d tool uses, capacity %d\n", d.Tasks, d.TasksFailed, d.ToolUses, d.Capacity)
		if d.Unchecked > 0 {
			fmt.Fprintf(w, "  unchecked   %d guarded tool uses reported without asking the host first (tool.unchecked events)\n", d.Unchecked)
		}
		state := "no saved state: it will not be rehydrated"
		if d.HasState {
			state = "saved: a matching task rehydrates it"
		}
		fmt.Fprintf(w, "  state       %s\n", state)
	}
	fmt.Fprintf(w, "\nfingerprint\n")
	fmt.Fprintf(w, "  technologies %s\n", strings.Join(d.Technologies, ", "))
	fmt.Fprintf(w, "  directories  %d: %s\n", len(d.Directories), topDirs(d.Directories, 8))
	fmt.Fprintf(w, "  files        %d, most recent: %s\n", len(d.Files), topDirs(d.Files, 5))
	if len(d.Decisions) > 0 {
		fmt.Fprintf(w, "\ndecisions that involved it, newest first\n")
		for _, dec := range d.Decisions {
			mine := ""
			for _, c := range dec.Candidates {
				if c.Session == d.ID {
					score, _ := matcher.FormatScore(c.Total, dec.Threshold)
					mine = " (it scored " + score + ")"
				}
			}
			task := dec.Task
			if dec.TaskName != "" {
				task = dec.TaskName
			}
			fmt.Fprintf(w, "  %s: %s%s\n", task, dec.Reason, mine)
		}
	}
	if len(d.Events) > 0 {
		fmt.Fprintf(w, "\nrecent events\n")
		for _, e := range d.Events {
			line := e.Message
			if e.Kind == hearth.EventGuardFired {
				line = fmt.Sprintf("%s %s: %s", e.Guard, e.Action, e.Message)
			}
			if e.ToolUse != nil {
				line = strings.TrimSpace(e.ToolUse.Tool + " " + strings.Join(e.ToolUse.Paths, " "))
				if len(line) > 100 {
					line = line[:97] + "..."
				}
			}
			if e.Kind == hearth.EventTaskFailed && e.Err != "" {
				// "task-... failed" alone sends the operator to --json to
				// learn why (a plugin that stopped itself, a guard, the
				// agent's own error).
				line += ": " + e.Err
			}
			fmt.Fprintf(w, "  %s  %-18s %s\n", e.Time.Format("15:04:05.000"), e.Kind, line)
		}
	}
}

func topDirs(dirs []string, n int) string {
	if len(dirs) <= n {
		return strings.Join(dirs, ", ")
	}
	return strings.Join(dirs[:n], ", ") + fmt.Sprintf(", and %d more", len(dirs)-n)
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
