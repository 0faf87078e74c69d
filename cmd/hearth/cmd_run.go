package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/text"
)

func (m *Main) runCommand() *cobra.Command {
	var (
		asJSON bool
		quiet  bool
		in     runInputs
	)
	c := &cobra.Command{
		Use:   "run [DIR|FILE] [PIPELINE]",
		Short: "Run a pipeline from a config file",
		Long: `Run a pipeline from a config file: a directory holding hearth.hcl, a
file, or --config. PIPELINE may be left out when the file has one.

The run is recorded in the data directory: each task's outcome and a
checkpoint after it. Each task is placed on a session by the matcher. On a
terminal, the run's progress is drawn live (every task's state, a progress
bar with percentage and ETA, the cost so far); piped, a line is printed as
each task finishes, with the placement decision and its scores.

Interrupted (Ctrl-C), the run is paused once the tasks in flight finish or
their grace period ends; continue it with 'hearth runs resume ID'.`,
		Example: `  hearth run examples/code-tour
  hearth run examples/podcast --set 'episode={"number":2,"topic":"free will"}'
  hearth run my-pipelines.hcl nightly --file notes.md --budget 20 --json`,
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
			state, err := in.state(m)
			if err != nil {
				return err
			}
			local := func() (*config.Config, error) { return cfg, nil }
			return m.withService(cmd.Context(), local, func(ctx context.Context, svc hearth.Service, t *target) error {
				w, err := svc.StartRun(ctx, hearth.RunSpec{PipelineName: pipeline.Name,
					RunOptions: hearth.RunOptions{State: state, Files: in.files, Budget: in.budget, Config: cfg.Path}})
				if errors.Is(err, hearth.ErrUnknownAgent) && t.daemon {
					return fmt.Errorf("%w\nthe daemon on %s runs pipelines with its own agents: start it with --config %s to run this one", err, t.where, cfg.Path)
				}
				if err != nil {
					return err
				}
				if !asJSON {
					where := " (data in " + t.where + ")"
					if t.daemon {
						where = " in the daemon (" + t.where + ")"
					}
					fmt.Fprintf(m.Stdout, "pipeline %s: %d tasks, %d at a time%s\n", pipeline.Name, len(pipeline.Tasks), pipeline.Parallel, where)
					if pipeline.Description != "" {
						fmt.Fprintf(m.Stdout, "  %s\n", pipeline.Description)
					}
					fmt.Fprintf(m.Stdout, "run %s\n\n", w.ID())
				}
				return m.followRun(ctx, svc, t, w, quiet, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON when it stops, and nothing before")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "one line per task, without candidate scores")
	in.flags(c, true)
	return c
}

// runInputs are the flags that give a run its inputs.
type runInputs struct {
	sets      []string
	stateFile string
	files     []string
	budget    float64
}

func (in *runInputs) flags(c *cobra.Command, files bool) {
	c.Flags().StringArrayVar(&in.sets, "set", nil, "set a section of the run's state: SECTION=JSON, SECTION=@FILE.json, or SECTION=text (repeatable)")
	c.Flags().StringVar(&in.stateFile, "state", "", "a JSON object file whose keys are sections of the run's state")
	c.Flags().Float64Var(&in.budget, "budget", 0, "the run's budget, replacing the pipeline's")
	if files {
		c.Flags().StringArrayVar(&in.files, "file", nil, "attach a file to the run (repeatable); files are stored once by content")
	}
}

// state reads --state and --set into state sections; --set wins.
func (in *runInputs) state(m *Main) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage)
	if in.stateFile != "" {
		b, err := os.ReadFile(in.stateFile)
		if err != nil {
			return nil, usagef("--state: %v", err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, usagef("--state %s: want a JSON object whose keys are state sections: %v", in.stateFile, err)
		}
	}
	for _, s := range in.sets {
		sec, val, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(sec) == "" {
			return nil, usagef("--set %q: want SECTION=VALUE, as in --set 'inputs={\"topic\":\"tides\"}'", s)
		}
		switch {
		case strings.HasPrefix(val, "@"):
			b, err := os.ReadFile(val[1:])
			if err != nil {
				return nil, usagef("--set %s: %v", sec, err)
			}
			if !json.Valid(b) {
				return nil, usagef("--set %s: %s is not valid JSON", sec, val[1:])
			}
			out[sec] = b
		case json.Valid([]byte(val)):
			out[sec] = json.RawMessage(val)
		default:
			// Plain text is taken as a JSON string: --set direction=north.
			b, _ := json.Marshal(val)
			out[sec] = b
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// finishRun follows a run until it stops, then prints it: a summary, or
// JSON. A run that did not complete is a failure of the work (exit 1),
// with what to do next.
func (m *Main) finishRun(ctx context.Context, h hearth.RunReader, run hearth.RunWatch, quiet, asJSON bool) error {
	start := time.Now()
	id := run.ID()
	info, err := m.follow(ctx, h, run, quiet, asJSON)
	var lost *client.StreamError
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &lost) {
		return err
	}
	d, derr := h.Run(ctx, id)
	if derr != nil {
		return derr
	}
	outs, _ := h.RunOutputs(ctx, id)
	sum := summarize(d, outs, start)
	if asJSON {
		if jerr := m.printJSON(struct {
			Run     hearth.RunDetail `json:"run"`
			Summary runSummary       `json:"summary"`
		}{d, sum}); jerr != nil {
			return jerr
		}
	} else {
		m.printRunSummary(info, sum)
	}
	var stopped *hearth.RunError
	switch {
	case errors.As(err, &stopped):
		return fmt.Errorf("%w (%v)", errSilent, err) // the summary says it
	case err != nil:
		// Not how the run stopped but what went wrong recording it (a
		// pause the store could not write): the summary does not say it.
		return err
	}
	return nil
}

// runSummary counts what one invocation of a run did.
type runSummary struct {
	Run        string           `json:"run"`
	Pipeline   string           `json:"pipeline"`
	Status     hearth.RunStatus `json:"status"`
	Tasks      int              `json:"tasks"`
	Succeeded  int              `json:"succeeded"`
	Failed     int              `json:"failed"`
	Skipped    int              `json:"skipped"`
	Spawned    int              `json:"spawned"`
	Reused     int              `json:"reused"`
	Rehydrated int              `json:"rehydrated"`
	Duration   time.Duration    `json:"duration"`
	// TaskTime is the sum of the durations of the tasks that finished in
	// this invocation.
	TaskTime time.Duration `json:"task_time"`
	Ran      int           `json:"ran"`
	Cost     float64       `json:"cost"`
	Budget   float64       `json:"budget,omitempty"`
}

func summarize(d hearth.RunDetail, outs []hearth.TaskOutput, since time.Time) runSummary {
	s := runSummary{Run: d.ID, Pipeline: d.Pipeline, Status: d.Status, Tasks: d.Tasks, Succeeded: d.Succeeded, Failed: d.Failed,
		Skipped: d.Skipped, Duration: time.Since(since), Cost: d.Cost, Budget: d.Budget}
	for _, o := range outs {
		if o.Time.Before(since) {
			continue
		}
		s.Ran++
		s.TaskTime += o.Duration
		switch hearth.Action(o.Action) {
		case hearth.ActionSpawned:
			s.Spawned++
		case hearth.ActionReused:
			s.Reused++
		case hearth.ActionRehydrated:
			s.Rehydrated++
		}
	}
	return s
}

func (m *Main) printRunSummary(info hearth.RunInfo, s runSummary) {
	w := m.Stdout
	fmt.Fprintf(w, "\nrun %s %s: %d tasks in %s: %d succeeded, %d failed, %d skipped\n", s.Run, s.Status, s.Tasks, s.Duration.Round(time.Millisecond), s.Succeeded, s.Failed, s.Skipped)
	if s.Ran > 0 {
		fmt.Fprintf(w, "placement: %d spawned, %d reused warm, %d rehydrated\n", s.Spawned, s.Reused, s.Rehydrated)
		fmt.Fprintf(w, "task time: %s in all, %s on average\n", s.TaskTime.Round(time.Millisecond), (s.TaskTime / time.Duration(s.Ran)).Round(time.Millisecond))
	}
	if s.Cost > 0 || s.Budget > 0 {
		cost := fmt.Sprintf("cost: %.2f", s.Cost)
		if s.Budget > 0 {
			cost += fmt.Sprintf(" of a %.2f budget", s.Budget)
		}
		fmt.Fprintln(w, cost)
	}
	switch info.Status {
	case hearth.RunCompleted:
		fmt.Fprintf(w, "see it with: %s runs show %s\n", m.hearth(), s.Run)
	case hearth.RunPaused, hearth.RunFailed:
		fmt.Fprintf(w, "%s: %s\n", info.Status, info.Reason)
		fmt.Fprintf(w, "resume it with: %s runs resume %s\n", m.hearth(), s.Run)
	case hearth.RunCancelled:
		fmt.Fprintf(w, "cancelled: %s\n", info.Reason)
	}
}

// runTarget finds the config and the pipeline that `hearth run args`
// names.
func (m *Main) runTarget(args []string) (*config.Config, *hearth.Pipeline, error) {
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
		case len(args) == 1 && !strings.ContainsRune(path, filepath.Separator) && !strings.HasSuffix(path, ".hcl") &&
			(m.configPath != "" || m.Getenv("HEARTH_CONFIG") != ""):
			// Not a path: a pipeline name in --config's file.
			name = args[0]
		default:
			return nil, nil, usagef("%s", missingPath(path, err))
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
	p, err := cfg.SelectPipeline(name)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return cfg, p, nil
}

// missingPath says that path, which a command was given, cannot be read,
// and suggests the entry beside it that was probably meant.
func missingPath(path string, err error) string {
	msg := fmt.Sprintf("%s: %v", path, errors.Unwrap(err))
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("%s: %v", path, err)
	}
	dir, base := filepath.Split(filepath.Clean(path))
	entries, _ := os.ReadDir(cmp.Or(dir, "."))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if best := text.Closest(base, names); best != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", filepath.Join(dir, best))
	}
	return msg + "; give a directory that holds hearth.hcl, a config file, or a pipeline name with --config"
}

// reasonTail is the reason without the session name the line already has.
func reasonTail(d hearth.Decision) string {
	r := d.Reason
	if i := strings.Index(r, d.Session+": "); i >= 0 && d.Action == hearth.ActionSpawned {
		return r[:i] + r[i+len(d.Session)+2:]
	}
	return r
}
