package main

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
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
	// NotApplicable says why the check does not apply to the agent
	// (Passed is then true: nothing failed).
	NotApplicable string `json:"not_applicable,omitempty"`
}

// agentsTestCommand is `hearth agents test -- COMMAND [ARGS...]`: the
// conformance checks of package conformance (the list conformance.TestAgent runs
// on Go agents) against any plugin program, over the real protocol.
func (m *Main) agentsTestCommand() *cobra.Command {
	var (
		asJSON            bool
		prompts, env      []string
		dirs, files, tech []string
		guarded           []string
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
hints come from --dir, --file and --tech. Without --dir and --file, the
tasks name the files of a fixture made for the test in the program's
directory (and removed after), with one directory behind a guard: a task
that uses no tool would leave the checks of asking first and of honouring
denials nothing to see. A check that applies but could not run fails,
saying why; one that does not apply to the agent (state, for an agent
that exports none; the guarded path check with --file or --dir and no
--guard) says so.

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
			var suite conformance.Suite
			if len(files) == 0 && len(dirs) == 0 {
				// Tasks without files or directories may use no tool at
				// all, and then the checks that matter most (asking
				// first, honouring denials) would have nothing to see.
				// The fixture gives the agent files to read, one of
				// them guarded.
				fixture, remove, err := conformance.Fixture(cmp.Or(workdir, "."), prompts...)
				if err != nil {
					return err
				}
				defer func() { _ = remove() }()
				suite = fixture
				for i := range suite.Tasks {
					suite.Tasks[i].Hints.Technologies = tech
				}
				if !asJSON {
					fmt.Fprintf(m.Stdout, "no --file or --dir: the tasks read files of %s (removed after), and a guard denies %s\n",
						filepath.Join(cmp.Or(workdir, "."), filepath.Dir(suite.Guarded[0])), suite.Guarded[0])
				}
			} else {
				if len(prompts) == 0 {
					prompts = []string{conformance.FixturePrompt}
				}
				for i, p := range prompts {
					suite.Tasks = append(suite.Tasks, sdk.Task{
						Name: fmt.Sprintf("task-%d", i+1), Prompt: p, Attempt: 1,
						Hints: sdk.Hints{Files: files, Directories: dirs, Technologies: tech},
					})
				}
			}
			suite.Guarded = append(suite.Guarded, guarded...)
			r, err := conformance.RunSuite(cmd.Context(), conformance.CommandIn(workdir, env, args...), suite)
			var died *conformance.ExitError
			if err != nil && !errors.As(err, &died) {
				return fmt.Errorf("%w\nthe program must serve a hearth agent (Go: plugin.Serve; Python: hearth_agent.serve)", err)
			}
			if err != nil {
				return err // how it died says more than any guess
			}
			view := conformanceView{Agent: r.Info.Name, Version: r.Info.Version, Capacity: r.Info.Capacity, ExportsState: r.ExportsState, Passed: true}
			for _, c := range r.Checks {
				cv := checkView{Name: c.Name, Description: c.Description, Passed: len(c.Errors) == 0, NotApplicable: c.NotApplicable}
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
	f.StringArrayVar(&guarded, "guard", nil, "a path a guard denies in the guarded path check (repeatable; without --file and --dir, the fixture guards one of its own)")
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
	failed, na := 0, 0
	for _, c := range v.Checks {
		switch {
		case c.NotApplicable != "":
			na++
			fmt.Fprintf(m.Stdout, "n/a   %s: %s\n", c.Name, c.NotApplicable)
		case c.Passed:
			fmt.Fprintf(m.Stdout, "PASS  %s\n", c.Name)
		default:
			failed++
			fmt.Fprintf(m.Stdout, "FAIL  %s: %s\n", c.Name, c.Description)
			for _, e := range c.Errors {
				fmt.Fprintf(m.Stdout, "      %s\n", strings.ReplaceAll(e, "\n", "\n      "))
			}
		}
	}
	fmt.Fprintf(m.Stdout, "%d passed, %d failed", len(v.Checks)-failed-na, failed)
	if na > 0 {
		fmt.Fprintf(m.Stdout, ", %d not applicable", na)
	}
	fmt.Fprintln(m.Stdout)
}
