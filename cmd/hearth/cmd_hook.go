package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/text"
)

// hookTimeout bounds a hook's call to the daemon. It sits in front of a
// person's every tool call, and must give up well before Claude Code's
// own timeout for the hook (10 s in examples/claude-code/settings.json)
// kills it: otherwise failing closed would never get to answer.
const hookTimeout = 5 * time.Second

// hookError is a failure of `hearth hook` to answer at all (its stdout
// is gone). It exits 1, never 2: Claude Code reads exit 2 as "block",
// which refuses a tool call, or keeps a Stop from stopping. Every other
// failure is answered on stdout with exit 0, so that Claude Code reads
// the answer: a message for the person, and a denial when failing
// closed.
type hookError struct{ error }

func (m *Main) hookCommand() *cobra.Command {
	var agent, whenUnreachable string
	c := &cobra.Command{
		Use:   "hook",
		Short: "A Claude Code command hook: report the hook's payload to the daemon and answer Claude Code",
		Long: `Read one Claude Code hook payload (JSON on stdin: SessionStart,
UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd, ...), hand
it to the daemon serving the data directory, and print its answer. The
session becomes an external hearth session: its tool uses build its
fingerprint, and pre_tool_use guards can deny a tool use, which Claude
Code then refuses with the guard's message.

When hearth cannot check a tool use (no daemon answers, the payload is
too big or broken, the daemon refuses it), the tool use goes ahead (a
host that is down must not lock a person out of their editor), unless
--when-unreachable deny, or hooks { when_unreachable = "deny" } in the
config, says otherwise; a config that says deny fails closed even when
it does not load. Either way the person is told, in Claude Code's
window (systemMessage). Wire it up with examples/claude-code/settings.json.`,
		Example: `  echo '{"session_id":"s1","hook_event_name":"SessionStart","cwd":"/src/app"}' | hearth hook
  hearth --data-dir ~/.hearth hook --when-unreachable deny`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.hook(cmd.Context(), agent, whenUnreachable)
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "the external agent the session belongs to (default: the daemon's hooks.agent)")
	c.Flags().StringVar(&whenUnreachable, "when-unreachable", "", `what a PreToolUse gets when no daemon answers: "allow" (default) or "deny"`)
	return c
}

func (m *Main) hook(ctx context.Context, agent, whenUnreachable string) error {
	// Loaded once: this runs before every tool call a person makes.
	cfg, cfgErr := m.loadConfig()
	policy, perr := m.hookPolicy(whenUnreachable, cfg, cfgErr)
	if perr != nil {
		fmt.Fprintf(m.Stderr, "hearth hook: %v; %s\n", perr, failing(policy))
	}
	payload, err := io.ReadAll(io.LimitReader(m.Stdin, claudecode.MaxPayload+1))
	var out []byte
	var sock string
	if err == nil {
		// Checked here too: a broken payload gets its error without a
		// trip to the daemon.
		_, err = claudecode.Parse(payload)
	}
	if err == nil {
		sock, err = m.socketOf(cfg, cfgErr)
	}
	if err == nil {
		hctx, cancel := context.WithTimeout(ctx, hookTimeout)
		out, err = m.callHook(hctx, sock, agent, payload)
		cancel()
	}
	if err == nil {
		if _, err := m.Stdout.Write(out); err != nil {
			return hookError{err}
		}
		return nil
	}
	// hearth could not do its work. Whatever went wrong — no daemon, a
	// payload too big or unreadable, a daemon that refused it — the
	// configured policy decides, and the person is told in Claude
	// Code's window (systemMessage), not only on stderr, which Claude
	// Code shows in verbose mode alone. The exit code is 0 so that Claude
	// Code reads the answer; never 2, which blocks whatever the event.
	why := hookTrouble(err)
	if perr != nil {
		why += "; and " + perr.Error()
	}
	fmt.Fprintf(m.Stderr, "hearth hook: %s; %s\n", why, failing(policy))
	// Which event it is, even when the payload cannot be read whole (too
	// big, broken): it says what failing closed means. Read only here,
	// off the path of a call that succeeds.
	answer := claudecode.Failed(claudecode.EventName(payload), policy == config.HookDeny, why)
	if len(answer) == 0 {
		return nil
	}
	if _, err := m.Stdout.Write(answer); err != nil {
		return hookError{err}
	}
	return nil
}

// hookTrouble says what went wrong, and what to do about it.
func hookTrouble(err error) string {
	if unreachable(err) {
		return text.FirstLine(err.Error()) + " (start one with hearth serve)"
	}
	return text.FirstLine(err.Error())
}

func failing(policy string) string {
	if policy == config.HookDeny {
		return "failing closed (when_unreachable = deny): a tool use it cannot check is denied"
	}
	return "failing open (when_unreachable = allow): tool uses go ahead unchecked"
}

// hookPolicy is what a PreToolUse gets when hearth cannot answer it: the
// flag, the config's hooks.when_unreachable, or allow. A config that
// does not load fails closed when, as far as it can be read, it says
// so: a broken config must not turn a fail-closed setting into
// fail-open.
func (m *Main) hookPolicy(flag string, cfg *config.Config, cfgErr error) (string, error) {
	policy := flag
	if policy == "" {
		if cfgErr != nil {
			policy = config.HookAllow
			if path := m.configFile(); path != "" {
				if src, err := os.ReadFile(path); err == nil {
					policy = config.HookPolicyOf(src, path)
				}
			}
			return policy, fmt.Errorf("the config cannot be read (%v)", text.FirstLine(cfgErr.Error()))
		}
		policy = cfg.Hooks.WhenUnreachable
	}
	switch policy {
	case "":
		return config.HookAllow, nil
	case config.HookAllow, config.HookDeny:
		return policy, nil
	}
	// A flag that says something else meant to change the default:
	// fail closed, and say why.
	return config.HookDeny, fmt.Errorf("--when-unreachable must be %q or %q, not %q", config.HookAllow, config.HookDeny, policy)
}

func (m *Main) callHook(ctx context.Context, sock, agent string, payload []byte) ([]byte, error) {
	c, err := client.Dial(ctx, client.Options{Socket: sock, Lazy: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Hook(ctx, config.ExternalClaudeCode, agent, payload)
}

// unreachable reports whether err means no daemon could be asked (or one
// that is shutting down), as opposed to a daemon that answered with an
// error.
func unreachable(err error) bool {
	for _, e := range []error{client.ErrNoDaemon, client.ErrUnresponsive, client.ErrUnreachable, hearth.ErrClosed, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
