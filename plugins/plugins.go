// Package plugins holds the agents bundled with hearth, each in its own
// folder, and serves them from the hearth binary itself: a bundled agent's
// plugin process is hearth re-executed with HEARTH_SERVE_AGENT naming the
// agent, so `go run ./cmd/hearth` works on a fresh clone with nothing but
// Go. Each agent also builds as its own binary (see its cmd folder).
package plugins

import (
	"fmt"
	"os"
	"sort"

	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/plugins/gotour"
	"github.com/hearth-dev/hearth/plugins/model"
	"github.com/hearth-dev/hearth/plugins/workshop"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// EnvServe names the bundled agent a re-executed hearth binary serves.
const EnvServe = "HEARTH_SERVE_AGENT"

var bundled = map[string]func() sdk.Agent{
	"claude":   func() sdk.Agent { return claude.NewFromEnv() },
	"gotour":   func() sdk.Agent { return gotour.New("") },
	"model":    func() sdk.Agent { return model.NewFromEnv() },
	"workshop": func() sdk.Agent { return workshop.New(nil) },
}

// Names lists the bundled agents, sorted.
func Names() []string {
	names := make([]string, 0, len(bundled))
	for n := range bundled {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ServeIfRequested serves the bundled agent named by HEARTH_SERVE_AGENT and
// exits, runs the claude agent's hook relay and exits when started as one
// (claude.HookArg), or returns at once. Call it first thing in main.
func ServeIfRequested() {
	// Claude Code runs the claude agent's hook relay, this binary, before
	// every tool use of a managed session: it does that and nothing more.
	claude.RelayIfRequested()
	name := os.Getenv(EnvServe)
	if name == "" {
		return
	}
	newAgent, ok := bundled[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "hearth: no bundled agent named %q (bundled: %v)\n", name, Names())
		os.Exit(2)
	}
	plugin.Serve(newAgent())
	os.Exit(0)
}

// Command returns the command line that serves the bundled agent name from
// the running executable, and the environment it needs. It is the host's
// BundledFunc.
func Command(name string) (argv, env []string, ok bool) {
	if _, ok := bundled[name]; !ok {
		return nil, nil, false
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, false
	}
	// The arguments only make the process readable in ps; the environment
	// variable is what selects the agent.
	return []string{exe, "serve-agent", name}, []string{EnvServe + "=" + name}, true
}
