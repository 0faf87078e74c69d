package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/host/guard"
)

type guardCheckView struct {
	Hook   string             `json:"hook"`
	Guards []guardOutcomeView `json:"guards"`
	Fired  []string           `json:"fired"`
}

type guardOutcomeView struct {
	Guard   string `json:"guard"`
	Applies bool   `json:"applies"`
	Fired   bool   `json:"fired"`
	Action  string `json:"action"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (m *Main) guardCommand() *cobra.Command {
	c := &cobra.Command{Use: "guard", Short: "Try guards out"}
	var (
		hook   string
		input  string
		asJSON bool
	)
	check := &cobra.Command{
		Use:   "check --config FILE --hook HOOK --input SAMPLE.json",
		Short: "Evaluate a config's guards against a sample input",
		Long: `Evaluate the guards of a config file that watch HOOK against a sample
input, and print, for each, whether it applies, whether it fired and what
it said. The input is the hook's environment as JSON, with the names
conditions use (tool, paths, input, session, task, run; from, to, state;
result; score); - reads it from stdin. Nothing runs: use it to test rules
before deploying them. The exit status is 1 when a guard could not
evaluate its condition on the input, 2 on bad usage.`,
		Example: `  hearth guard check --config hearth.hcl --hook pre_tool_use --input read-env.json
  echo '{"tool":"Bash","input":{"command":"rm -rf /"}}' | hearth guard check --config hearth.hcl --hook pre_tool_use --input -`,
		Args: exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			if m.configPath == "" && m.Getenv("HEARTH_CONFIG") == "" {
				return usagef("guard check needs --config FILE: the file whose guards to try")
			}
			if hook == "" || input == "" {
				return usagef("guard check needs --hook (one of %s) and --input SAMPLE.json", hookNames())
			}
			cfg, err := m.loadConfig()
			if err != nil {
				return err
			}
			var b []byte
			if input == "-" {
				b, err = io.ReadAll(io.LimitReader(m.Stdin, guard.MaxInput+1))
			} else {
				b, err = os.ReadFile(input)
			}
			if err != nil {
				return usagef("read the input: %v", err)
			}
			env, match, err := guard.DecodeInput(guard.Hook(hook), b, time.Now())
			if err != nil {
				return usagef("%s: %v", input, err)
			}
			outcomes := cfg.GuardSet().All(guard.Hook(hook), match, env)
			view := guardCheckView{Hook: hook, Guards: []guardOutcomeView{}, Fired: []string{}}
			failed := false
			for _, o := range outcomes {
				v := guardOutcomeView{Guard: o.Guard, Applies: o.Applies, Fired: o.Fired, Action: string(o.Action), Message: o.Message}
				if o.Err != nil {
					v.Error, failed = o.Err.Error(), true
				}
				if o.Fired {
					view.Fired = append(view.Fired, o.Guard)
				}
				view.Guards = append(view.Guards, v)
			}
			if asJSON {
				if err := m.printJSON(view); err != nil {
					return err
				}
			} else {
				m.printGuardCheck(view)
			}
			if failed {
				return errSilent
			}
			return nil
		},
	}
	f := check.Flags()
	f.StringVar(&hook, "hook", "", "the hook point: "+hookNames())
	f.StringVar(&input, "input", "", "a JSON file with the hook's environment, or - for stdin")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(check)
	return c
}

func hookNames() string {
	s := make([]string, len(guard.Hooks))
	for i, h := range guard.Hooks {
		s[i] = string(h)
	}
	return strings.Join(s, ", ")
}

func (m *Main) printGuardCheck(v guardCheckView) {
	w := m.Stdout
	if len(v.Guards) == 0 {
		fmt.Fprintf(w, "no guard watches %s\n", v.Hook)
		return
	}
	for _, g := range v.Guards {
		switch {
		case g.Error != "":
			fmt.Fprintf(w, "ERROR    %-24s %s\n", g.Guard, g.Error)
		case !g.Applies:
			fmt.Fprintf(w, "skipped  %-24s its agents, tasks or stages do not match the input\n", g.Guard)
		case g.Fired:
			fmt.Fprintf(w, "FIRED    %-24s %s: %s\n", g.Guard, g.Action, g.Message)
		default:
			fmt.Fprintf(w, "passed   %-24s\n", g.Guard)
		}
	}
	if len(v.Fired) == 0 {
		fmt.Fprintf(w, "\nno guard fired: %s would go ahead\n", v.Hook)
	} else {
		fmt.Fprintf(w, "\n%d guard(s) fired; the first, %s, decides\n", len(v.Fired), v.Fired[0])
	}
}
