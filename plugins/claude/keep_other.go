//go:build !linux

package claude

import "os/exec"

// KeepArg is the argument that makes this program the keeper of one
// claude run on Linux (keep_linux.go); elsewhere claude runs directly.
const KeepArg = "__hearth-claude-keep"

func (a *Agent) keepCommand(*exec.Cmd) {}

func keepIfRequested() {}
