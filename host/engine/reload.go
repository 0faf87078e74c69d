package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/pool"
)

// ReloadReport says what a reload changed.
type ReloadReport struct {
	// Agents by what happened to them. A changed agent's program, env,
	// workspace, capacity or timeouts differ: its live sessions finish
	// their tasks and are retired, and new sessions start with the new
	// definition. Unchanged agents' sessions are not disturbed; their
	// pool and the matcher take new settings at once.
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Unchanged []string `json:"unchanged"`
	Guards    int      `json:"guards"`
	Pipelines int      `json:"pipelines"`
	// Warnings are settings a running host cannot take.
	Warnings []string `json:"warnings,omitempty"`
}

// Reload swaps in cfg, which must have been loaded and validated whole
// (config.Load): guards, pipelines, agents, pools and the matcher change
// together, or, when an agent's program cannot be resolved, not at all.
// The data directory cannot change under a running host.
func (e *Engine) Reload(cfg *config.Config) (ReloadReport, error) {
	var rep ReloadReport
	select {
	case <-e.closing:
		return rep, hearth.ErrClosed
	default:
	}
	type plan struct {
		a          *config.Agent
		spec       pool.Spec
		p          *pool.Pool
		stale, add bool
	}
	e.mu.Lock()
	var plans []plan
	for _, a := range cfg.Agents {
		pl := plan{a: a, p: e.pools[a.Name]}
		var err error
		if pl.spec, err = e.poolSpec(a, cfg.Matcher); err == nil {
			err = pl.spec.Check()
		}
		if err != nil {
			e.mu.Unlock()
			return ReloadReport{}, fmt.Errorf("reload rejected, nothing changed: %w", err)
		}
		switch {
		case pl.p == nil:
			pl.add = true
			rep.Added = append(rep.Added, a.Name)
		case sameProgram(e.cfg.Agent(a.Name), a):
			rep.Unchanged = append(rep.Unchanged, a.Name)
		default:
			pl.stale = true
			rep.Changed = append(rep.Changed, a.Name)
		}
		plans = append(plans, pl)
	}
	pools := make(map[string]*pool.Pool, len(plans))
	added := make(map[string]*pool.Pool)
	for _, pl := range plans {
		if pl.add {
			p, err := e.newPool(pl.a, cfg.Matcher)
			if err != nil {
				e.mu.Unlock()
				return ReloadReport{}, fmt.Errorf("reload rejected, nothing changed: %w", err)
			}
			pools[pl.a.Name], added[pl.a.Name] = p, p
		} else {
			pools[pl.a.Name] = pl.p
		}
	}
	var removed []*pool.Pool
	for name, p := range e.pools {
		if _, ok := pools[name]; !ok {
			rep.Removed = append(rep.Removed, name)
			removed = append(removed, p)
		}
	}
	if cfg.DataDir != e.cfg.DataDir {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("data_dir changed from %s to %s: a running host keeps its data directory; restart it to use the new one", e.cfg.DataDir, cfg.DataDir))
		c := *cfg
		c.DataDir = e.cfg.DataDir
		cfg = &c
	}
	for _, pl := range plans {
		if !pl.add {
			// Checked above: Update takes it.
			_ = pl.p.Update(pl.spec, pl.stale)
		}
	}
	for _, p := range removed {
		p.Drain()
	}
	e.retiring = append(e.retiring, removed...)
	e.cfg, e.pools = cfg, pools
	e.guards.Store(cfg.GuardSet())
	e.mu.Unlock()

	if err := e.restorePools(added); err != nil {
		e.logger.Warn("reload: cannot restore the sessions of added agents", "error", err)
	}
	if e.cluster != nil {
		e.cluster.Reloaded(len(added) > 0)
	}
	rep.Guards, rep.Pipelines = len(cfg.Guards), len(cfg.Pipelines)
	for _, list := range [][]string{rep.Added, rep.Removed, rep.Changed, rep.Unchanged} {
		slices.Sort(list)
	}
	e.emit(hearth.Event{Kind: hearth.EventConfigReloaded, Message: fmt.Sprintf("config reloaded: %d agents added, %d removed, %d changed, %d unchanged; %d guards",
		len(rep.Added), len(rep.Removed), len(rep.Changed), len(rep.Unchanged), rep.Guards)})
	return rep, nil
}

// sameProgram reports whether two definitions of an agent run the same
// program the same way, so that its live sessions can stay.
func sameProgram(a, b *config.Agent) bool {
	return a.Bundled == b.Bundled && slices.Equal(a.Command, b.Command) && a.External == b.External && a.SHA256 == b.SHA256 &&
		maps.Equal(a.Env, b.Env) && slices.Equal(a.PassEnv, b.PassEnv) && a.Workspace == b.Workspace && a.Capacity == b.Capacity &&
		a.StartTimeout == b.StartTimeout && a.TaskTimeout == b.TaskTimeout && a.HealthInterval == b.HealthInterval
}
