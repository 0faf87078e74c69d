// Package process runs one plugin process: it launches the agent's
// program under go-plugin with hearth's mutual TLS, in its own process
// group with a parent-death signal, confined by Landlock where the agent
// asks and the kernel can (confine.go), completes the handshake and asks
// the agent to describe itself (the cold start), watches it with health
// checks, stops it (gracefully, then its whole process group), and turns
// every way it can fail into a *hearth.PluginError that names the agent and
// session and says how to fix it. It remembers the plugins it started,
// so that the daemon can refuse their calls (registry.go). go-plugin,
// process groups and Landlock are confined here.
package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/confine"
	"github.com/hearth-dev/hearth/host/internal/procgroup"
	"github.com/hearth-dev/hearth/internal/scratch"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// Launch is everything needed to start one plugin process.
type Launch struct {
	Agent   string
	Session string
	// Argv is the program and its arguments; Env is added to the
	// plugin's environment.
	Argv []string
	Env  []string
	// Dir is the working directory: the agent's workspace.
	Dir string
	// SHA256, when set, pins the program's checksum.
	SHA256 string
	// Confine, when set, runs the plugin under Landlock (confine.go);
	// nil runs it unconfined.
	Confine *Confinement
	// StartTimeout bounds spawn, handshake and the first call.
	StartTimeout time.Duration
	// HealthInterval is how often the process is pinged; 0 disables.
	HealthInterval time.Duration
	// Vouch, when set, is how long the plugin goes on without hearing
	// from the host before it stops its tasks (plugin.EnvVouch): a
	// cluster's hosts set it below their lease.
	Vouch time.Duration
	// TLS makes the mutual TLS keys; nil falls back to go-plugin's
	// AutoMTLS (see agentplugin.HostTLS for why hearth makes its own).
	TLS      *agentplugin.HostTLS
	Logger   hclog.Logger
	LogLevel string
	// OnExit is called once if the process exits or stops answering
	// without having been asked to stop.
	OnExit func(*hearth.PluginError)
	// Plugin is the host's side of the plugin: the relay its spans go
	// to when the host traces.
	Plugin agentplugin.HostOptions
}

// Process is one running plugin: the go-plugin client, its process group,
// and the remote agent it serves.
type Process struct {
	agent   string
	session string
	client  *plugin.Client
	runner  *procgroup.Runner
	remote  agentplugin.Remote
	info    sdk.Info
	stderr  *text.Tail
	logger  hclog.Logger

	stopping atomic.Bool
	stopOnce sync.Once
	quit     chan struct{} // closed by stop: ends the watcher
	watched  sync.WaitGroup
	onExit   func(*hearth.PluginError)
	// vouch is the bound the plugin was told (Launch.Vouch), 0 when none.
	vouch time.Duration
}

// pingTimeout bounds one health check: one interval, at least a second
// (a live plugin answers in well under a millisecond, but a loaded machine
// deserves slack) and at most five.
func pingTimeout(every time.Duration) time.Duration {
	return min(max(every, time.Second), 5*time.Second)
}

