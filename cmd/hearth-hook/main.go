// Command hearth-hook is a Claude Code command hook that starts in about
// a millisecond (package plugins/claude/relay): for tracked sessions it
// posts each hook's payload to the hearth daemon's hook endpoint, with
// the daemon's token read from its data directory,
//
//	hearth-hook --data-dir ~/.hearth --when-unreachable deny
//
// and for a managed session's agent (the claude_code block's hook_relay)
// it hands the payload to the agent's socket (--socket PATH). It prints
// the answer for Claude Code to read.
package main

import (
	"os"

	"github.com/hearth-dev/hearth/plugins/claude/relay"
)

func main() {
	os.Exit(relay.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
