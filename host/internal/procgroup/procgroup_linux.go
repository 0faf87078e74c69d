package procgroup

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// setDeathSignal has the kernel kill the plugin when the host's spawning
// thread, which lives as long as the host, dies.
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// lockThreadForever pins the calling goroutine to its thread. The goroutine
// never returns, so the thread never exits and never fires the death
// signal early.
func lockThreadForever() { runtime.LockOSThread() }

// waitExited waits until process pid has exited, without reaping it, and
// reports whether it did (false: it could not wait, as for a process that
// is not our child).
func waitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
