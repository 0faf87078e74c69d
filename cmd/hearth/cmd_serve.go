package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/cluster/member"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/plugins"
)

// serveFlags override the config's server block.
type serveFlags struct {
	listen, http, tokenFile string
	noHTTP                  bool
	// hostID and advertise override the cluster block's, so that hosts
	// on one machine can share a config file.
	hostID, advertise string
}

func (m *Main) serveCommand() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run hearth as a daemon: the API, the live dashboard, /metrics and Claude Code's hooks",
		Long: `Run a long-lived host on the data directory: orchestrators submit tasks
and runs through its API (hearth's Go client, or the CLI, whose run,
runs, sessions, submit and place commands use the daemon when one
serves the data directory), operators watch the dashboard and /metrics,
and Claude Code sessions report through 'hearth hook' or the HTTP hook
endpoint.

The API listens on a unix socket in the data directory, owner-only. TCP
is off unless --listen (or server.listen) is set, and then needs a
bearer token or mutual TLS (the config's server block). The dashboard,
/metrics and POST /hooks/claude-code are served on --http, loopback by
default, and need a bearer token too, loopback included: the config's
token_file, or the token file the daemon makes in the data directory on
first start (owner-only; a token file others can read is refused). A
browser signs in to the dashboard with the one-time link printed at
start, or a fresh one from 'hearth dashboard'.

SIGINT or SIGTERM stops it: tasks in flight get ten seconds to finish
(a second signal stops them at once), runs are paused, plugins stopped.
SIGHUP reloads the config file.`,
		Example: `  hearth serve
  hearth serve --config hearth.hcl --http 127.0.0.1:8080
  hearth serve --config hearth.hcl --listen 0.0.0.0:7410 --token-file /etc/hearth/token   # hearth.hcl: server { tls { ... } }`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error { return m.serve(cmd.Context(), f) },
	}
	c.Flags().StringVar(&f.listen, "listen", "", "also serve the API on this TCP address (needs --token-file or the config's tls block)")
	c.Flags().StringVar(&f.http, "http", "", "serve the dashboard, /metrics and the hook endpoint here (default "+config.DefaultHTTP+")")
	c.Flags().BoolVar(&f.noHTTP, "no-http", false, "serve no dashboard, /metrics or HTTP hook endpoint")
	c.Flags().StringVar(&f.tokenFile, "token-file", "", "a file holding the bearer token TCP and HTTP clients must present (default for HTTP: token in the data directory)")
	c.Flags().StringVar(&f.hostID, "host-id", "", "this host's ID in its cluster (overrides cluster.host_id)")
	c.Flags().StringVar(&f.advertise, "advertise", "", "this host's API address as the other hosts of its cluster dial it (overrides cluster.advertise)")
	return c
}

// serveConfig loads the config with the flags' overrides.
func (m *Main) serveConfig(f serveFlags) (*config.Config, error) {
	cfg, err := m.loadConfig()
	if err != nil {
		return nil, err
	}
	if s := cmp.Or(m.socket, m.Getenv("HEARTH_SOCKET")); s != "" {
		cfg.Server.Socket = s
	}
	if f.listen != "" {
		cfg.Server.Listen = f.listen
	}
	if f.http != "" {
		cfg.Server.HTTP = f.http
	}
	if f.noHTTP {
		cfg.Server.HTTP = ""
	}
	if f.tokenFile != "" {
		cfg.Server.TokenFile = f.tokenFile
	}
	if err := cfg.Server.Check(); err != nil {
		return nil, usagef("%v (--token-file gives one)", err)
	}
	if f.hostID != "" || f.advertise != "" {
		if cfg.Cluster == nil {
			return nil, usagef("--host-id and --advertise are for a host of a cluster: add a cluster block to the config (see the README's cluster section)")
		}
		c := *cfg.Cluster
		c.HostID, c.Advertise = cmp.Or(f.hostID, c.HostID), cmp.Or(f.advertise, c.Advertise)
		cfg.Cluster = &c
	}
	return cfg, nil
}

