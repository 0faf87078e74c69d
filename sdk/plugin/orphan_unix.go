//go:build unix

package plugin

import (
	"os"
	"syscall"
)

// orphaned ends a plugin whose host died. A plugin started by a hearth
// host leads its own process group, so killing the group also takes any
// processes the agent started.
func orphaned() {
	if syscall.Getpgrp() == os.Getpid() {
		_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
	}
	os.Exit(3)
}
