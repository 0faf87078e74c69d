//go:build !linux

package sdktest

import (
	"syscall"
	"time"
)

// waitExit reports whether process pid has exited within d. Without
// pidfds it polls; a zombie counts as running here.
func waitExit(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
