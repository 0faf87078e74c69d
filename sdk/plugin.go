package sdk

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// ProtocolVersion is the version of the hearth agent protocol this SDK
// speaks. go-plugin negotiates it at the handshake: a host and a plugin
// that share no version refuse to talk, with an error naming both.
const ProtocolVersion = 1

// PluginName is the name under which a plugin serves its agent.
const PluginName = "agent"

// Handshake is the go-plugin handshake shared by hearth hosts and agents.
// The cookie is not a secret; it only stops a plugin binary run by hand
// from waiting forever for a host.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "HEARTH_AGENT_PLUGIN",
	MagicCookieValue: "7d1f0c2b-hearth-agent",
}

// VersionedPlugins returns the plugin sets for every protocol version this
// SDK speaks. A plugin passes its agent; a host passes nil.
func VersionedPlugins(impl Agent, logger hclog.Logger) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &AgentPlugin{Impl: impl, Logger: logger}},
	}
}

// AgentPlugin is the go-plugin glue for an Agent. Hosts and plugins get it
// through VersionedPlugins; it is exported for tools that assemble their
// own plugin sets.
type AgentPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the agent served by a plugin; nil on the host side.
	Impl Agent
	// Logger is the plugin-side logger handed to tasks through Host.Logger.
	Logger hclog.Logger
}

// GRPCServer registers the agent's service in the plugin process.
func (p *AgentPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	logger := p.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	agentpb.RegisterAgentServer(s, newAgentServer(p.Impl, broker, logger))
	return nil
}

// GRPCClient returns, in the host process, an Agent that forwards to the
// plugin. The returned value also implements StateExporter.
func (p *AgentPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return newAgentClient(agentpb.NewAgentClient(c), broker), nil
}

var _ plugin.GRPCPlugin = (*AgentPlugin)(nil)
