package api

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/wire"
	"github.com/hearth-dev/hearth/internal/tracecontext"
)

// Errors of Listen.
var (
	// ErrSocketInUse: another daemon answers on the socket.
	ErrSocketInUse = errors.New("another hearth daemon is listening on the socket")
)

// maxUnixPath is the longest path a unix socket may have on Linux
// (sun_path, with its terminating NUL).
const maxUnixPath = 107

// Listeners is what Listen opened: the addresses it serves on.
type Listeners struct {
	// Socket is the unix socket's path.
	Socket string
	// TCP and HTTP are the bound addresses (a port 0 in the config is
	// resolved), or "" when off.
	TCP  string
	HTTP string
	// TokenFile holds the token HTTP clients present (Authorization:
	// Bearer), when HTTP is on: server.token_file, or TokenName in the
	// data directory.
	TokenFile string

	s       *Server
	unixSrv *grpc.Server
	tcpSrv  *grpc.Server
	httpSrv *http.Server
	wg      sync.WaitGroup
	once    sync.Once
}

// Listen opens the daemon's listeners for cfg and serves s on them: the
// API on the unix socket (created owner-only) and, when configured, on
// TCP (with mutual TLS or a bearer token) and the HTTP side. It returns
// once every listener is open; Close stops them.
func (s *Server) Listen(cfg config.Server, dataDir string) (*Listeners, error) {
	token, err := config.ReadToken(cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	// The HTTP side always needs a token, loopback included: without a
	// token_file, the one in the data directory, made on first start.
	httpToken, tokenFile := token, cfg.TokenFile
	if cfg.HTTP != "" && tokenFile == "" {
		if tokenFile, err = defaultToken(dataDir); err != nil {
			return nil, err
		}
		if httpToken, err = config.ReadToken(tokenFile); err != nil {
			return nil, err
		}
	}
	l := &Listeners{s: s, Socket: cfg.SocketPath(dataDir)}
	ul, err := listenUnix(l.Socket)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Listeners, error) {
		// Nothing was served yet: the server's streams stay as they are.
		l.stop(context.Background())
		return nil, err
	}
	l.unixSrv = grpc.NewServer(append(s.peerOptions(), grpc.MaxRecvMsgSize(wire.MaxMessage), traceUnary, traceStream)...) // peer.go
	apipb.RegisterHearthServer(l.unixSrv, s)
	s.registerMore(l.unixSrv)
	l.serve(func() error { return l.unixSrv.Serve(ul) }, "unix socket")

	if cfg.Listen != "" {
		opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(wire.MaxMessage), traceUnary, traceStream,
			// The other hosts of a cluster ping their connections every
			// 10 s while a forward is in flight (host/cluster/peer's
			// KeepaliveTime), to notice a host that stopped answering;
			// gRPC's default policy would close them for pinging more
			// often than every 5 minutes.
			grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second})}
		if cfg.TLS != nil {
			tc, err := serverTLS(cfg.TLS)
			if err != nil {
				return fail(err)
			}
			opts = append(opts, grpc.Creds(loggedCreds{credentials.NewTLS(tc), s, &refusals{}}))
		}
		if token != "" {
			a := tokenAuth{token: token, s: s}
			opts = append(opts, grpc.ChainUnaryInterceptor(a.unary), grpc.ChainStreamInterceptor(a.stream))
		}
		tl, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fail(fmt.Errorf("listen on %s for the API: %w; pick another address with server.listen or --listen", cfg.Listen, err))
		}
		l.TCP = tl.Addr().String()
		l.tcpSrv = grpc.NewServer(opts...)
		apipb.RegisterHearthServer(l.tcpSrv, s)
		s.registerMore(l.tcpSrv)
		l.serve(func() error { return l.tcpSrv.Serve(tl) }, "tcp")
	}

	if cfg.HTTP != "" {
		hl, err := net.Listen("tcp", cfg.HTTP)
		if err != nil {
			return fail(fmt.Errorf("listen on %s for the dashboard: %w; pick another address with server.http or --http, or \"\" for none", cfg.HTTP, err))
		}
		l.HTTP, l.TokenFile = hl.Addr().String(), tokenFile
		l.httpSrv = &http.Server{Handler: s.HTTPHandler(httpToken, l.HTTP),
			ReadHeaderTimeout: httpReadHeader, ReadTimeout: httpRead, WriteTimeout: httpWrite,
			IdleTimeout: httpIdle, MaxHeaderBytes: httpMaxHeader, ConnContext: connContext}
		// Connections without the token cannot crowd out those with it,
		// nor take the file descriptors the unix socket needs (budget.go).
		limited := newBudget(sendBuffered{hl, httpSendBuffer}, httpLimits())
		l.serve(func() error {
			if err := l.httpSrv.Serve(limited); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}, "http")
	}
	return l, nil
}

