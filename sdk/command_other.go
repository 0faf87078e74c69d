//go:build !linux

package sdk

import "os/exec"

// setDeathSignal does nothing where the kernel has no parent-death signal;
// the plugin's group is killed when it is stopped.
func setDeathSignal(*exec.Cmd) {}