// Start spawns the plugin, completes the handshake, dispenses the
// agent and asks it to describe itself: the cold start.
func Start(ctx context.Context, l Launch) (*Process, error) {
	p := &Process{
		agent:   l.Agent,
		session: l.Session,
		stderr:  text.NewTail(20),
		logger:  l.Logger,
		quit:    make(chan struct{}),
		onExit:  l.OnExit,
		vouch:   l.Vouch,
	}
	fail := func(err error, detail, hint string) (*Process, error) {
		pe := p.Errorf("start", err, detail, hint)
		p.Stop(true)
		return nil, pe
	}

	path, err := exec.LookPath(l.Argv[0])
	if err != nil {
		return fail(missingProgram{err}, err.Error(), "check the agent's command in the config")
	}
	// A pinned program runs from a private, sealed copy of the bytes that
	// were hashed (pin.go): hashing the path and then executing it would
	// run whatever is there by then.
	var pinned *os.File
	if l.SHA256 != "" {
		if pinned, err = pinnedCopy(path, l.SHA256); err != nil {
			var mismatch *mismatchError
			if errors.As(err, &mismatch) {
				return fail(hearth.ErrChecksumMismatch, fmt.Sprintf("%s has sha256 %s, the config pins %s", path, mismatch.got, l.SHA256),
					"if you rebuilt or upgraded the agent on purpose, update sha256 in the config; otherwise the program has been changed")
			}
			return fail(hearth.ErrChecksumMismatch, err.Error(), "check that the program exists and is readable")
		}
		defer pinned.Close()
	}

	// A confined plugin is started through the shim (package
	// host/internal/confine): this executable, which confines itself and
	// then executes the program in place.
	var pol *confine.Policy
	if l.Confine != nil {
		switch st := confine.Probe(); {
		case st.Available():
			if pol, err = policy(l.Confine, path, l.Argv, l.Dir); err != nil {
				return fail(err, err.Error(), "")
			}
		case l.Confine.Require:
			return fail(hearth.ErrConfinement, "the agent requires confinement (confinement = \"require\"), and "+st.String(),
				"run hearth on a Linux kernel with Landlock enabled, or set confinement = \"auto\" to run the agent unconfined where Landlock is missing")
		}
	}

	cc := &plugin.ClientConfig{
		HandshakeConfig:  agentplugin.Handshake,
		VersionedPlugins: agentplugin.HostPlugins(nil, l.Plugin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         l.TLS == nil,
		StartTimeout:     l.StartTimeout,
		Logger:           l.Logger,
		Stderr:           p.stderr,
		// A Go plugin's os.Stderr is a pipe go-plugin streams to the host
		// after the handshake: what it writes there belongs in the tail
		// too.
		SyncStderr: p.stderr,
		// A plugin starts with Launch.Env only (and go-plugin's own
		// variables): the host's environment holds its tokens and keys.
		SkipHostEnv: true,
	}
	// go-plugin makes each plugin's directory inside the host's own,
	// which the next host sweeps if this one is killed (internal/scratch).
	scratchDir, err := scratch.Dir()
	if err != nil {
		return fail(hearth.ErrPluginStart, err.Error(), "check that the temporary directory ($TMPDIR, else /tmp) exists, is writable and is on a filesystem that takes file locks")
	}
	cc.UnixSocketConfig = &plugin.UnixSocketConfig{TempDir: scratchDir}
	var keys *agentplugin.PluginTLS
	// polFile is the host's copy of the confinement policy's file, which
	// the started shim has inherited (confine.Policy.Attach).
	var polFile *os.File
	if l.TLS != nil {
		if keys, err = l.TLS.ForPlugin(); err != nil {
			return fail(hearth.ErrPluginStart, "make TLS keys: "+err.Error(), "")
		}
		cc.TLSConfig = keys.Config
	}
	cc.RunnerFunc = func(_ hclog.Logger, spec *exec.Cmd, sockDir string) (runner.Runner, error) {
		cmd := exec.Command(path, l.Argv[1:]...)
		cmd.Env = append(append(spec.Env, l.Env...), agentplugin.EnvLogLevel+"="+l.LogLevel)
		if l.Vouch > 0 {
			cmd.Env = append(cmd.Env, agentplugin.EnvVouch+"="+l.Vouch.String())
		}
		cmd.Dir = l.Dir
		// The plugin gets no stdin: it must never compete with the host
		// for a person's terminal or a hook's payload.
		cmd.Stdin = nil
		if keys != nil {
			keys.Attach(cmd)
		}
		if pinned != nil {
			// The child executes its inherited copy; argv[0] stays the
			// configured program, as the plugin would see it otherwise.
			cmd.ExtraFiles = append(cmd.ExtraFiles, pinned)
			cmd.Path = "/proc/self/fd/" + strconv.Itoa(2+len(cmd.ExtraFiles))
		}
		// go-plugin makes sockDir for this plugin alone and removes it
		// when the plugin stops: as TMPDIR it holds the plugin's
		// temporary files too, confined or not, so that what an agent
		// leaves there (a Claude Code state directory, a model's scratch
		// files) goes with its session instead of piling up in /tmp. If
		// the host is killed, the next host removes it (scratch.Background).
		cmd.Env = append(cmd.Env, "TMPDIR="+sockDir)
		if pol != nil {
			pol := *pol
			pol.Program = cmd.Path // the program, or its pinned copy
			pol.Grants = append(slices.Clip(pol.Grants), confine.Grant{Path: sockDir, Access: confine.Socket})
			pf, err := pol.Attach(cmd)
			if err != nil {
				return nil, err
			}
			polFile = pf
			// /proc/self/exe is the running host's binary, even if the
			// file at its path has been replaced since.
			cmd.Path = "/proc/self/exe"
		}
		// go-plugin names the plugin's logger after the runner; the
		// logger already carries the agent and session.
		r, err := procgroup.New(cmd, "plugin")
		p.runner = r
		if err != nil {
			return nil, err
		}
		return registering{r, l.Agent, l.Session}, nil
	}
	p.client = plugin.NewClient(cc)
	rpc, err := p.client.Client()
	if keys != nil {
		keys.Close()
	}
	if polFile != nil {
		polFile.Close()
	}
	if err != nil {
		cause, detail, hint := classifyStart(err, l.StartTimeout, p.exited())
		if pol != nil && errors.Is(cause, hearth.ErrPluginExited) {
			if h := outsideHint(path, l.Dir, l.Confine); h != "" {
				hint = h
			}
		}
		return fail(cause, detail, hint)
	}
	raw, err := rpc.Dispense(agentplugin.PluginName)
	if err != nil {
		return fail(hearth.ErrHandshake, err.Error(), "the plugin does not serve a hearth agent; its main must call plugin.Serve")
	}
	p.remote = raw.(agentplugin.Remote)

	dctx, cancel := context.WithTimeout(ctx, l.StartTimeout)
	defer cancel()
	p.info, err = p.remote.Describe(dctx)
	if err != nil {
		return fail(p.CallError(dctx, err))
	}
	if p.info.Capacity < 1 {
		p.info.Capacity = 1
	}

	var conn *plugin.GRPCClient
	if gc, ok := rpc.(*plugin.GRPCClient); ok {
		conn = gc
	}
	p.watched.Add(1)
	go p.watch(conn, l.HealthInterval)
	return p, nil
}

// Agent is the remote agent the process serves: each call goes to the
// plugin.
func (p *Process) Agent() agentplugin.Remote { return p.remote }

// Info is what the agent said of itself when it started, its capacity at
// least 1.
func (p *Process) Info() sdk.Info { return p.info }

// exited reports whether the process has exited, waiting briefly: when a
// call fails because the connection dropped, the exit itself may still be
// on its way.
func (p *Process) exited() bool {
	if p.runner == nil {
		return false
	}
	select {
	case <-p.runner.Exited():
		return true
	case <-time.After(time.Second):
		return false
	}
}

var versionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// hostVersions names the agent protocol versions a host speaks: "versions
// 1 and 2".
func hostVersions() string {
	var vs []string
	for v := range agentplugin.VersionedPlugins(nil, nil) {
		vs = append(vs, strconv.Itoa(v))
	}
	slices.Sort(vs)
	if len(vs) == 1 {
		return "version " + vs[0]
	}
	return "versions " + strings.Join(vs[:len(vs)-1], ", ") + " and " + vs[len(vs)-1]
}

// classifyStart turns go-plugin's start errors, which are plain strings,
// into the host's sentinels with a hint at the fix.
func classifyStart(err error, timeout time.Duration, exited bool) (error, string, string) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return hearth.ErrStartTimeout, fmt.Sprintf("no handshake within %s", timeout),
			"the program may hang before calling plugin.Serve, or not be a hearth agent; raise start_timeout if it is only slow"
	case strings.Contains(msg, "incompatible API version"):
		got := "an unknown version"
		if m := versionRE.FindStringSubmatch(msg); m != nil {
			got = "version " + m[1]
		}
		return hearth.ErrProtocolVersion, fmt.Sprintf("the plugin speaks agent protocol %s, this host speaks %s", got, hostVersions()),
			"rebuild the agent against the hearth sdk this host was built with"
	case strings.Contains(msg, "incompatible core API version"):
		return hearth.ErrProtocolVersion, text.FirstLine(msg), "rebuild the agent against a current hearth sdk"
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		line := strings.TrimPrefix(text.FirstLine(msg), "Unrecognized remote plugin message: ")
		if line == "" && exited {
			return hearth.ErrPluginExited, "the program exited without a handshake",
				"check that the command runs a hearth agent (its main must call plugin.Serve); see its stderr below"
		}
		return hearth.ErrHandshake, fmt.Sprintf("the plugin wrote %q to stdout instead of the handshake", truncate(line, 80)),
			"an agent must not print to stdout before plugin.Serve; log to stderr instead"
	case strings.Contains(msg, "plugin exited before we could connect"):
		return hearth.ErrPluginExited, "the program exited during the handshake",
			"check that the command runs a hearth agent (its main must call plugin.Serve); see its stderr below"
	case strings.Contains(msg, "exec:") || strings.Contains(msg, "fork/exec"):
		return hearth.ErrPluginStart, msg, "check the agent's command in the config"
	}
	return hearth.ErrHandshake, msg, ""
}

