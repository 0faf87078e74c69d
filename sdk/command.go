package sdk

import (
	"context"
	"os/exec"
)

// Command is exec.CommandContext for the processes an agent starts (a
// compiler, a test runner, a shell). On Linux the process is also killed
// when the agent's plugin process dies, so a host killed with kill -9
// leaves none of them behind: the host's own death signal reaches the
// plugin, and this one reaches the plugin's children.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	setDeathSignal(cmd)
	return cmd
}
