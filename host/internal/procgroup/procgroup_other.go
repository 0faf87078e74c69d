//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing where the kernel has no parent-death signal;
// the SDK's parent watch ends orphaned plugins there.
func setDeathSignal(*syscall.SysProcAttr) {}

func lockThreadForever() {}

// waitExited cannot wait without reaping here; the group is killed when
// the plugin is stopped.
func waitExited(int) bool { return false }
