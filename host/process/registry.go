package process

import (
	"context"
	"fmt"
	"os"
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
	plugins.byPID[r.PID()] = pluginEntry{Owner{r.agent, r.session, r.PID()}, r.Exited()}
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

// PluginOf reports whether process pid is a plugin this process started
// and runs, or was started by one: one of its ancestors is a plugin, or
// it is in a plugin's process group or session (a plugin's child that
// was re-parented after its parent exited stays in them unless it leaves
// them on purpose; docs/confinement.md says what remains).
func PluginOf(pid int) (Owner, bool) {
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