// sendBuffered sets the send buffer of the TCP connections it accepts.
type sendBuffered struct {
	net.Listener
	size int
}

func (l sendBuffered) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		// A connection whose buffer cannot be set still works; it only
		// holds more of a silent client's events.
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

func (l *Listeners) serve(fn func() error, what string) {
	l.wg.Go(func() {
		if err := fn(); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			l.s.logger.Error("the daemon stopped serving", "listener", what, "error", err)
		}
	})
}

// Close stops the listeners: streams end at once, calls in flight may
// finish until ctx is done. The socket file is removed.
func (l *Listeners) Close(ctx context.Context) {
	l.s.shutdown()
	l.stop(ctx)
}

// stop stops the listeners, once.
func (l *Listeners) stop(ctx context.Context) {
	l.once.Do(func() {
		var wg sync.WaitGroup
		for _, srv := range []*grpc.Server{l.unixSrv, l.tcpSrv} {
			if srv == nil {
				continue
			}
			wg.Go(func() {
				done := make(chan struct{})
				go func() {
					srv.GracefulStop()
					close(done)
				}()
				select {
				case <-done:
				case <-ctx.Done():
					srv.Stop()
					<-done
				}
			})
		}
		if l.httpSrv != nil {
			wg.Go(func() {
				if err := l.httpSrv.Shutdown(ctx); err != nil {
					_ = l.httpSrv.Close()
				}
			})
		}
		wg.Wait()
		l.wg.Wait()
		// Only the socket this daemon made: never a file that took its
		// place.
		if fi, err := os.Lstat(l.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 && l.unixSrv != nil {
			_ = os.Remove(l.Socket)
		}
	})
}

// listenUnix listens on a unix socket that only this user can connect
// to. The socket is made in a directory of its own, mode 0700, and moved
// into place once it is 0600: no other user can connect to it in
// between, which chmod after listening would not ensure.
func listenUnix(path string) (net.Listener, error) {
	if len(path) > maxUnixPath {
		return nil, fmt.Errorf("the socket path %s is %d bytes, longer than the %d a unix socket may have; set server.socket (or --socket) to a shorter path", path, len(path), maxUnixPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the socket's directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; give the daemon a path of its own for its socket (server.socket, --socket)", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%w %s; stop it first, or give this one another socket (--socket)", ErrSocketInUse, path)
		}
		// Left by a daemon that did not stop cleanly.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, fmt.Errorf("create the socket: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	if len(tmp) > maxUnixPath {
		// The private directory's name made it too long: do without.
		tmp = path
	}
	ul, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ul.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("make the socket owner-only: %w", err)
	}
	if tmp != path {
		if err := os.Rename(tmp, path); err != nil {
			ul.Close()
			return nil, fmt.Errorf("move the socket into place at %s: %w", path, err)
		}
	}
	return ul, nil
}

// serverTLS builds the TCP API's TLS config: the server's certificate,
// and with a client CA, client certificates required and verified.
func serverTLS(t *config.ServerTLS) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load the server's certificate: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("read the client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the client CA file %s holds no PEM certificate", t.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// loggedCreds logs TLS handshakes that fail: a client without a valid
// certificate is refused, and the operator learns who it was.
type loggedCreds struct {
	credentials.TransportCredentials
	s   *Server
	ref *refusals
}

func (c loggedCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.s.logRefused(c.ref, conn.RemoteAddr().String(), "refused a connection: TLS handshake failed",
			" (no valid client certificate? a host of the cluster whose certificate is from another CA is named in the other hosts' logs)", "error", err)
	}
	return out, info, err
}

func (c loggedCreds) Clone() credentials.TransportCredentials {
	return loggedCreds{c.TransportCredentials.Clone(), c.s, c.ref}
}

