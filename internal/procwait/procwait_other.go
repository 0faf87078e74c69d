//go:build !linux

package procwait

import (
	"syscall"
	"time"
)

// Gone reports whether process pid has exited within d. Without pidfds it
// polls; a zombie counts as running here.
func Gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !Alive(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Alive reports whether pid exists.
func Alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
