package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/plugins"
)

// Exit codes.
const (
	exitOK    = 0
	exitWork  = 1 // the work failed
	exitUsage = 2 // bad usage or bad config
)

// shutdownGrace is how long tasks in flight may finish after SIGINT or
// SIGTERM before they are cancelled.
const shutdownGrace = 10 * time.Second

// Main is the hearth command line, with its input, output and environment
// injected so that tests run it in-process.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Signals returns the channel of signals that shut a running host
	// down, and a function that stops delivery.
	Signals func() (<-chan os.Signal, func())
	// Reloads returns the channel of signals that make a running host
	// reload its config (SIGHUP), and a function that stops delivery.
	Reloads func() (<-chan os.Signal, func())
	// Interrupts returns the channel of every signal that would end the
	// process and can be caught (interruptSignals), for commands that
	// must clean up when interrupted; nil means Signals.
	Interrupts func() (<-chan os.Signal, func())

	// wire is Stdout as given, before Run made it safe for a terminal:
	// where a protocol's bytes go (hearth mcp).
	wire io.Writer

	// commandName is the subcommand running, for the data directory's
	// owner record.
	commandName string

	// Global flags.
	dataDir    string
	socket     string
	configPath string
	// again is the command line that reaches this command's data
	// directory (see hearth); empty for plain "hearth".
	again string
	// warned is set once the config's warnings were printed: a command
	// that loads it twice says them once.
	warned   bool
	logLevel string
	logJSON  bool
}

// NewMain returns a Main wired to the process's own stdio, environment and
// signals.
func NewMain() *Main {
	return &Main{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
		Signals: func() (<-chan os.Signal, func()) {
			c := make(chan os.Signal, 2)
			signal.Notify(c, os.Interrupt, syscall.SIGTERM)
			return c, func() { signal.Stop(c) }
		},
		Reloads: func() (<-chan os.Signal, func()) {
			c := make(chan os.Signal, 1)
			signal.Notify(c, syscall.SIGHUP)
			return c, func() { signal.Stop(c) }
		},
		Interrupts: func() (<-chan os.Signal, func()) {
			c := make(chan os.Signal, len(interruptSignals))
			signal.Notify(c, interruptSignals...)
			return c, func() { signal.Stop(c) }
		},
	}
}

// Run runs the command line args and returns the exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	// Everything the CLI prints passes through text.Safe: prompts, paths,
	// agents' output and errors come from outside, and must not drive the
	// terminal (issue 13). hearth's own escape sequences (the live run
	// view, colored diagnostics and logs) are written underneath. A
	// command whose stdout is a byte stream (streamsBytes) gets the
	// process's stdout itself.
	m.wire = m.Stdout
	bytesOut := raw(m.Stdout)
	stdout, stderr := text.NewSafeWriter(m.Stdout), text.NewSafeWriter(m.Stderr)
	m.Stdout, m.Stderr = stdout, stderr
	defer stdout.Flush()
	defer stderr.Flush()
	root := m.command()
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		m.commandName = c.Name()
		if writesBytes(c) {
			m.Stdout = bytesOut
		}
	}
	root.SetArgs(args)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	err := root.ExecuteContext(ctx)
	return m.report(err)
}

// report prints err, if any, and returns the exit code it deserves.
func (m *Main) report(err error) int {
	if err == nil {
		return exitOK
	}
	var (
		ce *config.Error
		ue usageError
		he hookError
	)
	switch {
	case errors.As(err, &he):
		// Never 2 for Claude Code: see hookError.
		fmt.Fprintf(m.Stderr, "hearth: %v\n", err)
		return exitWork
	case errors.As(err, &ce):
		_ = ce.Write(m.diagnostics(), m.width(), m.color())
		return exitUsage
	case errors.As(err, &ue), errors.Is(err, hearth.ErrUnknownAgent),
		// cobra reports an unknown subcommand as a plain error.
		strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(m.Stderr, "hearth: %v\n", err)
		return exitUsage
	case errors.Is(err, errSilent):
		return exitWork
	}
	fmt.Fprintf(m.Stderr, "hearth: %v\n", err)
	return exitWork
}

// usageError is a command used wrongly: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errSilent is a failure already explained on the output.
var errSilent = errors.New("failed")

