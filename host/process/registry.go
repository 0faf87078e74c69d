package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hearth-dev/hearth/host/internal/procgroup"
	"github.com/hearth-dev/hearth/internal/procwait"
)

// The plugins this process started, by PID, so that the daemon can
// refuse API connections from them (and from what they start): a plugin
// is confined to its workspace, and the daemon's socket would give it
// every run and session. Entries of exited plugins are dropped as new
// ones come.
var plugins struct {
	sync.Mutex
	byPID map[int]pluginEntry
	// byCgroup names the plugin each cgroup was made for, while the
	// cgroup exists: its processes may outlive the plugin for the moment
	// the kill takes.
	byCgroup map[string]Owner
}

type pluginEntry struct {
	owner  Owner
	exited <-chan struct{}
}

// Owner names a plugin process: its agent, session and PID.
type Owner struct {
	Agent, Session string
	PID            int
}

func (o Owner) String() string {
	return fmt.Sprintf("a plugin of agent %q (session %s)", o.Agent, o.Session)
}

// registering is the plugin's runner as go-plugin sees it: it records the
// process once it has started, before the handshake, when the plugin's
// code first runs.
type registering struct {
	*procgroup.Runner
	agent, session string
}

func (r registering) Start(ctx context.Context) error {
	if err := r.Runner.Start(ctx); err != nil {
		return err
	}
	plugins.Lock()
	defer plugins.Unlock()
	if plugins.byPID == nil {
		plugins.byPID = make(map[int]pluginEntry)
	}
	for pid, e := range plugins.byPID {
		if gone(e.exited) {
			delete(plugins.byPID, pid)
		}
	}
	o := Owner{r.agent, r.session, r.PID()}
	plugins.byPID[r.PID()] = pluginEntry{o, r.Exited()}
	if cg := r.Cgroup(); cg != "" {
		if plugins.byCgroup == nil {
			plugins.byCgroup = make(map[string]Owner)
		}
		for c := range plugins.byCgroup {
			if hc, err := procgroup.HostCgroups(); err == nil {
				if _, err := os.Stat(filepath.Join(hc.Root, c)); errors.Is(err, fs.ErrNotExist) {
					delete(plugins.byCgroup, c)
				}
			}
		}
		plugins.byCgroup[cg] = o
	}
	return nil
}

func gone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// running returns the running plugin with pid.
func running(pid int) (Owner, bool) {
	plugins.Lock()
	defer plugins.Unlock()
	e, ok := plugins.byPID[pid]
	if !ok || gone(e.exited) {
		return Owner{}, false
	}
	return e.owner, true
}

// PluginOf reports whether process pid is a plugin this process started,
// or was started by one. Where the host gives its plugins cgroups
// (package host/internal/procgroup), a process in one of them is, by a
// property no confined process can change: nothing it does moves it out.
// Elsewhere, and for what is not in one, the process's ancestors, process
// group and session are looked at: a plugin's child that was re-parented
// after its parent exited stays in them unless it leaves them on purpose
// (setsid), which the cgroup catches and this does not;
// docs/confinement.md says where each holds.
func PluginOf(pid int) (Owner, bool) {
	if o, ok := inPluginCgroup(pid); ok {
		return o, true
	}
	self := os.Getpid()
	for p, hops := pid, 0; p > 1 && p != self && hops < 64; hops++ {
		if o, ok := running(p); ok {
			return o, true
		}
		st, err := procwait.ReadStat(p)
		if err != nil {
			break
		}
		if o, ok := running(st.PGRP); ok && st.PGRP != self {
			return o, true
		}
		if o, ok := running(st.Session); ok && st.Session != self {
			return o, true
		}
		p = st.PPID
	}
	return Owner{}, false
}

// inPluginCgroup reports whether process pid runs in a cgroup this host
// made for a plugin, and whose.
func inPluginCgroup(pid int) (Owner, bool) {
	hc, err := procgroup.HostCgroups()
	if err != nil {
		return Owner{}, false
	}
	cg, err := procgroup.CgroupOf(pid)
	if err != nil {
		return Owner{}, false
	}
	rest, ok := strings.CutPrefix(cg, hc.Rel+"/")
	if !ok {
		return Owner{}, false
	}
	leaf, _, _ := strings.Cut(rest, "/")
	plugins.Lock()
	defer plugins.Unlock()
	if o, ok := plugins.byCgroup[hc.Rel+"/"+leaf]; ok {
		return o, true
	}
	// Made by this host for a plugin, whichever: a process there is one
	// of them.
	return Owner{Agent: "?", Session: "?"}, true
}
