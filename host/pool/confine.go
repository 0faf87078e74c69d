package pool

import (
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
)

// confinement is how the plugins of a are confined, nil for not at all.
func confinement(a *config.Agent, protect []string, blobs string) *process.Confinement {
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
	}
}
