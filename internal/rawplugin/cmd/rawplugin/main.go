// Command rawplugin serves the raw baseline plugin as its own binary, for
// cold-start benchmarks that compare like with like.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/hearth-dev/hearth/internal/rawplugin"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: agentplugin.Handshake,
		Plugins:         plugin.PluginSet{rawplugin.Name: rawplugin.Plugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
