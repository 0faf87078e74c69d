package plugin

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/hearth-dev/hearth/sdk"
)

// EnvLogLevel is the environment variable through which a host tells its
// plugins how verbosely to log.
const EnvLogLevel = "HEARTH_PLUGIN_LOG_LEVEL"

// EnvVouch is the environment variable through which a host of a cluster
// tells its plugins how long they may go on without hearing from it: a
// duration (Go's syntax). The plugin's gRPC server pings the host once
// the connection has been silent for about half of it and closes the
// connection when the host has not answered by the end of it; the
// task's context then ends (sdk.Agent.Run's ctx), and an agent that
// honours it stops. A host that is paused (SIGSTOP, a VM pause) cannot
// answer, so its plugins stop within this bound, which the host sets
// below its cluster lease's remaining time: work that another host may
// take over once the lease expires is stopped before it does
// (docs/cluster.md, "Fencing"). Unset, a plugin waits for its host
// however long it is paused.
const EnvVouch = "HEARTH_PLUGIN_VOUCH"

// parentPollInterval is how often a plugin checks that its host is alive.
// Pdeathsig usually kills a plugin the moment its host dies; the watch is
// for systems without it and for the case where Linux delivers it early or
// not at all (it follows the parent thread, not the process:
// golang/go#27505).
const parentPollInterval = 200 * time.Millisecond

// Serve serves a as a hearth agent plugin and does not return. It is the
// whole main of an agent binary:
//
//	func main() { plugin.Serve(myagent.New()) }
//
// Run by hand rather than by a hearth host, it prints a short explanation
// and exits with status 1.
func Serve(a sdk.Agent) {
	// go-plugin replaces os.Stderr with a pipe once serving starts; the
	// log must go to the real stderr, where the host parses it as JSON
	// and files it under the agent's and session's names.
	logger := hclog.New(&hclog.LoggerOptions{
		Output:     os.Stderr,
		JSONFormat: true,
		Level:      hclog.LevelFromString(os.Getenv(EnvLogLevel)),
	})
	go watchParent(os.Getppid(), parentPollInterval, orphaned)
	plugins := VersionedPlugins(a, logger)
	for _, set := range plugins {
		set[PluginName].(*AgentPlugin).tracing = processTracing
	}
	cfg := &goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: plugins,
		GRPCServer:       grpcServer(os.Getenv(EnvVouch)),
		Logger:           logger,
	}
	tlsConfig, err := pluginTLS()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hearth agent: cannot set up TLS with the host: %v\n", err)
		os.Exit(1)
	}
	if tlsConfig != nil {
		// A hearth host provided the keys; without them, go-plugin's own
		// AutoMTLS applies.
		cfg.TLSProvider = func() (*tls.Config, error) { return tlsConfig, nil }
	}
	goplugin.Serve(cfg)
}

// grpcServer makes the plugin's gRPC server: with keep-alive pings that
// give up on a silent host within vouch (EnvVouch), when set.
func grpcServer(vouch string) func([]grpc.ServerOption) *grpc.Server {
	p, ok := vouchParams(vouch)
	if !ok {
		return goplugin.DefaultGRPCServer
	}
	return func(opts []grpc.ServerOption) *grpc.Server {
		return grpc.NewServer(append(opts, grpc.KeepaliveParams(p))...)
	}
}

// minPingTime is gRPC's least interval between a server's pings.
const minPingTime = time.Second

// vouchParams are the keep-alive parameters that close a silent
// connection within vouch: a ping after Time of silence, answered
// within Timeout. ok is false for an unset or unreadable vouch.
func vouchParams(vouch string) (keepalive.ServerParameters, bool) {
	d, err := time.ParseDuration(vouch)
	if vouch == "" || err != nil || d <= 0 {
		return keepalive.ServerParameters{}, false
	}
	ping := max(minPingTime, d/2)
	return keepalive.ServerParameters{Time: ping, Timeout: max(d-ping, 100*time.Millisecond)}, true
}

// watchParent calls gone once the process that started this one is no
// longer its parent: the host died and the plugin was re-parented.
func watchParent(ppid int, every time.Duration, gone func()) {
	if ppid <= 1 {
		// Started by init or re-parented already: the host is gone.
		gone()
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			gone()
			return
		}
	}
}
