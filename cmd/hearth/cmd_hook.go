package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
)

// hookTimeout bounds a hook's call to the daemon: it sits in front of a
// person's every tool call.
const hookTimeout = 10 * time.Second

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

When no daemon answers, the tool use goes ahead with a warning on stderr
(a host that is down must not lock a person out of their editor), unless
--when-unreachable deny, or hooks { when_unreachable = "deny" } in the
config, says otherwise. Wire it up with examples/claude-code/settings.json.`,
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
	if whenUnreachable == "" {
		whenUnreachable = config.HookAllow
		if m.configPath != "" || m.Getenv("HEARTH_CONFIG") != "" {
			cfg, err := m.loadConfig()
			if err != nil {
				return err
			}
			whenUnreachable = cfg.Hooks.WhenUnreachable
		}
	}
	if whenUnreachable != config.HookAllow && whenUnreachable != config.HookDeny {
		return usagef("--when-unreachable must be %q or %q, not %q", config.HookAllow, config.HookDeny, whenUnreachable)
	}
	payload, err := io.ReadAll(io.LimitReader(m.Stdin, claudecode.MaxPayload+1))
	if err != nil {
		return fmt.Errorf("hook: read the payload: %w", err)
	}
	// Checked here too: a broken payload gets its error without a trip
	// to the daemon, and the event tells what failing closed means.
	p, err := claudecode.Parse(payload)
	if err != nil {
		return fmt.Errorf("hook: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	sock, err := m.socketPath()
	if err != nil {
		return err
	}
	out, err := m.callHook(ctx, sock, agent, payload)
	if err == nil {
		_, err = m.Stdout.Write(out)
		return err
	}
	if !unreachable(err) {
		return fmt.Errorf("hook: %w", err)
	}
	if whenUnreachable == config.HookDeny && p.HookEventName == claudecode.PreToolUse {
		fmt.Fprintf(m.Stderr, "hearth hook: no daemon answers on %s (%v); denying the tool use (when_unreachable = deny)\n", sock, err)
		_, werr := m.Stdout.Write(claudecode.Deny(fmt.Sprintf("hearth is unreachable (no daemon on %s) and is configured to deny tool uses then; start it with hearth serve", sock)))
		return werr
	}
	fmt.Fprintf(m.Stderr, "hearth hook: warning: no daemon answers on %s (%v); %s goes ahead untracked (start one with hearth serve)\n", sock, err, p.HookEventName)
	return nil
}

func (m *Main) callHook(ctx context.Context, sock, agent string, payload []byte) ([]byte, error) {
	c, err := client.Dial(ctx, client.Options{Socket: sock, Lazy: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Hook(ctx, config.ExternalClaudeCode, agent, payload)
}

// unreachable reports whether err means no daemon could be asked, as
// opposed to a daemon that answered with an error.
func unreachable(err error) bool {
	if errors.Is(err, client.ErrNoDaemon) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable
}
