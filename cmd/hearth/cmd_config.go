package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/plugins/claude"
)

func (m *Main) configCommand() *cobra.Command {
	cfg := &cobra.Command{Use: "config", Short: "Work with config files"}
	validate := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file without running anything",
		Long: `Check a config file without running anything. Every problem is
reported with its file:line:col, the offending source line, and what to
do about it. The programs agents name are looked up, and checked against
their sha256 pins; the paths they are granted (read_paths, write_paths)
must exist outside the data directory; a claude_code agent's claude
program must be Claude Code, recent enough. A model's key variable that is not
set is a warning: only its tasks need it. Without FILE it checks the file
--config (or HEARTH_CONFIG) names, as every other command reads it. The
exit status is 2 when the file is not valid.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most 1 argument (FILE), got %d\nRun '%s --help' for usage.", c.CommandPath(), len(args), c.CommandPath())
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			// Every other command reads the file --config names: so does
			// this one, when it is not given the file itself.
			file := m.configFile()
			if len(args) == 1 {
				file = args[0]
			}
			if file == "" {
				return usagef("hearth config validate needs the file to check: hearth config validate FILE (or --config FILE)")
			}
			c, err := config.Load(file, config.Options{Bundled: plugins.Names(), StateHome: m.stateHome(), Getenv: m.Getenv})
			var ce *config.Error
			if err != nil && !errors.As(err, &ce) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			// What is missing only where a model is called (its key) is
			// said, and the file is valid.
			_ = c.WriteWarnings(m.diagnostics(), m.width(), m.color())
			// The programs the file names: found, and matching their pins.
			var problems []string
			for _, a := range c.Agents {
				if len(a.Command) == 0 {
					continue
				}
				if err := process.CheckProgram(a.Command[0], a.SHA256); err != nil {
					problems = append(problems, fmt.Sprintf("agent %q: %v", a.Name, err))
				}
			}
			for _, a := range c.Agents {
				if a.ClaudeCode == nil {
					continue
				}
				_, v, err := claude.CheckCLI(a.ClaudeCode.Command)
				if err == nil && a.Confinement != config.ConfinementOff {
					err = claude.CheckConfinable(v)
				}
				if err != nil {
					problems = append(problems, fmt.Sprintf("agent %q: %v", a.Name, err))
				}
			}
			for _, a := range c.Agents {
				if a.Confinement == config.ConfinementOff {
					continue
				}
				if err := process.CheckGrants(a.ReadPaths, a.WritePaths, []string{c.DataDir}); err != nil {
					for _, e := range strings.Split(err.Error(), "\n") {
						problems = append(problems, fmt.Sprintf("agent %q: %s", a.Name, e))
					}
				}
			}
			if len(problems) > 0 {
				return usagef("%s: %s", file, strings.Join(problems, "\n"+file+": "))
			}
			for _, w := range guardAdvice(c) {
				fmt.Fprintf(m.Stderr, "%s: warning: %s\n", file, w)
			}
			fmt.Fprintf(m.Stdout, "%s is valid: %s, %s, %s\n", file,
				plural(len(c.Agents), "agent"), plural(len(c.Guards), "guard"), plural(len(c.Pipelines), "pipeline"))
			return nil
		},
	}
	sample := &cobra.Command{
		Use:   "sample",
		Short: "Print a commented config file with every setting and its default",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			_, err := m.Stdout.Write(config.Sample)
			return err
		},
	}
	cfg.AddCommand(validate, sample)
	return cfg
}

// guardAdvice flags the pre_tool_use guards that read paths: the paths a
// call names, which for a Grep, a Glob or a listing is the directory it
// searches, not the files it reaches below it. A rule written as
// any(paths, glob(#, "**/.env")) lets a Grep of the workspace with glob
// ".env" read .env; the path helpers see what a search reaches.
func guardAdvice(c *config.Config) []string {
	var out []string
	for _, g := range c.Guards {
		if g.Hook != guard.PreToolUse || !g.Uses("paths") {
			continue
		}
		out = append(out, fmt.Sprintf("guard %q reads paths, which lists the paths a call names: a Grep, Glob or listing names the directory it searches, "+
			"not the files it reaches below it, so a rule on paths misses them. Write it with touches (or reads, writes, names): "+
			"any(paths, glob(#, \"**/.env\")) is touches(\"**/.env\"); docs/guards.md lists the helpers", g.Name))
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
