//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing where the kernel has no parent-death signal;
// the SDK's parent watch ends orphaned plugins there.
func setDeathSignal(*syscall.SysProcAttr) {}

func lockThreadForever() {}
