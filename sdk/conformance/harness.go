// Package conformance holds the hearth agent contract's checks, and what
// runs them: a Harness that serves an agent in this process (Start: the
// real plugin protocol, go-plugin's test mode, the same gRPC services,
// broker and SDK adapters that carry a plugin subprocess) or starts a
// plugin program as a host does (StartCommand), with a Recorder playing
// the host. TestAgent is the conformance check, in the spirit of
// testing/fstest.TestFS, for an agent in this process; RunChecks runs
// the checks Checks lists against any Target, which is what `hearth
// agents test` does with a program in any language.
//
// It does not import package testing, so that the hearth binary can run
// the checks without linking a test kit; package sdktest is what an
// author's Go tests use with it (sdktest.New).
package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// Harness is an agent served in-process, seen through the same remote
// Agent a hearth host uses, with a Recorder as its host.
type Harness struct {
	// Agent forwards every call over the plugin protocol to the served
	// agent, as a host's does: it also implements sdk.StateExporter and
	// says whether the agent exports its state.
	Agent agentplugin.Remote
	// Recorder records what the agent reported and answers its questions.
	Recorder *Recorder
	// Session is the session ID the harness gives its tasks.
	Session string

	// client and rpc are the go-plugin client of a plugin program
	// (StartCommand), nil in this process.
	client *plugin.Client
	rpc    plugin.ClientProtocol
	// prog is the program's process, nil in this process.
	prog *program
	// close disconnects and stops the agent's server.
	close     func() error
	closeOnce sync.Once
	closeErr  error
}

// shutdownGrace is how long Close waits for the in-process server to stop
// on request before stopping it by force.
const shutdownGrace = 2 * time.Second

// Options adjust a Harness.
type Options struct {
	// Logger receives the agent's log lines; nil discards them.
	Logger hclog.Logger
	// Policy answers the agent's CheckToolUse calls; nil allows all.
	Policy Policy
}

// Start serves a in-process and connects to it. Close the harness when
// done.
func Start(a sdk.Agent, opts Options) (*Harness, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	served := make(chan struct{})
	plugins := agentplugin.VersionedPlugins(a, logger)
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  agentplugin.Handshake,
		VersionedPlugins: plugins,
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           logger,
		Test: &plugin.ServeTestConfig{
			Context:          ctx,
			ReattachConfigCh: reattach,
			CloseCh:          served,
		},
	})
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-served:
		cancel()
		return nil, errors.New("conformance: the in-process plugin server stopped before it was ready")
	}
	// go-plugin's default reattach runner polls the PID, which here is the
	// test process itself, forever; this one ends when the server does.
	rc.ReattachFunc = func() (runner.AttachedRunner, error) { return inProcess{served}, nil }
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: agentplugin.Handshake,
		// A reattaching client skips version negotiation and uses Plugins.
		Plugins:          agentplugin.VersionedPlugins(nil, nil)[rc.ProtocolVersion],
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
	})
	var rpc plugin.ClientProtocol
	h := &Harness{Session: sdk.NewID("session"), Recorder: NewRecorder(opts.Policy)}
	h.close = func() error {
		// Closing the client asks the server to shut down; cancelling the
		// serve context as well would race go-plugin's two Stop paths, so
		// it is only the fallback for a server that did not hear us.
		var err error
		if rpc != nil {
			err = rpc.Close()
		}
		select {
		case <-served:
		case <-time.After(shutdownGrace):
		}
		cancel()
		<-served
		client.Kill()
		// The agent's connection to the recorder's callbacks lives in this
		// process too; a plugin process would take it with it.
		for _, set := range plugins {
			for _, p := range set {
				if ap, ok := p.(*agentplugin.AgentPlugin); ok {
					_ = ap.Close()
				}
			}
		}
		return err
	}
	rpc, err := client.Client()
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("conformance: connect to the in-process agent: %w", err)
	}
	raw, err := rpc.Dispense(agentplugin.PluginName)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("conformance: dispense the agent: %w", err)
	}
	h.Agent = raw.(agentplugin.Remote)
	return h, nil
}

