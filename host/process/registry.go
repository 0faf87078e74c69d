package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
	// Sandboxed: the process is known only to run under a confined
	// plugin's no_new_privs and seccomp filter (shimmed), not whose.
	Sandboxed bool
}

func (o Owner) String() string {
	if o.Sandboxed {
		return "a process under a confined plugin's sandbox (no_new_privs and a seccomp filter, which nothing it starts can shed; this host cannot make cgroups to tell whose)"
	}
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
	o := Owner{Agent: r.agent, Session: r.session, PID: r.PID()}
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
// Then the process's ancestors, process group and session are looked at,
// which name the plugin more often than not, but which a descendant
// leaves with setsid once its parent has exited. Where the host has no
// cgroups, a process with no_new_privs and a seccomp filter (shimmed),
// which every process under a confined plugin has for good, is taken for
// one too. docs/confinement.md says where each holds.
func PluginOf(pid int) (Owner, bool) {
	if o, ok := inPluginCgroup(pid); ok {
		return o, true
	}
	if o, ok := inPluginTree(pid); ok {
		return o, true
	}
	if _, err := procgroup.HostCgroups(); err != nil && shimmed(pid) {
		// No cgroups to tell plugins apart: what the shim gave every
		// confined plugin, and no process it starts can shed.
		return Owner{Sandboxed: true}, true
	}
	return Owner{}, false
}

// inPluginTree reports whether one of process pid's ancestors, its
// process group or its session is a running plugin's.
func inPluginTree(pid int) (Owner, bool) {
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

// shimmed reports whether process pid runs with no_new_privs and a
// seccomp filter, as the shim leaves every confined plugin: both are
// inherited by every process it starts and can never be cleared. Other
// sandboxes set them too (a systemd unit with NoNewPrivileges= and
// SystemCallFilter=), so this is asked only where the host has no
// cgroups to tell its plugins by: a client of the daemon run under such
// a sandbox is refused there, and says why.
func shimmed(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	var nnp, filters bool
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "NoNewPrivs":
			nnp = v == "1"
		case "Seccomp_filters":
			n, err := strconv.Atoi(v)
			filters = err == nil && n > 0
		}
	}
	return nnp && filters
}

// Cgroups reports why this host cannot give its plugins cgroups of their
// own, nil when it can (package host/internal/procgroup).
func Cgroups() error {
	_, err := procgroup.HostCgroups()
	return err
}
