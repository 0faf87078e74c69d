package api

import (
	"context"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/peercred"
)

// The unix socket is owner-only, so the kernel keeps other users out.
// Two callers remain that the file's mode lets in: the daemon's own
// plugins (confined to their workspaces, they would find every run and
// session here, and a Landlock older than ABI 9 cannot stop a connect
// to a socket), and root. The kernel names each connection's peer
// (SO_PEERCRED): calls from a process of another user, or from a plugin
// this daemon started or a process it started, are refused with
// PermissionDenied, naming the reason.

// peerCreds are the unix socket's transport credentials: no handshake
// (the socket is local), the peer as the kernel names it.
type peerCreds struct{ s *Server }

// peerInfo is a connection's peer and, when its calls are refused, why.
type peerInfo struct {
	credentials.CommonAuthInfo
	pid     int32
	uid     uint32
	refusal string
}

func (peerInfo) AuthType() string { return "peercred" }

func (c peerCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info := peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}
	p, err := peercred.Of(conn, true)
	if err != nil {
		info.refusal = "the daemon cannot tell who is calling (" + err.Error() + ")"
	} else {
		info.pid, info.uid = int32(p.PID), uint32(p.UID)
		info.refusal = refusal(p.PID, uint32(p.UID), uint32(os.Geteuid()), process.PluginOf)
		// The checks read /proc/PID of the process that connected. Had it
		// exited since, PID could name another process by now: the
		// pidfd the kernel took when it connected says whether it is
		// still the same one.
		if info.refusal == "" && !p.Alive() {
			info.refusal = fmt.Sprintf("process %d, which connected, has exited: the daemon serves the process it checked, not whoever holds its connection now", p.PID)
		}
		p.Close()
	}
	if info.refusal != "" {
		c.s.logger.Warn("refused a connection on the unix socket", "pid", info.pid, "uid", info.uid, "reason", info.refusal)
	}
	return conn, info, nil
}

func (peerCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, peerInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (peerCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

func (c peerCreds) Clone() credentials.TransportCredentials { return c }

func (peerCreds) OverrideServerName(string) error { return nil }

// refusal says why the daemon refuses a peer, "" when it does not: a
// peer of another user than the daemon's (self), or one pluginOf names.
func refusal(pid int, uid, self uint32, pluginOf func(int) (process.Owner, bool)) string {
	if uid != self {
		return fmt.Sprintf("the daemon serves its own user (uid %d) only; process %d runs as uid %d", self, pid, uid)
	}
	if o, ok := pluginOf(pid); ok {
		if o.Sandboxed {
			return fmt.Sprintf("the daemon refuses calls from its own plugins: process %d is %s; run the client outside that sandbox, or run hearth where it can make cgroups (as root, or systemd-run --user -p Delegate=yes hearth serve)", pid, o)
		}
		if pid == o.PID {
			return fmt.Sprintf("the daemon refuses calls from its own plugins: process %d is %s; an agent reaches its host through the SDK (sdk.Callbacks), not the daemon's socket", pid, o)
		}
		return fmt.Sprintf("the daemon refuses calls from its own plugins: process %d was started by process %d, %s; an agent reaches its host through the SDK (sdk.Callbacks), not the daemon's socket", pid, o.PID, o)
	}
	return ""
}

// refused is the refusal of the connection a call came in on.
func refused(ctx context.Context) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if info, ok := p.AuthInfo.(peerInfo); ok && info.refusal != "" {
		return status.Error(codes.PermissionDenied, info.refusal)
	}
	return nil
}

// peerOptions make a gRPC server refuse the calls of refused peers.
func (s *Server) peerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(peerCreds{s}),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := refused(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := refused(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
}