// Run runs t on the served agent with the harness's Recorder as its host:
// a task with a Run is given RunCallbacks (Recorder.ForTask). An empty task
// ID or session is filled in.
func (h *Harness) Run(ctx context.Context, t sdk.Task) (sdk.Result, error) {
	if t.ID == "" {
		t.ID = sdk.NewID("task")
	}
	if t.Session == "" {
		t.Session = h.Session
	}
	res, err := h.Agent.Run(ctx, t, h.Recorder.ForTask(t))
	return res, h.explain(err)
}

// explain adds to err, from a call to a plugin program that died, how
// the program ended and the tail of its stderr.
func (h *Harness) explain(err error) error {
	var ee *ExitError
	if err == nil || h.prog == nil || !errors.Is(err, sdk.ErrConnectionLost) || errors.As(err, &ee) {
		return err
	}
	if died := h.prog.died(time.Second); died != "" {
		return &ExitError{Err: err, How: died}
	}
	return err
}

// Close disconnects from the agent and stops its server.
func (h *Harness) Close() error {
	h.closeOnce.Do(func() { h.closeErr = h.close() })
	return h.closeErr
}

// StartCommand starts the plugin program cmd, as a hearth host does (the
// handshake, mutual TLS, protocol versions 2 and 1), and connects to it.
// Close the harness when done: it stops the process.
func StartCommand(cmd *exec.Cmd, opts Options) (*Harness, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	var prog *program
	stderr := text.NewTail(200)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  agentplugin.Handshake,
		VersionedPlugins: agentplugin.VersionedPlugins(nil, nil),
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			// spec carries go-plugin's environment (the handshake's
			// cookie, protocol versions, the client's certificate); the
			// program's own comes after it.
			env := cmd.Env
			if env == nil {
				env = []string{}
			}
			cmd.Env = append(spec.Env, env...)
			var err error
			prog, err = newProgram(cmd, stderr)
			return prog, err
		},
		// A Go plugin's os.Stderr is a pipe go-plugin streams to the
		// host after the handshake (SyncStderr); before it, and a
		// runtime's crash report, go to the process's own (Stderr).
		Stderr:           stderr,
		SyncStderr:       stderr,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     commandStartTimeout,
		Logger:           logger,
	})
	h := &Harness{Session: sdk.NewID("session"), Recorder: NewRecorder(opts.Policy)}
	h.close = func() error {
		client.Kill()
		return nil
	}
	rpc, err := client.Client()
	if err != nil {
		h.Close()
		if prog != nil {
			if died := prog.died(time.Second); died != "" {
				return nil, &ExitError{Err: fmt.Errorf("conformance: start %s", strings.Join(cmd.Args, " ")), How: died}
			}
		}
		return nil, fmt.Errorf("conformance: start %s: %w", strings.Join(cmd.Args, " "), err)
	}
	h.client, h.rpc, h.prog = client, rpc, prog
	raw, err := rpc.Dispense(agentplugin.PluginName)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("conformance: dispense the agent of %s: %w", cmd.Path, h.explain(err))
	}
	h.Agent = raw.(agentplugin.Remote)
	return h, nil
}

// commandStartTimeout bounds a plugin program's start: a loaded machine
// building nothing still starts one in well under a second.
const commandStartTimeout = 20 * time.Second

// inProcess is the runner of a plugin served by this very process.
type inProcess struct{ served <-chan struct{} }

func (p inProcess) Wait(context.Context) error { <-p.served; return nil }
func (inProcess) Kill(context.Context) error   { return nil }
func (inProcess) ID() string                   { return "in-process" }
func (inProcess) PluginToHost(n, a string) (string, string, error) {
	return n, a, nil
}
func (inProcess) HostToPlugin(n, a string) (string, string, error) {
	return n, a, nil
}

var _ runner.AttachedRunner = inProcess{}
