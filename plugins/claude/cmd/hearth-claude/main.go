// Command hearth-claude serves the managed Claude Code agent as a
// standalone plugin binary, for hosts that run it by path instead of as a
// bundled agent. Its settings come from the environment (see the agent's
// README):
//
//	agent "coder" {
//	  command = ["./hearth-claude"]
//	  claude_code {
//	    model         = "claude-sonnet-4-5"
//	    allowed_tools = ["Read", "Edit", "Bash(go test:*)"]
//	  }
//	}
//
// It is also the relay the agent's hooks run (claude.HookArg).
package main

import (
	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

func main() {
	claude.RelayIfRequested()
	plugin.Serve(claude.NewFromEnv())
}
