package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/text"
)

// protected are the paths no confined plugin may reach, wherever its
// grants lie: the data directory (the host's records, its socket by
// default, its token) and a token file kept elsewhere.
func protected(cfg *config.Config) []string {
	out := []string{cfg.DataDir}
	if cfg.Server.TokenFile != "" {
		out = append(out, cfg.Server.TokenFile)
	}
	return out
}

// blobs is the store's directory of run files, made now if need be: a
// confined plugin reads its tasks' files there by name, and Landlock can
// only grant a directory that exists when the plugin starts.
func (e *Engine) blobs() string {
	dir := e.store.FilesDir()
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.logger.Warn("confined plugins will not read run files", "dir", dir, "error", err)
		return ""
	}
	return dir
}

// checkConfinement says, once at start, whether the agents' plugins will
// run confined, and refuses to start when an agent requires confinement
// that this system cannot give.
func (e *Engine) checkConfinement() error {
	var agents []*config.Agent
	var confined []string
	for _, a := range e.cfg.Agents {
		if a.External != "" || a.Confinement == config.ConfinementOff {
			continue
		}
		agents, confined = append(agents, a), append(confined, a.Name)
	}
	if len(confined) == 0 {
		return nil
	}
	st := process.Landlock()
	if st.Available() {
		e.logger.Info("plugins run confined", "landlock_abi", st.ABI, "agents", confined)
		if err := process.Cgroups(); err != nil {
			e.logger.Warn("plugins get no cgroup of their own: the daemon knows their processes by no_new_privs and seccomp, and refuses clients under other such sandboxes too (docs/confinement.md)",
				"reason", err, "fix", "run hearth as root, or in a delegated cgroup: systemd-run --user -p Delegate=yes hearth serve")
		}
		var inside []string
		for _, a := range agents {
			if a.Workspace != "" && paths.Within(paths.Abs(e.cfg.DataDir), paths.Abs(a.Workspace)) {
				inside = append(inside, a.Name)
			}
		}
		if len(inside) > 0 {
			fix := "move data_dir out of the workspace"
			if e.cfg.DataDirMove != "" {
				// The .hearth of an earlier version: the new default is
				// outside every workspace (paths.DefaultDataDir).
				fix = fmt.Sprintf("with no hearth running on it, move it to the new default: mkdir -p %s && mv %s %s",
					text.ShellQuote(filepath.Dir(e.cfg.DataDirMove)), text.ShellQuote(e.cfg.DataDir), text.ShellQuote(e.cfg.DataDirMove))
			}
			e.logger.Warn("the data directory is inside the workspace of these agents: their plugins can neither list nor add entries on the way to it",
				"agents", inside, "data_dir", e.cfg.DataDir, "fix", fix)
		}
		return nil
	}
	for _, a := range agents {
		if a.Confinement == config.ConfinementRequire {
			return fmt.Errorf("%w: agent %q requires confinement (confinement = \"require\"), but %s; run hearth on a Linux kernel with Landlock, or set confinement = \"auto\" to run its plugins unconfined here",
				hearth.ErrConfinement, a.Name, st)
		}
	}
	e.logger.Warn("plugins run UNCONFINED: they can read and write whatever this user can", "reason", st.Reason, "agents", confined,
		"fix", `confinement = "require" refuses to start them instead; "off" says unconfined is meant`)
	return nil
}
