// Package plugin runs hearth agents as go-plugin plugins: Serve on the
// agent's side, VersionedPlugins and the Remote agent it dispenses on the
// host's side, the mutual TLS both use (HostTLS), and the translation
// between the contract of package sdk and the protobuf wire
// (sdk/internal/agentpb), whose generated types never appear in a
// signature. The wire protocol is documented in docs/protocol.md.
package plugin

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// ProtocolVersion is the version of the hearth agent protocol this SDK
// serves. go-plugin negotiates it at the handshake: a host offers the
// versions it speaks, the plugin picks the newest it shares, and a host
// and a plugin that share none refuse to talk, with an error naming both.
// Plugins built with this SDK serve version 2 only; hosts built with it
// speak 2 and 1, so plugins built before version 2 keep working.
const ProtocolVersion = 2

// PluginName is the name under which a plugin serves its agent.
const PluginName = "agent"

// Handshake is the go-plugin handshake shared by hearth hosts and agents.
// The cookie is not a secret; it only stops a plugin binary run by hand
// from waiting forever for a host.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "HEARTH_AGENT_PLUGIN",
	MagicCookieValue: "7d1f0c2b-hearth-agent",
}

// VersionedPlugins returns the plugin sets for the protocol versions this
// SDK speaks. A plugin passes its agent and serves version 2 only; a host
// passes nil and speaks versions 2 and 1.
func VersionedPlugins(impl sdk.Agent, logger hclog.Logger) map[int]goplugin.PluginSet {
	if impl != nil {
		return map[int]goplugin.PluginSet{
			ProtocolVersion: {PluginName: &AgentPlugin{Impl: impl, Logger: logger, Protocol: ProtocolVersion}},
		}
	}
	return HostPlugins(logger, HostOptions{})
}

// HostPlugins returns the plugin sets a host dispenses agents from, for
// the protocol versions this SDK speaks (2 and 1), with o.
func HostPlugins(logger hclog.Logger, o HostOptions) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		ProtocolVersion: {PluginName: &AgentPlugin{Logger: logger, Protocol: ProtocolVersion, Host: o}},
		1:               {PluginName: &AgentPlugin{Logger: logger, Protocol: 1, Host: o}},
	}
}

// AgentPlugin is the go-plugin glue for an Agent. Hosts and plugins get it
// through VersionedPlugins; it is exported for tools that assemble their
// own plugin sets.
type AgentPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	// Impl is the agent served by a plugin; nil on the host side.
	Impl sdk.Agent
	// Logger is the plugin-side logger handed to tasks through Callbacks.Logger.
	Logger hclog.Logger
	// Protocol is the protocol version the glue speaks; zero means
	// ProtocolVersion. Only a host speaks version 1.
	Protocol int
	// Host is the host's side's options; unused by a plugin.
	Host HostOptions
	// tracing, set by Serve, is the plugin process's tracing, installed
	// when a host that traces attaches.
	tracing *pluginTracing

	mu      sync.Mutex
	servers []*agentServer
}

// Remote is the host's view of an agent in a plugin process: the value
// AgentPlugin.GRPCClient returns, and what a host dispenses. Its Run also
// carries the version-1 protocol for plugins built before version 2.
type Remote interface {
	sdk.Agent
	// ExportState and ImportState reach the plugin's agent; an agent that
	// does not implement StateExporter answers ErrStateNotSupported.
	sdk.StateExporter
	// ExportsState reports whether the plugin's agent implements
	// StateExporter, as its last Describe said: false until Describe
	// returns. Hosts call Describe first, right after the plugin starts.
	ExportsState() bool
	// Protocol is the protocol version negotiated with the plugin.
	Protocol() int
}

// GRPCServer registers the agent's service in the plugin process.
func (p *AgentPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	logger := p.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	srv := newAgentServer(p.Impl, broker, logger)
	srv.tracing = p.tracing
	p.mu.Lock()
	p.servers = append(p.servers, srv)
	p.mu.Unlock()
	agentpb.RegisterAgentServer(s, srv)
	return nil
}

// Close closes the connections to the host's callbacks that the agent
// servers registered by p opened. A plugin process never needs it (its
// connections end with it); a test that serves an agent in its own
// process (the conformance harness) calls it once the server stopped, so that
// no gRPC connection outlives the test.
func (p *AgentPlugin) Close() error {
	p.mu.Lock()
	servers := p.servers
	p.servers = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range servers {
		s.mu.Lock()
		if s.conn != nil {
			errs = append(errs, s.conn.Close())
			s.conn, s.host = nil, nil
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// GRPCClient returns, in the host process, a Remote: an Agent that
// forwards to the plugin, and also tells whether the plugin's agent
// exports its state (Remote.ExportsState).
func (p *AgentPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	v := p.Protocol
	if v == 0 {
		v = ProtocolVersion
	}
	ac := newAgentClient(agentpb.NewAgentClient(c), broker, v)
	ac.host = p.Host
	return ac, nil
}

var _ goplugin.GRPCPlugin = (*AgentPlugin)(nil)