// refusalQuiet is how long refused handshakes from one address are
// logged at debug level after the warning about the first.
const refusalQuiet = 10 * time.Minute

// logRefused logs a refusal from addr counted in r: the first from its
// client in refusalQuiet is a warning (what, then hint, with how many
// were refused since the last warning), the rest debug lines, so that a
// client that retries does not fill the log.
func (s *Server) logRefused(r *refusals, addr, what, hint string, kv ...any) {
	n, warn := r.refused(addr, s.now())
	if warn {
		s.logger.Warn(what+hint+"; further refusals from its address are logged at debug level for "+strings.TrimSuffix(refusalQuiet.String(), "0s"),
			append(append([]any{"peer", addr}, kv...), "refused_before", n)...)
		return
	}
	s.logger.Debug(what, append(append([]any{"peer", addr}, kv...), "refused", n)...)
}

// refusals counts refused handshakes by the client (refusalKey), so
// that a client that retries every second or two (another host of the
// cluster whose certificate is from another CA: its gRPC redials, its
// probes) is one warning per refusalQuiet, not one per attempt (issue
// 26: a warning every 1.5 s). The port is left out: each dial has its
// own. At most refusalAddrs addresses are kept; beyond that the oldest
// are forgotten (and warned about again).
type refusals struct {
	mu  sync.Mutex
	ips map[string]*refusedIP
}

type refusedIP struct {
	warned time.Time
	n      int
}

const refusalAddrs = 1024

// refused records a refused handshake from addr at now and returns how
// many were refused from its IP since its last warning, and whether this
// one is warned about.
func (r *refusals) refused(addr string, now time.Time) (int, bool) {
	ip := refusalKey(addr)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ips == nil {
		r.ips = make(map[string]*refusedIP)
	}
	e := r.ips[ip]
	if e == nil {
		if len(r.ips) >= refusalAddrs {
			oldest := ""
			for k, v := range r.ips {
				if oldest == "" || v.warned.Before(r.ips[oldest].warned) {
					oldest = k
				}
			}
			delete(r.ips, oldest)
		}
		e = &refusedIP{}
		r.ips[ip] = e
	}
	if e.warned.IsZero() || now.Sub(e.warned) >= refusalQuiet {
		n := e.n
		e.warned, e.n = now, 0
		return n, true
	}
	e.n++
	return e.n, false
}

// refusalKey is what refusals count addr's refusals by: its IP without
// the port (each dial has its own), an IPv4 address written as IPv6
// (::ffff:10.0.0.1) as itself, and an IPv6 address by its /64: a host
// is given a /64 of its own and may send from any address in it (privacy
// addresses change by the hour), so counting by address would let one
// client be a new warning per request, and push every other out of the
// refusalAddrs kept. Anything that is not an IP (a unix socket's peer)
// is itself.
func refusalKey(addr string) string {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}

// tokenAuth refuses TCP calls without the bearer token.
type tokenAuth struct {
	token string
	s     *Server
}

func (a tokenAuth) check(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok && subtle.ConstantTimeCompare([]byte(tok), []byte(a.token)) == 1 {
			return nil
		}
	}
	addr := "unknown"
	if p, ok := peer.FromContext(ctx); ok {
		addr = p.Addr.String()
	}
	a.s.logRefused(&a.s.tokenRefusals, addr, "refused a request without a valid bearer token", "", "method", method)
	return status.Error(codes.Unauthenticated, "this hearth daemon needs a bearer token over TCP: give the client the token from the daemon's token_file")
}

func (a tokenAuth) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := a.check(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (a tokenAuth) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := a.check(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

// traceUnary and traceStream hand each call the caller's trace context
// (the W3C traceparent its client sent, host/api/client), so that the
// spans of a task submitted from inside a caller's span join its trace.
// A traceparent is only ever a parent: a caller can put the daemon's
// spans in its trace, never change what they record.
var (
	traceUnary = grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(tracecontext.Incoming(ctx), req)
	})
	traceStream = grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, tracedStream{ss, tracecontext.Incoming(ss.Context())})
	})
)

// tracedStream is a server stream whose context carries its caller's
// trace context.
type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s tracedStream) Context() context.Context { return s.ctx }
