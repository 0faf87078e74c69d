//go:build !linux

package procgroup

import (
	"errors"
	"syscall"
)

// Cgroups is where this host makes its plugins' cgroups: nowhere, on a
// system without cgroups.
type Cgroups struct{ Root, Dir, Rel string }

// HostCgroups reports that this system has no cgroups.
func HostCgroups() (*Cgroups, error) { return nil, errors.New("cgroups are a Linux feature") }

// CgroupsOffForTesting does nothing here.
func CgroupsOffForTesting() (restore func()) { return func() {} }

// CgroupOf reports that this system has no cgroups.
func CgroupOf(int) (string, error) { return "", errors.New("cgroups are a Linux feature") }

type pluginCgroup struct{ rel string }

func newPluginCgroup() *pluginCgroup              { return nil }
func (*pluginCgroup) attach(*syscall.SysProcAttr) {}
func (*pluginCgroup) started()                    {}
func (*pluginCgroup) kill() error                 { return nil }
func (*pluginCgroup) remove()                     {}
