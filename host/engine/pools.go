package engine

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/matcher"
)

// The engine's pools: each is made from its agent's config block mapped
// to a pool.Spec, and reaches the store through sessionStore. The pool
// imports neither package config nor package store: this file is where
// the three meet.

// newPool makes the pool of agent a.
func (e *Engine) newPool(a *config.Agent, m config.Matcher) (*pool.Pool, error) {
	sp, err := e.poolSpec(a, m)
	if err != nil {
		return nil, err
	}
	return pool.New(sp, pool.Deps{
		Store: sessionStore{e.store}, Events: (*poolEvents)(e), Guards: e.guardSet, TLS: e.tls,
		Logger: e.logger, Now: e.now, Closing: e.closing, HardStop: e.hardStop, Telemetry: e.telemetry,
		Learned: func(session string) {
			if e.cluster != nil {
				e.cluster.Learned(session)
			}
		},
	})
}

// poolSpec maps agent a's config block, with the matcher block m, to
// the plain values its pool runs with: its program (bundled agents are
// resolved here), the whole environment its plugins start with, how
// they are confined.
func (e *Engine) poolSpec(a *config.Agent, m config.Matcher) (pool.Spec, error) {
	argv, bundledEnv, err := e.command(a)
	if err != nil {
		return pool.Spec{}, err
	}
	sp := PoolSettings(a, m)
	if a.External == "" {
		sp.Launch = process.Launch{
			Argv: argv, Env: pluginEnv(a, bundledEnv), Dir: a.Workspace, SHA256: a.SHA256,
			Confine:      confinement(a, argv, e.protect, e.blobDir),
			StartTimeout: a.StartTimeout, HealthInterval: a.HealthInterval,
			Vouch: e.vouch(),
		}
	} else {
		// No process; its exports and imports of state (none) would be
		// bounded by it.
		sp.Launch.StartTimeout = a.StartTimeout
	}
	return sp, nil
}

// PoolSettings maps agent a's config block, with the matcher block m,
// to its pool's settings with the pool's defaults applied
// (pool.Spec.WithDefaults): what the pool runs with, less how its
// plugins start. `hearth agents list`, the reaper's interval and the
// cluster's scoring read the pool's values through it, so that none of
// them applies a default of its own.
func PoolSettings(a *config.Agent, m config.Matcher) pool.Spec {
	sp := pool.Spec{
		Agent: a.Name, External: a.External, Workspace: a.Workspace,
		Capacity: a.Capacity, TaskTimeout: a.TaskTimeout, RequireChecks: a.RequireChecks,
		MaxSessions: a.Pool.MaxSessions, IdleTimeout: a.Pool.IdleTimeout, MaxDormant: a.Pool.MaxDormant,
		WhenFull: a.Pool.WhenFull, Placement: a.Pool.Placement,
		Fingerprint: pool.Limits{MaxFiles: a.Fingerprint.MaxFiles, MaxDirectories: a.Fingerprint.MaxDirectories, MaxTechnologies: a.Fingerprint.MaxTechnologies},
		// Its IdleTimeout is the pool's, which WithDefaults gives it.
		Matcher: matcher.Config{Weights: m.Weights, Threshold: m.Threshold, TopK: m.TopK},
	}
	if a.Model != nil {
		sp.Model = a.Model.Model
	}
	return sp.WithDefaults()
}

// pluginEnv is the whole environment a plugin of a starts with: the host
// variables the agent block passes (pass_env, or config.DefaultPassEnv),
// then its env, then what the bundled agent needs. Nothing else of the
// host's environment (tokens, cloud keys) reaches a plugin; go-plugin's
// own variables are added by process.
func pluginEnv(a *config.Agent, bundled []string) []string {
	pass := a.PassEnv
	if pass == nil {
		pass = config.DefaultPassEnv
	}
	var out []string
	for _, name := range pass {
		if v, ok := os.LookupEnv(name); ok {
			out = append(out, name+"="+v)
		}
	}
	var env []string
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	out = append(out, env...)
	return append(out, bundled...)
}

// confinement is how the plugins of a, whose program is argv, are
// confined, nil for not at all: what its block grants, and never what
// protect names or the run files outside blobs. Its grants are pinned as
// they lead now, when the config is loaded (a reload that keeps the
// definition keeps the first pins: pool.Update).
func confinement(a *config.Agent, argv, protect []string, blobs string) *process.Confinement {
	if a.Confinement == config.ConfinementOff {
		return nil
	}
	return &process.Confinement{
		Require:     a.Confinement == config.ConfinementRequire,
		Read:        a.ReadPaths,
		Write:       a.WritePaths,
		Protect:     protect,
		Blobs:       blobs,
		RestrictTCP: a.ConnectPorts != nil,
		ConnectTCP:  a.ConnectPorts,
		Pins:        process.PinGrants(a.Workspace, a.ReadPaths, a.WritePaths, argv),
	}
}

// restorePools loads the sessions of the agents of pools from the store.
func (e *Engine) restorePools(pools map[string]*pool.Pool) error {
	recs, err := e.store.SessionRecords()
	if err != nil {
		return fmt.Errorf("engine: read sessions: %w", err)
	}
	byAgent := make(map[string][]record.Session)
	for _, r := range recs {
		byAgent[r.Agent] = append(byAgent[r.Agent], r)
	}
	for name, p := range pools {
		if err := p.Restore(byAgent[name]); err != nil {
			return err
		}
	}
	return nil
}

// sessionStore is the store as the pools' pool.SessionStore.
type sessionStore struct{ *store.Store }

func (s sessionStore) SaveSession(rec record.Session) pool.Pending { return s.Store.SaveSession(rec) }

func (s sessionStore) SaveSessionState(rec record.Session, state []byte) pool.Pending {
	return s.Store.SaveSessionState(rec, state)
}

func (s sessionStore) SessionState(id string) ([]byte, bool, error) {
	state, err := s.Store.SessionState(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return state, err == nil, err
}

func (s sessionStore) AppendBatch(evs []hearth.Event) (uint64, pool.Pending) {
	return s.Store.AppendBatch(evs)
}

var _ pool.SessionStore = sessionStore{}