func (m *Main) serve(ctx context.Context, f serveFlags) error {
	cfg, err := m.serveConfig(f)
	if err != nil {
		return err
	}
	logger := m.logger()
	metrics := api.NewMetrics()
	tp, err := m.startTelemetry(ctx, cfg) // telemetry.go
	if err != nil {
		return err
	}
	// Last: the spans of the host's last tasks are exported after it
	// stops.
	defer m.stopTelemetry(tp)
	// With a cluster block, the host's member of its cluster: handed to
	// the engine now, joined once the listeners are open.
	member, err := m.newMember(cfg, logger, tp)
	if err != nil {
		return err
	}
	opts := engine.Options{Config: cfg, Logger: logger, Bundled: plugins.Command, BundledNames: plugins.Names(), Command: "hearth serve",
		Version: buildInfo().Version, Observe: metrics.Observe, Telemetry: tp}
	srvOpts := api.Options{Logger: logger.Named("api"), Metrics: metrics}
	if member != nil {
		opts.Cluster, srvOpts.Register, srvOpts.Cluster = member, member.Register, member
	}
	// Leave the cluster before the host stops: the others stop placing
	// here at once.
	leave := func() {
		if member == nil {
			return
		}
		if err := member.Leave(); err != nil {
			fmt.Fprintf(m.Stderr, "hearth: warning: %v\n", err)
		}
	}
	h, err := engine.New(opts)
	if err != nil {
		leave()
		return dataDirError(err, cfg)
	}
	srvOpts.Engine = h
	srv := api.NewServer(srvOpts)
	l, err := srv.Listen(cfg.Server, cfg.DataDir)
	if err != nil {
		leave()
		_ = h.Close(context.Background())
		return err
	}
	fmt.Fprintf(m.Stdout, "hearth serve: data in %s (pid %d)\n", paths.Abs(cfg.DataDir), os.Getpid())
	if line := pluginsLine(cfg, process.Landlock()); line != "" {
		fmt.Fprintf(m.Stdout, "  plugins    %s\n", line)
	}
	fmt.Fprintf(m.Stdout, "  api        unix://%s\n", paths.Abs(l.Socket))
	if l.TCP != "" {
		fmt.Fprintf(m.Stdout, "  api        tcp://%s\n", l.TCP)
		if cfg.Server.TLS == nil {
			fmt.Fprintf(m.Stderr, "hearth: warning: the TCP API is plain: its bearer token crosses the network unencrypted; add a server { tls { ... } } block\n")
		}
	}
	if line := tracesLine(tp); line != "" {
		fmt.Fprintf(m.Stdout, "  traces     %s\n", line)
	}
	if l.HTTP != "" {
		fmt.Fprintf(m.Stdout, "  dashboard  http://%s/\n  metrics    http://%s/metrics\n  hooks      http://%s/hooks/claude-code\n  mcp        http://%s/mcp\n", l.HTTP, l.HTTP, l.HTTP, l.HTTP)
		fmt.Fprintf(m.Stdout, "  token      %s (HTTP clients send it: Authorization: Bearer)\n", paths.Abs(l.TokenFile))
		// The link is a credential: printed to a person's terminal, never
		// into a log or a file (where another user may read it), which
		// is where stdout goes otherwise.
		if !m.isTerminal(m.Stdout) {
			fmt.Fprintf(m.Stdout, "  sign in    %s dashboard prints a sign-in link\n", m.hearth())
		} else if link, exp, err := l.LoginLink(); err == nil {
			fmt.Fprintf(m.Stdout, "  sign in    %s\n             (once, until %s; %s dashboard prints another)\n", link, exp.Format("15:04:05"), m.hearth())
		}
	}
	if member != nil {
		// The listeners are open: other hosts forward tasks as soon as
		// this one is listed.
		if err := member.Join(ctx); err != nil {
			leave()
			_ = m.stopDaemon(l, h, nil)
			return err
		}
		if err := member.Err(); err != nil {
			fmt.Fprintf(m.Stderr, "hearth: warning: %v\n", err)
		}
		cc := member.Config()
		fmt.Fprintf(m.Stdout, "  cluster    host %s at %s, etcd %v\n", cc.HostID, cc.Advertise, cc.Endpoints)
	}

	sigs, reloads, stop := m.hostSignals()
	defer stop()
	for {
		select {
		case <-reloads:
			m.reload(h)
			if member != nil {
				member.SetConfigHash(configHash(h.Config()))
			}
			if next, err := m.serveConfig(f); err == nil && !reflect.DeepEqual(next.Server, cfg.Server) {
				fmt.Fprintln(m.Stderr, "hearth: warning: the server block changed; a running daemon keeps its listeners: restart it to use the new ones")
			}
		case sig := <-sigs:
			fmt.Fprintf(m.Stderr, "hearth: %v: shutting down; tasks in flight have %s to finish (signal again to stop now)\n", sig, shutdownGrace)
			return m.drainAndStop(member, l, h, sigs, leave)
		case <-ctx.Done():
			return m.drainAndStop(member, l, h, nil, leave)
		}
	}
}

// drainAndStop stops a host of a cluster as a service stops: it
// publishes that it drains (the others place nothing new here, forwards
// not yet accepted are refused and go elsewhere), lets the tasks in
// flight, forwarded ones included, finish within the grace period (those
// that do not are stopped and answered "interrupted": their forwarding
// hosts place them again), and leaves the cluster last, once nothing
// runs here.
func (m *Main) drainAndStop(mem *member.Member, l *api.Listeners, h *engine.Engine, sigs <-chan os.Signal, leave func()) error {
	if mem != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		mem.Drain(ctx)
		cancel()
	}
	err := m.stopDaemon(l, h, sigs)
	leave()
	return err
}

// stopDaemon closes the listeners, then the host, within the shutdown
// grace period, or at once on a second signal.
func (m *Main) stopDaemon(l *api.Listeners, h *engine.Engine, sigs <-chan os.Signal) error {
	grace, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-grace.Done():
		}
	}()
	// Both at once: a client that stops reading a stream must not use up
	// the grace period the host's tasks in flight have to finish; the
	// host stops its runs and takes no new work at once.
	var wg sync.WaitGroup
	wg.Go(func() { l.Close(grace) })
	err := h.Close(grace)
	wg.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