func (m *Main) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "hearth",
		Short: "A plugin host for AI agent sessions",
		Long: `hearth runs AI agents as plugins, tracks what each session touches,
reuses a warm session when a task fits it, and keeps everything in a
Badger data directory.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w%s\nRun '%s --help' for usage.", err, flagSuggestion(c, err), c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&m.dataDir, "data-dir", "", "data directory (env HEARTH_DATA_DIR; default: one per config file in $XDG_STATE_HOME/hearth or ~/.local/state/hearth, or per current directory without one)")
	pf.StringVar(&m.configPath, "config", "", "config file (env HEARTH_CONFIG; default: the bundled agents)")
	pf.StringVar(&m.socket, "socket", "", "the daemon's unix socket (env HEARTH_SOCKET; default: hearth.sock in the data directory)")
	pf.StringVar(&m.logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error, off")
	pf.BoolVar(&m.logJSON, "log-json", false, "log as JSON lines")

	root.AddCommand(
		m.versionCommand(),
		m.verifyCommand(),
		m.backupCommand(),
		m.restoreCommand(),
		m.recoverCommand(),
		m.agentsCommand(),
		m.submitCommand(),
		m.runCommand(),
		m.runsCommand(),
		m.hostsCommand(),
		m.sessionsCommand(),
		m.guardCommand(),
		m.configCommand(),
		m.serveCommand(),
		m.dashboardCommand(),
		m.hookCommand(),
		m.placeCommand(),
		m.mcpCommand(),
	)
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command group (runs, sessions,
// config, ...) refuse a subcommand it does not have, as cobra refuses
// one of the root's: a usage error (exit 2) with cobra's suggestions,
// instead of the group's help and success. Without arguments a group
// prints its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasAvailableSubCommands() || c.Runnable() {
		return
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2 // cobra's default for the root
		}
		if sugg := c.SuggestionsFor(args[0]); len(sugg) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(sugg, "\n\t")
		}
		return usagef("%s\nRun '%s --help' for usage.", msg, c.CommandPath())
	}
}

// flagSuggestion is " (did you mean --json?)" for a flag error naming an
// unknown flag close to one c has, and "" otherwise.
func flagSuggestion(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if best := text.Closest(name, names); best != "" {
		return fmt.Sprintf(" (did you mean --%s?)", best)
	}
	return ""
}

// Text and bytes. What a command prints for a person or a script is text,
// and goes through text.Safe (Run), which rewrites every control byte
// (NUL among them) as an escape: a byte stream written through it is
// damaged. So a command that writes a byte stream to stdout (a backup)
// declares it, with streamsBytes, and Run hands that command the
// process's stdout itself, for every write: the choice is made once, by
// the command's declaration, not at each write. Such a command writes
// nothing else to stdout (what it tells the person goes to stderr, which
// stays text), and refuses to write its stream to a terminal
// (byteStream). Stdin is never rewritten: restore - reads its bytes as
// they come.

// stdoutAnnotation is the cobra annotation streamsBytes sets.
const stdoutAnnotation = "hearth/stdout"

// streamsBytes declares that c's stdout is a byte stream, not text.
func streamsBytes(c *cobra.Command) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[stdoutAnnotation] = "bytes"
	return c
}

// writesBytes reports whether c declared its stdout a byte stream.
func writesBytes(c *cobra.Command) bool { return c.Annotations[stdoutAnnotation] == "bytes" }

// byteStream is stdout, for a command that declared it a byte stream
// (streamsBytes); what is a terminal is refused: bytes are not for it
// to show, and would drive it.
func (m *Main) byteStream(c *cobra.Command) (io.Writer, error) {
	if !writesBytes(c) {
		// A programming error, caught by every test of the command.
		return nil, fmt.Errorf("%s writes a byte stream without declaring it (streamsBytes)", c.CommandPath())
	}
	if m.isTerminal(m.Stdout) {
		return nil, usagef("%s - writes a byte stream, and stdout is a terminal: redirect it (%s - > FILE, or | hearth restore -), or name a FILE", c.CommandPath(), c.CommandPath())
	}
	return m.Stdout, nil
}

// exactArgs is cobra.ExactArgs with a usage error naming the arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s takes %d argument(s) (%v), got %d\nRun '%s --help' for usage.", c.CommandPath(), len(names), names, len(args), c.CommandPath())
		}
		return nil
	}
}

// loadConfig loads the config file named by --config or HEARTH_CONFIG, or
// the default (every bundled agent), applies --data-dir, and prints the
// file's warnings.
func (m *Main) loadConfig() (*config.Config, error) {
	path := m.configFile()
	var cfg *config.Config
	if path == "" {
		cfg = config.Default(plugins.Names())
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("the current directory: %w", err)
		}
		cfg.DataDir, cfg.DataDirFrom, cfg.DataDirMove = paths.DefaultDataDir("", cwd, m.stateHome())
	} else {
		var err error
		if cfg, err = config.Load(path, config.Options{Bundled: plugins.Names(), StateHome: m.stateHome(), Getenv: m.Getenv}); err != nil {
			return nil, err
		}
		if len(cfg.Warnings) > 0 && !m.warned {
			m.warned = true
			_ = cfg.WriteWarnings(m.diagnostics(), m.width(), m.color())
		}
	}
	if dir, from := m.dataDirFlag(); dir != "" {
		cfg.DataDir, cfg.DataDirFrom, cfg.DataDirMove = dir, from, ""
		if from == "--data-dir" {
			// A flag is not in the next command's environment, as
			// HEARTH_DATA_DIR is: the command suggested must name the
			// directory itself, absolute so that it works from anywhere.
			m.again = "hearth --data-dir " + text.ShellQuote(dir)
		}
	} else if path != "" {
		// The data directory follows the file: a command the user is told
		// to run next must name the file too.
		m.again = "hearth --config " + text.ShellQuote(filepath.Dir(path))
		if filepath.Base(path) != "hearth.hcl" {
			m.again = "hearth --config " + text.ShellQuote(path)
		}
	}
	if cfg.DataDir == "" {
		return nil, usagef("no data directory: %s; name one with --data-dir, HEARTH_DATA_DIR or data_dir in the config file", cfg.DataDirFrom)
	}
	return cfg, nil
}

// stateHome is where default data directories are made
// (paths.StateHome).
func (m *Main) stateHome() string { return paths.StateHome(m.Getenv) }

// configFile is the config file --config or HEARTH_CONFIG names (a
// directory's hearth.hcl); "" for none.
func (m *Main) configFile() string {
	path := cmp.Or(m.configPath, m.Getenv("HEARTH_CONFIG"))
	if fi, err := os.Stat(path); path != "" && err == nil && fi.IsDir() {
		path = filepath.Join(path, "hearth.hcl")
	}
	return path
}

// hearth is the command line that reaches the data directory this
// command used, for the commands it suggests next: "hearth", or with the
// --data-dir flag or the config file that placed the data directory.
func (m *Main) hearth() string { return cmp.Or(m.again, "hearth") }

// dataDirFlag is the data directory --data-dir or HEARTH_DATA_DIR names,
// made absolute against the current directory (a flag's paths are the
// shell's), and which of the two named it; empty when neither does.
func (m *Main) dataDirFlag() (dir, from string) {
	if m.dataDir != "" {
		return paths.Abs(m.dataDir), "--data-dir"
	}
	if d := m.Getenv("HEARTH_DATA_DIR"); d != "" {
		return paths.Abs(d), "HEARTH_DATA_DIR"
	}
	return "", ""
}

// dataDirError adds to err which data directory was used and why: a
// relative path surprises less when the message says what it was read
// against.
func dataDirError(err error, cfg *config.Config) error {
	if err == nil || cfg.DataDirFrom == "" {
		return err
	}
	return fmt.Errorf("%w\n(the data directory %s is %s)", err, cfg.DataDir, cfg.DataDirFrom)
}

func (m *Main) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "hearth",
		Level:      hclog.LevelFromString(m.logLevel),
		Output:     raw(m.Stderr), // hclog escapes control characters itself
		JSONFormat: m.logJSON,
		Color:      m.hclogColor(),
	})
}

// withHost starts a host for cfg, runs work on it and closes it. On SIGINT
// or SIGTERM the host shuts down gracefully: tasks in flight get
// shutdownGrace to finish; a second signal cancels them at once.
func (m *Main) withHost(ctx context.Context, cfg *config.Config, work func(context.Context, *engine.Engine) error) error {
	tp, err := m.startTelemetry(ctx, cfg) // telemetry.go
	if err != nil {
		return err
	}
	defer m.stopTelemetry(tp)
	h, err := engine.New(engine.Options{Config: cfg, Logger: m.logger(), Bundled: plugins.Command, BundledNames: plugins.Names(), Command: "hearth " + m.commandName,
		Version: buildInfo().Version, Telemetry: tp})
	if err != nil {
		return dataDirError(err, cfg)
	}
	done := make(chan error, 1)
	go func() { done <- work(ctx, h) }()
	sigs, reloads, stop := m.hostSignals()
	defer stop()
	for {
		select {
		case err = <-done:
			// The work is done and every write it made is in the store's
			// log; a close that could not flush it leaves the directory
			// for the next writer to replay, and a read-only command
			// refused until then: say so rather than leave it a surprise.
			if cerr := h.Close(context.Background()); cerr != nil {
				fmt.Fprintf(m.Stderr, "hearth: warning: %v\n", cerr)
			}
			return err
		case <-reloads:
			m.reload(h)
			continue
		case sig := <-sigs:
			return m.shutdown(h, sig, sigs, done)
		}
	}
}

// hostSignals subscribes to the signals a running host takes: those that
// shut it down, and SIGHUP, which reloads its config (none when Reloads
// is nil). stop ends both.
func (m *Main) hostSignals() (sigs, reloads <-chan os.Signal, stop func()) {
	sigs, stopSigs := m.Signals()
	if m.Reloads == nil {
		return sigs, nil, stopSigs
	}
	reloads, stopReloads := m.Reloads()
	return sigs, reloads, func() {
		stopSigs()
		stopReloads()
	}
}

// reload reloads the config file on SIGHUP: validated whole, then swapped
// in; a file with errors is refused, with its diagnostics, and the old
// config keeps running.
func (m *Main) reload(h *engine.Engine) {
	cfg, err := m.loadConfig()
	if err != nil {
		fmt.Fprintln(m.Stderr, "hearth: reload refused, the running config stays:")
		var ce *config.Error
		if errors.As(err, &ce) {
			_ = ce.Write(m.diagnostics(), m.width(), m.color())
		} else {
			fmt.Fprintf(m.Stderr, "  %v\n", err)
		}
		return
	}
	rep, err := h.Reload(cfg)
	if err != nil {
		fmt.Fprintf(m.Stderr, "hearth: reload refused, the running config stays: %v\n", err)
		return
	}
	fmt.Fprintf(m.Stderr, "hearth: config reloaded: agents added %v, removed %v, changed %v; %d guards, %d pipelines\n",
		rep.Added, rep.Removed, rep.Changed, rep.Guards, rep.Pipelines)
	for _, w := range rep.Warnings {
		fmt.Fprintf(m.Stderr, "hearth: warning: %s\n", w)
	}
}

// shutdown closes the host after a signal, giving tasks in flight
// shutdownGrace, or less if a second signal comes.
func (m *Main) shutdown(h *engine.Engine, sig os.Signal, sigs <-chan os.Signal, done <-chan error) error {
	fmt.Fprintf(m.Stderr, "hearth: %v: shutting down; tasks in flight have %s to finish (signal again to stop now)\n", sig, shutdownGrace)
	grace, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-grace.Done():
		}
	}()
	_ = h.Close(grace)
	return errors.Join(fmt.Errorf("interrupted by %v", sig), <-done)
}

// printJSON writes v as indented JSON.
func (m *Main) printJSON(v any) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// fileOf is the file w writes to, through a text.SafeWriter.
func fileOf(w io.Writer) (*os.File, bool) {
	if sw, ok := w.(*text.SafeWriter); ok {
		w = sw.Underlying()
	}
	f, ok := w.(*os.File)
	return f, ok
}

// raw is w without text.Safe: for output that escapes what it prints
// itself (hclog quotes control characters) or is hearth's own.
func raw(w io.Writer) io.Writer {
	if sw, ok := w.(*text.SafeWriter); ok {
		return sw.Underlying()
	}
	return w
}

// diagnostics is where a config's diagnostics are written: in color, as
// they are (the source lines they quote are the operator's own file);
// otherwise through text.Safe.
func (m *Main) diagnostics() io.Writer {
	if m.color() {
		return raw(m.Stderr)
	}
	return m.Stderr
}

func (m *Main) isTerminal(w io.Writer) bool {
	f, ok := fileOf(w)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (m *Main) color() bool { return m.isTerminal(m.Stderr) && m.Getenv("NO_COLOR") == "" }

func (m *Main) hclogColor() hclog.ColorOption {
	if m.color() {
		return hclog.AutoColor
	}
	return hclog.ColorOff
}

// termWidth is the width of the terminal w writes to, or 0.
func (m *Main) termWidth(w io.Writer) int {
	if f, ok := fileOf(w); ok {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// width is the terminal's width for wrapping diagnostics, or 0.
func (m *Main) width() uint {
	if f, ok := fileOf(m.Stderr); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return uint(w)
		}
	}
	return 0
}
