package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/internal/telemetry"
	"github.com/hearth-dev/hearth/internal/text"
)

func (m *Main) runsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "runs",
		Short: "List, show, resume, fork, revisit and cancel runs",
		Long: `Runs are pipelines being run, or that were: their tasks, state, outputs
and checkpoints are in the data directory. A run ID may be shortened to
any prefix no other run shares.`,
	}
	c.AddCommand(m.runsListCommand(), m.runsShowCommand(), m.runsResumeCommand(), m.runsForkCommand(),
		m.runsRevisitCommand(), m.runsCancelCommand(), m.runsDeleteCommand())
	return c
}

func (m *Main) runsListCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List runs, most recently active first",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Through a daemon of a cluster: every host's runs, with
			// their owners.
			if done, err := m.clusterRunsList(cmd.Context(), asJSON); done || err != nil {
				return err
			}
			var (
				runs []hearth.RunInfo
				dir  string
			)
			if err := m.withReader(cmd.Context(), func(ctx context.Context, r hearth.Reader, where string) (err error) {
				dir = where
				runs, err = r.Runs(ctx)
				return err
			}); err != nil {
				return err
			}
			if asJSON {
				if runs == nil {
					runs = []hearth.RunInfo{}
				}
				return m.printJSON(runs)
			}
			if len(runs) == 0 {
				fmt.Fprintf(m.Stdout, "no runs in %s yet; start one with hearth run\n", dir)
				return nil
			}
			w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "RUN\tPIPELINE\tSTATUS\tTASKS\tSTAGE\tCOST\tLAST ACTIVE")
			for _, r := range runs {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", r.ID, r.Pipeline, statusText(r), r.Succeeded, r.Tasks, text.OrDash(r.Stage), costText(r), ago(r.LastActivity))
			}
			return w.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// statusText is a run's status as lists show it.
func statusText(r hearth.RunInfo) string {
	s := string(r.Status)
	switch {
	case r.Interrupted:
		s += " (interrupted: resume it)"
	case r.Abandoned:
		s += " (abandoned)"
	}
	return s
}

func costText(r hearth.RunInfo) string {
	if r.Budget > 0 {
		return fmt.Sprintf("%.2f/%.2f", r.Cost, r.Budget)
	}
	if r.Cost == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.Cost)
}

