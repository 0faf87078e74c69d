package pool

import (
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
)

// confinement is how the plugins of a are confined, nil for not at all.
func confinement(a *config.Agent, protect []string, blobs string, pins process.Pins) *process.Confinement {
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
		Pins:        pins,
	}
}

// newSpec is agent a's spec, its grants pinned as they lead now: when
// the config is loaded.
func newSpec(a *config.Agent, m config.Matcher, argv, env []string) *spec {
	sp := &spec{cfg: a, mcfg: m.For(a), argv: argv, env: pluginEnv(a, env)}
	if a.Confinement != config.ConfinementOff && a.External == "" {
		sp.pins = process.PinGrants(a.Workspace, a.ReadPaths, a.WritePaths, argv)
	}
	return sp
}
