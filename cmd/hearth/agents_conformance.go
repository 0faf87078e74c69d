package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
)

// conformanceView is `hearth agents test --json`'s output.
type conformanceView struct {
	Agent        string      `json:"agent"`
	Version      string      `json:"version"`
	Capacity     int         `json:"capacity"`
	ExportsState bool        `json:"exports_state"`
	Passed       bool        `json:"passed"`
	Checks       []checkView `json:"checks"`
}

type checkView struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Passed      bool     `json:"passed"`
	Errors      []string `json:"errors,omitempty"`
}

// agentsTestCommand is `hearth agents test -- COMMAND [ARGS...]`: the
// conformance checks of package conformance (the list conformance.TestAgent runs
// on Go agents) against any plugin program, over the real protocol.
func (m *Main) agentsTestCommand() *cobra.Command {
	var (
		asJSON            bool
		prompts, env      []string
		dirs, files, tech []string
		workdir           string
	)
	c := &cobra.Command{
		Use:   "test [flags] -- COMMAND [ARGS...]",
		Short: "Check that an agent program, in any language, keeps the hearth agent contract",
		Long: `Runs the hearth agent contract's checks against a plugin program over the
real protocol, whatever language it is written in: Describe, tasks and
their tool-use reports, context beside the prompt, asking before each tool
use, denied tool uses honoured, cancellation, concurrency up to the
declared capacity, state export and import, shutdown, and a host crash.
Each check prints PASS or FAIL and why; the exit status is 1 if any fails.

The tasks (--task, one per flag) must be ones the agent completes; their
hints come from --dir, --file and --tech.

  hearth agents test -- python3 agent.py
  hearth agents test --task "find TODO" --dir src -- ./my-agent`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return usagef("name the agent program after --: hearth agents test [flags] -- COMMAND [ARGS...]")
			}
			for _, e := range env {
				if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
					return usagef("--env %q: want KEY=VALUE", e)
				}
			}
			if len(prompts) == 0 {
				prompts = []string{"Say hello."}
			}
			var tasks []sdk.Task
			for i, p := range prompts {
				tasks = append(tasks, sdk.Task{
					Name: fmt.Sprintf("task-%d", i+1), Prompt: p, Attempt: 1,
					Hints: sdk.Hints{Files: files, Directories: dirs, Technologies: tech},
				})
			}
			r, err := conformance.RunChecks(cmd.Context(), conformance.CommandIn(workdir, env, args...), tasks...)
			if err != nil {
				return fmt.Errorf("%w\nthe program must serve a hearth agent (Go: plugin.Serve; Python: hearth_agent.serve)", err)
			}
			view := conformanceView{Agent: r.Info.Name, Version: r.Info.Version, Capacity: r.Info.Capacity, ExportsState: r.ExportsState, Passed: true}
			for _, c := range r.Checks {
				cv := checkView{Name: c.Name, Description: c.Description, Passed: len(c.Errors) == 0}
				for _, e := range c.Errors {
					cv.Errors = append(cv.Errors, e.Error())
				}
				view.Passed = view.Passed && cv.Passed
				view.Checks = append(view.Checks, cv)
			}
			if asJSON {
				if err := m.printJSON(view); err != nil {
					return err
				}
			} else {
				m.printConformance(view)
			}
			if !view.Passed {
				return errSilent
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringArrayVar(&prompts, "task", nil, "the prompt of a task the agent completes (repeatable; default \"Say hello.\")")
	f.StringArrayVar(&dirs, "dir", nil, "a directory the tasks hint at (repeatable)")
	f.StringArrayVar(&files, "file", nil, "a file the tasks hint at (repeatable)")
	f.StringArrayVar(&tech, "tech", nil, "a technology the tasks hint at (repeatable)")
	f.StringArrayVar(&env, "env", nil, "KEY=VALUE added to the program's environment (repeatable)")
	f.StringVar(&workdir, "workdir", "", "the directory the program runs in (default: the current one)")
	return c
}

func (m *Main) printConformance(v conformanceView) {
	exports := ""
	if v.ExportsState {
		exports = ", exports state"
	}
	fmt.Fprintf(m.Stdout, "agent %q %s (capacity %d%s)\n", v.Agent, v.Version, v.Capacity, exports)
	failed := 0
	for _, c := range v.Checks {
		if c.Passed {
			fmt.Fprintf(m.Stdout, "PASS  %s\n", c.Name)
			continue
		}
		failed++
		fmt.Fprintf(m.Stdout, "FAIL  %s: %s\n", c.Name, c.Description)
		for _, e := range c.Errors {
			fmt.Fprintf(m.Stdout, "      %s\n", strings.ReplaceAll(e, "\n", "\n      "))
		}
	}
	fmt.Fprintf(m.Stdout, "%d passed, %d failed\n", len(v.Checks)-failed, failed)
}