func (m *Main) runsShowCommand() *cobra.Command {
	var (
		asJSON      bool
		events      int
		checkpoints bool
		outputs     bool
		archived    bool
		state       bool
	)
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its tasks, files, revisions, and on request its outputs, state, checkpoints and events",
		Args:  exactArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				out struct {
					hearth.RunDetail
					Outputs     []hearth.TaskOutput     `json:"outputs,omitempty"`
					Checkpoints []hearth.CheckpointInfo `json:"checkpoints,omitempty"`
					Events      []hearth.Event          `json:"events,omitempty"`
				}
				// deleted is the last event of a run retention deleted:
				// its events remain.
				deleted *hearth.Event
			)
			lastDeleted := func(evs []hearth.Event, eerr error) bool {
				if eerr != nil || len(evs) == 0 || evs[len(evs)-1].Kind != hearth.EventRunDeleted {
					return false
				}
				deleted = &evs[len(evs)-1]
				return true
			}
			err := m.withReader(cmd.Context(), func(ctx context.Context, r hearth.Reader, _ string) error {
				d, err := r.Run(ctx, args[0])
				if err != nil {
					if errors.Is(err, hearth.ErrUnknownRun) && lastDeleted(r.RunEvents(ctx, args[0], 3)) {
						return nil
					}
					return err
				}
				out.RunDetail = d
				if d.Owner != "" {
					// Another host's run: its detail is read from its
					// owner; its outputs, checkpoints and events are not.
					if outputs || archived || checkpoints || events > 0 {
						return fmt.Errorf("run %s is on host %s: its outputs, checkpoints and events are read through host %s, which owns it", d.ID, d.Owner, d.Owner)
					}
					return nil
				}
				if outputs || archived || asJSON {
					if out.Outputs, err = r.RunOutputs(ctx, d.ID); err != nil {
						return err
					}
				}
				if checkpoints || asJSON {
					if out.Checkpoints, err = r.RunCheckpoints(ctx, d.ID); err != nil {
						return err
					}
				}
				if events > 0 {
					if out.Events, err = r.RunEvents(ctx, d.ID, events); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if deleted != nil {
				fmt.Fprintf(m.Stdout, "run %s was deleted %s: %s\n", args[0], deleted.Time.Format(time.DateTime), deleted.Message)
				return nil
			}
			d := out.RunDetail
			if asJSON {
				return m.printJSON(out)
			}
			m.printRun(d)
			if state {
				var b bytes.Buffer
				if json.Indent(&b, d.State, "  ", "  ") == nil {
					fmt.Fprintf(m.Stdout, "\nstate:\n  %s\n", b.String())
				}
			}
			if outputs || archived {
				for _, o := range out.Outputs {
					if !o.Current && !archived {
						continue
					}
					tag := "current"
					if !o.Current {
						tag = "archived"
					}
					fmt.Fprintf(m.Stdout, "\n── %s v%d (%s, %s, %s%s) ──\n%s\n", o.Task, o.Version, tag, o.Session, o.Time.Format(time.DateTime), tokenNote(o.Metrics, o.Cost), strings.TrimRight(o.Output, "\n"))
				}
			}
			if checkpoints {
				fmt.Fprintln(m.Stdout, "\ncheckpoints (fork from one with hearth runs fork RUN --at N):")
				w := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "  N\tTIME\tSTATUS\tSTAGE\tDONE\tCOST\tLABEL")
				for _, c := range out.Checkpoints {
					fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%d/%d\t%.2f\t%s\n", c.Seq, c.Time.Format("15:04:05.000"), c.Status, text.OrDash(c.Stage), c.Succeeded, d.Tasks, c.Cost, c.Label)
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
			if events > 0 {
				fmt.Fprintln(m.Stdout, "\nrecent events:")
				for _, e := range out.Events {
					fmt.Fprintf(m.Stdout, "  %s  %-15s %s\n", e.Time.Format("15:04:05.000"), e.Kind, text.FirstLine(e.Message))
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON, with outputs and checkpoints")
	c.Flags().IntVar(&events, "events", 0, "show the last N events")
	c.Flags().BoolVar(&checkpoints, "checkpoints", false, "show the checkpoints")
	c.Flags().BoolVar(&outputs, "outputs", false, "show each task's current output")
	c.Flags().BoolVar(&archived, "all-versions", false, "show every output version, archived ones too")
	c.Flags().BoolVar(&state, "state", false, "show the state document")
	return c
}

func (m *Main) printRun(d hearth.RunDetail) {
	w := m.Stdout
	fmt.Fprintf(w, "run %s (pipeline %s", d.ID, d.Pipeline)
	if d.Config != "" {
		fmt.Fprintf(w, ", from %s", d.Config)
	}
	fmt.Fprint(w, ")")
	if d.Owner != "" {
		fmt.Fprintf(w, " on host %s", d.Owner)
	}
	fmt.Fprintln(w)
	status := statusText(d.RunInfo)
	if d.Reason != "" && !d.Interrupted {
		// An interrupted run's reason says its host stopped without
		// recording the run's end: statusText says what to do.
		status += ": " + d.Reason
	}
	fmt.Fprintf(w, "  status      %s\n", status)
	if d.Stage != "" {
		fmt.Fprintf(w, "  stage       %s\n", d.Stage)
	}
	fmt.Fprintf(w, "  progress    %d/%d tasks succeeded (%.0f%%)", d.Succeeded, d.Tasks, d.Progress*100)
	for g, n := range d.GateLoops {
		fmt.Fprintf(w, "; gate %s sent work back %d time(s)", g, n)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  cost        %s\n", costText(d.RunInfo))
	fmt.Fprintf(w, "  created     %s (%s)\n", d.Created.Format(time.DateTime), ago(d.Created))
	if !d.Finished.IsZero() {
		fmt.Fprintf(w, "  finished    %s\n", d.Finished.Format(time.DateTime))
	}
	fmt.Fprintf(w, "  checkpoint  %d\n", d.Checkpoint)
	if d.TraceID != "" {
		fmt.Fprintf(w, "  trace       %s%s\n", d.TraceID, prefixed(" ", m.traceLink(d.TraceID)))
	}
	if d.ForkedFrom != "" {
		fmt.Fprintf(w, "  forked from %s at checkpoint %d\n", d.ForkedFrom, d.ForkedAt)
	}
	for i, f := range d.Files {
		label := "files"
		if i > 0 {
			label = ""
		}
		done := ""
		if c := d.Chunks[f.Name]; len(c) > 0 {
			done = fmt.Sprintf(", %d chunk(s) done", len(c))
		}
		fmt.Fprintf(w, "  %-11s %s (%d bytes, sha256 %s%s)\n", label, f.Name, f.Size, f.SHA256[:12], done)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tAGENT\tSTATUS\tATTEMPT\tOUTPUT\tCOST\tSESSION\tNOTE")
	for _, t := range d.TaskList {
		version := "-"
		if t.Version > 0 {
			version = fmt.Sprintf("v%d", t.Version)
		}
		attempt := fmt.Sprint(t.Attempt)
		if t.Round > 1 {
			attempt += fmt.Sprintf(" (round %d)", t.Round)
		}
		note := taskNote(t)
		if t.TraceID != "" && t.TraceID != d.TraceID {
			// Its latest attempt ran in an earlier execution of the run.
			note = strings.TrimPrefix(note+"; trace "+t.TraceID, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Agent, t.Status, attempt, version, costCell(t.Cost), text.OrDash(t.Session), note)
	}
	_ = tw.Flush()
	if len(d.Revisions) > 0 {
		fmt.Fprintln(w, "\nrevisions:")
		for _, r := range d.Revisions {
			fmt.Fprintf(w, "  %s  %s (%s impact)%s; archived: %s; needs review: %s\n", r.Time.Format(time.DateTime), r.Task, r.Impact,
				prefixed(": ", r.Reason), text.OrNone(r.Archived), text.OrNone(r.Review))
		}
	}
}

// costCell prints a task's cost: two decimals, or four for the cents a
// model call costs, which two would show as 0.00.
func costCell(c float64) string {
	if c > 0 && c < 0.01 {
		return fmt.Sprintf("%.4f", c)
	}
	return fmt.Sprintf("%.2f", c)
}

// tokenNote is what a model agent's task spent (plugins/model's metrics),
// or "" for a task that reports no tokens.
func tokenNote(metrics map[string]float64, cost float64) string {
	in, ok := metrics["input_tokens"]
	if !ok {
		return ""
	}
	return fmt.Sprintf("; tokens: %.0f in, %.0f cached, %.0f out; %.0f tool calls; cost %s",
		in, metrics["cached_input_tokens"], metrics["output_tokens"], metrics["tool_calls"], costCell(cost))
}

func taskNote(t hearth.RunTaskInfo) string {
	var notes []string
	if t.NeedsReview {
		notes = append(notes, "needs review")
	}
	if t.Error != "" {
		notes = append(notes, text.FirstLine(t.Error))
	} else if t.Reason != "" && t.Status != hearth.TaskSucceeded {
		notes = append(notes, t.Reason)
	}
	return strings.Join(notes, "; ")
}

// traceLink is where the config's telemetry block (trace_url) shows the
// trace id, in parentheses, or "" when there is no config or it names no
// trace backend.
func (m *Main) traceLink(id string) string {
	if m.configFile() == "" {
		return ""
	}
	cfg, err := m.loadConfig()
	if err != nil || cfg.Telemetry.TraceURL == "" {
		return ""
	}
	return "(" + telemetry.TraceLink(cfg.Telemetry.TraceURL, id) + ")"
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// runConfig is the config of the engine that acts on an existing run
// when no daemon serves the data directory: --config or HEARTH_CONFIG
// when given, else the config file the run was started from when it
// still exists (its agents are the run's), on the data directory the run
// is in.
func (m *Main) runConfig(id string) func() (*config.Config, error) {
	return func() (*config.Config, error) {
		// The run is read to find its config, whose store block (its
		// min_free_space) the write open must use: read first, and
		// open to write (which replays a crash's writes, as the
		// engine would) only for a directory that needs it.
		st, err := m.openStore(store.Read)
		if errors.Is(err, store.ErrNeedsRecovery) {
			st, err = m.openStore(store.Write)
		}
		if err != nil {
			return nil, err
		}
		dir := st.Dir()
		d, err := st.Run(context.Background(), id)
		_ = st.Close()
		if err != nil {
			return nil, err
		}
		if m.configPath == "" && m.Getenv("HEARTH_CONFIG") == "" && d.Config != "" {
			if _, err := os.Stat(d.Config); err == nil {
				m.configPath = d.Config
			}
		}
		cfg, err := m.loadConfig()
		if err != nil {
			return nil, err
		}
		cfg.DataDir = dir
		return cfg, nil
	}
}

// recordsConfig is the config of an engine that only changes runs'
// records (cancel, delete): no agents, on the data directory.
func (m *Main) recordsConfig() (*config.Config, error) {
	dir, from, err := m.dataDirPath()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, usagef("no data directory at %s (%s): run some work first (hearth run, hearth submit), or point --data-dir at one", dir, from)
	}
	cfg := config.Default(nil)
	cfg.DataDir = dir
	return cfg, nil
}

func (m *Main) runsResumeCommand() *cobra.Command {
	var (
		asJSON, quiet, repair bool
		in                    runInputs
	)
	c := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a paused, failed or interrupted run from its newest checkpoint",
		Long: `Continue a run from where its records stand: its newest checkpoint, plus
the state written and the chunks marked done since. Tasks that succeeded
are not run again; tasks that were running, failed or skipped run again,
with their attempts renewed.

The run's records are checked first: outputs and files they refer to
must exist, and statuses must agree. Problems are listed and the run is
not resumed; --repair runs the affected tasks again instead.

The run uses the config file it was started from, unless --config names
another.`,
		Example: `  hearth runs resume podcast-20261122
  hearth runs resume podcast-20261122 --budget 12
  hearth runs resume plan-20261122 --set user_inputs=@inputs.json`,
		Args: exactArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			state, err := in.state(m)
			if err != nil {
				return err
			}
			opts := hearth.ResumeOptions{Budget: in.budget, Repair: repair, State: state}
			return m.withService(cmd.Context(), m.runConfig(args[0]), func(ctx context.Context, svc hearth.Service, t *target) error {
				if d, err := svc.Run(ctx, args[0]); err == nil && d.Abandoned && !asJSON {
					fmt.Fprintf(m.Stdout, "run %s was flagged abandoned (idle since %s); resuming it clears the flag\n", d.ID, d.LastActivity.Format(time.DateTime))
				}
				w, err := svc.ResumeRun(ctx, args[0], opts)
				if err != nil {
					return err
				}
				if !asJSON {
					fmt.Fprintf(m.Stdout, "resuming run %s%s\n\n", w.ID(), t.inDaemon(" in the daemon"))
				}
				return m.followRun(ctx, svc, t, w, quiet, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it stops")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "one line per task, without candidate scores")
	c.Flags().BoolVar(&repair, "repair", false, "run again the tasks whose records validation finds inconsistent")
	in.flags(c, false)
	return c
}

func (m *Main) runsForkCommand() *cobra.Command {
	var (
		asJSON, quiet bool
		at            uint64
		in            runInputs
	)
	c := &cobra.Command{
		Use:   "fork RUN --at CHECKPOINT",
		Short: "Start a new run from a checkpoint of a run; the original is not touched",
		Long: `Start a new run from checkpoint N of a run: its state, outputs and files
as they were then. Tasks that had not succeeded by then run in the new
run. --set and --state change the state the branch starts from: a new
direction for the story. List the checkpoints with
'hearth runs show RUN --checkpoints'.`,
		Example: `  hearth runs fork story-20261122 --at 3 --set direction="the keeper lies"`,
		Args:    exactArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if at == 0 {
				return usagef("fork needs --at CHECKPOINT; list them with hearth runs show %s --checkpoints", args[0])
			}
			state, err := in.state(m)
			if err != nil {
				return err
			}
			return m.withService(cmd.Context(), m.runConfig(args[0]), func(ctx context.Context, svc hearth.Service, t *target) error {
				w, err := svc.ForkRun(ctx, args[0], at, hearth.ForkOptions{State: state, Budget: in.budget})
				if err != nil {
					return err
				}
				if !asJSON {
					fmt.Fprintf(m.Stdout, "run %s, forked from %s at checkpoint %d%s\n\n", w.ID(), args[0], at, t.inDaemon(", in the daemon"))
				}
				return m.followRun(ctx, svc, t, w, quiet, asJSON)
			})
		},
	}
	c.Flags().Uint64Var(&at, "at", 0, "the checkpoint to start from")
	c.Flags().BoolVar(&asJSON, "json", false, "print the new run as JSON when it stops")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "one line per task, without candidate scores")
	in.flags(c, false)
	return c
}

func (m *Main) runsRevisitCommand() *cobra.Command {
	var (
		asJSON, quiet bool
		impact        string
		reason        string
		affects       []string
	)
	c := &cobra.Command{
		Use:   "revisit RUN TASK --impact minor|moderate|major",
		Short: "Run a task of a stopped run again and treat what came after it by impact",
		Long: `Run TASK of a paused, failed or completed run again, with --reason as
its feedback, and treat the tasks downstream of it by the impact of the
change:

  minor     they keep their outputs, flagged "needs review"
  moderate  the affected ones (--affects, by default TASK's direct
            dependents) are archived and run again; the rest are flagged
  major     everything downstream is archived and runs again

Archived outputs keep their versions (v1, v2, ...): see them with
'hearth runs show RUN --all-versions'. The revision is recorded in the
run's history.`,
		Example: `  hearth runs revisit essay-20261122 thesis --impact major --reason "make it an explainer"`,
		Args:    exactArgs("RUN", "TASK"),
		RunE: func(cmd *cobra.Command, args []string) error {
			imp, err := hearth.ParseImpact(impact)
			if err != nil {
				return usagef("--impact: %v", err)
			}
			return m.withService(cmd.Context(), m.runConfig(args[0]), func(ctx context.Context, svc hearth.Service, t *target) error {
				w, err := svc.RevisitRun(ctx, args[0], args[1], imp, hearth.RevisitOptions{Reason: reason, Affects: affects})
				if err != nil {
					return err
				}
				if !asJSON {
					fmt.Fprintf(m.Stdout, "revisiting %s of run %s (%s impact)%s\n\n", args[1], w.ID(), imp, t.inDaemon(" in the daemon"))
				}
				return m.followRun(ctx, svc, t, w, quiet, asJSON)
			})
		},
	}
	c.Flags().StringVar(&impact, "impact", "", "minor, moderate or major")
	c.Flags().StringVar(&reason, "reason", "", "why the task is revisited; it reaches the task as feedback")
	c.Flags().StringSliceVar(&affects, "affects", nil, "the downstream tasks a moderate revisit runs again (default: TASK's direct dependents)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it stops")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "one line per task, without candidate scores")
	return c
}

func (m *Main) runsCancelCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run for good: its unfinished tasks are skipped (it can still be forked)",
		Args:  exactArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var info hearth.RunInfo
			err := m.withService(cmd.Context(), m.recordsConfig, func(ctx context.Context, svc hearth.Service, _ *target) (err error) {
				info, err = svc.CancelRun(ctx, args[0])
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return m.printJSON(info)
			}
			fmt.Fprintf(m.Stdout, "run %s cancelled\n", info.ID)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the cancelled run as JSON")
	return c
}

func (m *Main) runsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete RUN",
		Short: "Delete a stopped run with its outputs, checkpoints and files; its events stay",
		Args:  exactArgs("RUN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id string
			err := m.withService(cmd.Context(), m.recordsConfig, func(ctx context.Context, svc hearth.Service, _ *target) (err error) {
				id, err = svc.DeleteRun(ctx, args[0])
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(m.Stdout, "run %s deleted; its events remain (hearth runs show %s)\n", id, id)
			return nil
		},
	}
}
