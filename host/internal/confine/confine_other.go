//go:build !linux

package confine

import (
	"errors"
	"os"
	"os/exec"
)

func probe() Status { return Status{Reason: "Landlock is a Linux feature"} }

// Attach is never called where Probe finds no Landlock.
func (p *Policy) Attach(cmd *exec.Cmd) (*os.File, error) {
	return nil, errors.New("confinement is a Linux feature")
}
