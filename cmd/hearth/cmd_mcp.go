package main

import (
	"context"
	"errors"
	"io"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/mcp"
)

func (m *Main) mcpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve hearth to an MCP client (Claude Code, an IDE, a chat client) over stdio",
		Long: `Serve hearth as a Model Context Protocol server on stdin and stdout, so
that an agent orchestrating other agents hands parts of its job to
hearth's warm sessions: submit a task with its hints, advise placement,
list and show sessions, start and follow a run, show a run.

Like every command, it works through the daemon when one serves the data
directory, and runs hearth in this process otherwise. The daemon also
serves MCP over HTTP at /mcp, behind its token. examples/mcp shows how to
add hearth to Claude Code and to a desktop MCP client.`,
		Example: `  claude mcp add hearth -- hearth --config /path/to/hearth.hcl mcp
  hearth mcp   # then speak JSON-RPC on stdin`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.withService(cmd.Context(), m.loadConfig, func(ctx context.Context, svc hearth.Service, t *target) error {
				srv := mcp.New(svc, mcp.Options{Version: buildInfo().Version})
				err := srv.Run(ctx, &gomcp.IOTransport{Reader: io.NopCloser(m.Stdin), Writer: nopCloser{m.wire}})
				// The client closing stdin is how an MCP session ends.
				if errors.Is(err, io.EOF) || errors.Is(err, gomcp.ErrConnectionClosed) {
					return nil
				}
				return err
			})
		},
	}
}

// nopCloser is a writer whose Close leaves it open: the process's stdout
// outlives the MCP session on it.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
