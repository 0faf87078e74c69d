// Command rawplugin serves the raw baseline plugin as its own binary, for
// cold-start benchmarks that compare like with like.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/hearth-dev/hearth/internal/rawplugin"
	"github.com/hearth-dev/hearth/sdk"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         plugin.PluginSet{rawplugin.Name: rawplugin.Plugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
