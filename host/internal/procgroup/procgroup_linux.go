package procgroup

import (
	"runtime"
	"syscall"
)

// setDeathSignal has the kernel kill the plugin when the host's spawning
// thread, which lives as long as the host, dies.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// lockThreadForever pins the calling goroutine to its thread. The goroutine
// never returns, so the thread never exits and never fires the death
// signal early.
func lockThreadForever() { runtime.LockOSThread() }
