package plugin

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hearth-dev/hearth/sdk"
)

// EnvLogLevel is the environment variable through which a host tells its
// plugins how verbosely to log.
const EnvLogLevel = "HEARTH_PLUGIN_LOG_LEVEL"

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
		GRPCServer:       goplugin.DefaultGRPCServer,
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
