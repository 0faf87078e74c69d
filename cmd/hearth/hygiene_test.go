package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEveryCommandRefusesWhatItDoesNotKnow sweeps the whole command tree:
// every command group refuses a subcommand it does not have, and each of
// its subcommands mistyped (two letters swapped) is refused with that
// subcommand suggested; every command refuses an unknown flag, and a
// mistyped flag of its own is suggested. Each is a usage error: exit 2.
func TestEveryCommandRefusesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	var visit func(c *cobra.Command)
	var groups, commands []*cobra.Command
	visit = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" {
			return
		}
		commands = append(commands, c)
		if c.HasAvailableSubCommands() {
			groups = append(groups, c)
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit((&Main{}).command())
	if len(groups) < 5 || len(commands) < 30 {
		t.Fatalf("found %d groups and %d commands; the sweep lost its way", len(groups), len(commands))
	}
	path := func(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }
	for _, g := range groups {
		code, out, stderr := run(t, nil, append(path(g), "zzzqqq")...)
		if code != exitUsage || !strings.Contains(stderr, `unknown command "zzzqqq"`) {
			t.Errorf("hearth %s zzzqqq: exit %d, want %d and the command named\n%s%s", strings.Join(path(g), " "), code, exitUsage, out, stderr)
		}
		for _, sub := range g.Commands() {
			if !sub.IsAvailableCommand() || len(sub.Name()) < 3 || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			n := []byte(sub.Name())
			n[1], n[2] = n[2], n[1]
			if string(n) == sub.Name() {
				continue
			}
			code, _, stderr := run(t, nil, append(path(g), string(n))...)
			if code != exitUsage || !strings.Contains(stderr, "Did you mean this?\n\t"+sub.Name()) && !strings.Contains(stderr, "\t"+sub.Name()+"\n") {
				t.Errorf("hearth %s %s: exit %d, want %d and %q suggested\n%s", strings.Join(path(g), " "), n, code, exitUsage, sub.Name(), stderr)
			}
		}
	}
	for _, c := range commands {
		code, _, stderr := run(t, nil, append(path(c), "--zzzqqq")...)
		if code != exitUsage || !strings.Contains(stderr, "unknown flag: --zzzqqq") {
			t.Errorf("hearth %s --zzzqqq: exit %d, want %d\n%s", strings.Join(path(c), " "), code, exitUsage, stderr)
		}
		var own string
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if own == "" && len(f.Name) >= 4 {
				own = f.Name
			}
		})
		if own == "" {
			continue
		}
		typo := own[:len(own)-1] + "x"
		code, _, stderr = run(t, nil, append(path(c), "--"+typo)...)
		if code != exitUsage || !strings.Contains(stderr, "(did you mean --"+own+"?)") {
			t.Errorf("hearth %s --%s: exit %d, want %d and --%s suggested\n%s", strings.Join(path(c), " "), typo, code, exitUsage, own, stderr)
		}
	}
}

// TestRunNamesAMissingPath: a mistyped directory given to hearth run is
// named, with the one beside it that was probably meant.
func TestRunNamesAMissingPath(t *testing.T) {
	t.Parallel()
	code, _, stderr := run(t, nil, "run", "../../examples/code-tuor")
	if code != exitUsage || !strings.Contains(stderr, "../../examples/code-tuor: no such file or directory (did you mean ../../examples/code-tour?)") {
		t.Errorf("exit %d, stderr:\n%s\nwant the missing path named, and the code tour suggested", code, stderr)
	}
	code, _, stderr = run(t, nil, "run", "nightly")
	if code != exitUsage || !strings.Contains(stderr, "nightly: no such file or directory") {
		t.Errorf("a word with no --config: exit %d, stderr:\n%s\nwant it named as a missing path", code, stderr)
	}
}