// CallError explains why a call to the plugin failed: a plugin that died
// or stopped answering is a *hearth.PluginError; anything else, such as the agent
// failing its task, is returned as it is.
func (p *Process) CallError(ctx context.Context, err error) (error, string, string) {
	if errors.Is(err, sdk.ErrConnectionLost) && p.exited() {
		return hearth.ErrPluginExited, exitDetail(p.runner.ExitErr()), "the agent crashed; see its stderr below"
	}
	if p.runner != nil {
		select {
		case <-p.runner.Exited():
			return hearth.ErrPluginExited, exitDetail(p.runner.ExitErr()), "the agent crashed; see its stderr below"
		default:
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return hearth.ErrPluginHung, err.Error(), "the agent did not answer in time"
	}
	if errors.Is(err, sdk.ErrConnectionLost) && p.vouch > 0 {
		// The plugin lives but its connection is gone: on a local socket
		// only the plugin closes it, and a plugin told to vouch does so
		// when this host stops answering its keep-alive pings within
		// the bound (a pause, a starved machine). A property of the
		// event, not of timing here: a crash is an exit, seen above.
		return hearth.ErrUnvouched, fmt.Sprintf("the plugin lives, but closed its connection after the host did not answer for up to %v", p.vouch),
			"the host was paused or starved; in a cluster the task is placed again"
	}
	return err, "", ""
}

func exitDetail(err error) string {
	if err == nil {
		return "the process exited with status 0"
	}
	return "the process ended: " + err.Error()
}

// Errorf builds a hearth.PluginError for this process.
func (p *Process) Errorf(op string, err error, detail, hint string) *hearth.PluginError {
	return &hearth.PluginError{
		Agent: p.agent, Session: p.session, Op: op, Err: err,
		Detail: detail, Hint: hint, Stderr: p.stderr.Lines(),
	}
}

// watch notices a process that exits or stops answering health checks
// without having been asked to stop, and reports it once, after the watch
// has ended, so that the report may stop the process.
func (p *Process) watch(conn *plugin.GRPCClient, every time.Duration) {
	pe := p.watchLoop(conn, every)
	p.watched.Done()
	if pe != nil {
		p.report(pe)
	}
}

func (p *Process) watchLoop(conn *plugin.GRPCClient, every time.Duration) *hearth.PluginError {
	var tick <-chan time.Time
	if every > 0 && conn != nil {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.quit:
			return nil
		case <-p.runner.Exited():
			if p.stopping.Load() {
				return nil
			}
			return p.Errorf("watch", hearth.ErrPluginExited, exitDetail(p.runner.ExitErr()), "the agent crashed; see its stderr below")
		case <-tick:
			ctx, cancel := context.WithTimeout(context.Background(), pingTimeout(every))
			_, err := grpc_health_v1.NewHealthClient(conn.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
			cancel()
			if err != nil && !p.stopping.Load() {
				p.stopping.Store(true)
				p.killGroup()
				return p.Errorf("health check", hearth.ErrPluginHung, fmt.Sprintf("no answer to a health check within %s: %v", pingTimeout(every), err),
					"the plugin process is stuck (deadlocked, stopped, or starved); it was killed")
			}
		}
	}
}

func (p *Process) report(pe *hearth.PluginError) {
	p.logger.Error("plugin lost", "error", pe.Error())
	if p.onExit != nil {
		p.onExit(pe)
	}
}

// Stop ends the plugin: a graceful shutdown request first, then SIGKILL to
// its whole process group, grandchildren included. It returns once the
// process has been reaped. With force, the graceful step is skipped.
func (p *Process) Stop(force bool) {
	p.stopOnce.Do(func() {
		p.stopping.Store(true)
		close(p.quit)
		if force {
			p.killGroup()
		}
		if p.client != nil {
			// Graceful: go-plugin asks the plugin to shut down and waits
			// up to two seconds before killing it through our runner. It
			// returns once the process is reaped.
			p.client.Kill()
		}
		// The leader may have exited on request while processes it
		// started live on in its group.
		p.killGroup()
		p.watched.Wait()
	})
}

// killGroup sends SIGKILL to the plugin's whole process group.
func (p *Process) killGroup() {
	if p.runner != nil {
		_ = p.runner.Kill(context.Background())
	}
}

// PID is the plugin's process ID, 0 if it never started.
func (p *Process) PID() int {
	if p.runner == nil {
		return 0
	}
	return p.runner.PID()
}

// truncate cuts s to n bytes and "...", never inside a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Prefix(s, n) + "..."
}
