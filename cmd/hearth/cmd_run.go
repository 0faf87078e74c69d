package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/host/config"
)

func (m *Main) runCommand() *cobra.Command {
	var (
		asJSON bool
		quiet  bool
	)
	c := &cobra.Command{
		Use:   "run [DIR|FILE] [PIPELINE]",
		Short: "Run a pipeline from a config file",
		Long: `Run a pipeline from a config file: a directory holding hearth.hcl, a
file, or --config. PIPELINE may be left out when the file has one. Each
task is placed on a session by the matcher; every decision is printed with
its scores as the task finishes, and a summary at the end.`,
		Example: `  hearth run examples/code-tour
  hearth run my-pipelines.hcl nightly --json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 2 {
				return usagef("run takes at most a config and a pipeline name, got %d arguments\nRun 'hearth run --help' for usage.", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, pipeline, err := m.runTarget(args)
			if err != nil {
				return err
			}
			return m.withHost(cmd.Context(), cfg, func(ctx context.Context, h *host.Host) error {
				if !asJSON {
					fmt.Fprintf(m.Stdout, "pipeline %s: %d tasks, %d at a time (data in %s)\n", pipeline.Name, len(pipeline.Tasks), pipeline.Parallel, cfg.DataDir)
					if pipeline.Description != "" {
						fmt.Fprintf(m.Stdout, "  %s\n", pipeline.Description)
					}
					fmt.Fprintln(m.Stdout)
				}
				var reports []host.TaskReport
				n := 0
				sum, err := h.RunPipeline(ctx, pipeline, func(r host.TaskReport) {
					n++
					if asJSON {
						reports = append(reports, r)
						return
					}
					m.printReport(n, len(pipeline.Tasks), r, quiet)
				})
				if asJSON {
					if jerr := m.printJSON(struct {
						Tasks   []host.TaskReport    `json:"tasks"`
						Summary host.PipelineSummary `json:"summary"`
					}{reports, sum}); jerr != nil {
						return jerr
					}
				} else {
					m.printSummary(sum)
				}
				if err != nil {
					return fmt.Errorf("%w (%v)", errSilent, err)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: every task's outcome and the summary")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print one line per task, without candidate scores")
	return c
}

// runTarget finds the config and the pipeline that `hearth run args`
// names.
func (m *Main) runTarget(args []string) (*config.Config, *config.Pipeline, error) {
	var name string
	if len(args) > 0 {
		path := args[0]
		fi, err := os.Stat(path)
		switch {
		case err == nil && fi.IsDir():
			path = filepath.Join(path, "hearth.hcl")
			if _, err := os.Stat(path); err != nil {
				return nil, nil, usagef("%s holds no hearth.hcl; give a config file, or a directory that has one", args[0])
			}
			m.configPath = path
		case err == nil:
			m.configPath = path
		case len(args) == 1:
			// Not a path: a pipeline name in --config's file.
			name = args[0]
		default:
			return nil, nil, usagef("%s: %v", args[0], err)
		}
		if len(args) == 2 {
			name = args[1]
		}
	}
	if m.configPath == "" && m.Getenv("HEARTH_CONFIG") == "" {
		return nil, nil, usagef("run needs a config with a pipeline: hearth run DIR|FILE [PIPELINE], or --config")
	}
	cfg, err := m.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, p := range cfg.Pipelines {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	switch {
	case name != "":
		if p := cfg.Pipeline(name); p != nil {
			return cfg, p, nil
		}
		return nil, nil, usagef("%s has no pipeline %q; its pipelines: %s", cfg.Path, name, orNone(names))
	case len(cfg.Pipelines) == 1:
		return cfg, cfg.Pipelines[0], nil
	case len(cfg.Pipelines) == 0:
		return nil, nil, usagef("%s declares no pipeline; add a pipeline block, or use hearth submit for a single task", cfg.Path)
	}
	return nil, nil, usagef("%s has %d pipelines; name one: %s", cfg.Path, len(names), strings.Join(names, ", "))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (m *Main) printReport(n, total int, r host.TaskReport, quiet bool) {
	w := m.Stdout
	prefix := fmt.Sprintf("[%*d/%d] %-28s", len(fmt.Sprint(total)), n, total, r.Name)
	if r.Err != nil {
		fmt.Fprintf(w, "%s FAILED: %s\n", prefix, firstLineOf(r.Error))
		return
	}
	d := r.Outcome.Decision
	fmt.Fprintf(w, "%s %-10s %-18s %6s  %s\n", prefix, d.Action, r.Outcome.Session, r.Outcome.Duration.Round(time.Millisecond), reasonTail(d))
	if quiet {
		return
	}
	for i, c := range d.Candidates {
		if i == 2 {
			break
		}
		fmt.Fprintf(w, "        %s\n", c.Explain())
	}
}

// reasonTail is the reason without the session name the line already has.
func reasonTail(d host.Decision) string {
	r := d.Reason
	if i := strings.Index(r, d.Session+": "); i >= 0 && d.Action == host.ActionSpawned {
		return r[:i] + r[i+len(d.Session)+2:]
	}
	return r
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (m *Main) printSummary(s host.PipelineSummary) {
	w := m.Stdout
	fmt.Fprintf(w, "\n%d tasks in %s: %d succeeded, %d failed, %d skipped\n", s.Tasks, s.Duration.Round(time.Millisecond), s.Succeeded, s.Failed, s.Skipped)
	fmt.Fprintf(w, "placement: %d spawned, %d reused warm, %d rehydrated\n", s.Spawned, s.Reused, s.Rehydrated)
	if s.Succeeded > 0 {
		fmt.Fprintf(w, "task time: %s in all, %s on average\n", s.TaskTime.Round(time.Millisecond), (s.TaskTime / time.Duration(s.Succeeded)).Round(time.Millisecond))
	}
	fmt.Fprintln(w, "see the sessions with: hearth sessions list")
}
