// Package peercred asks the kernel who is at the other end of a unix
// socket connection: the daemon, of its callers (host/api), and its
// client, of the daemon (host/api/client).
package peercred

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the process at the
// other end, taken when the connection was made.
const soPeerPidfd = 77

// Peer is who the kernel says is at the other end.
type Peer struct {
	PID, UID int
	// Pidfd refers to the process PID was when the connection was made,
	// or is -1 where the kernel has none to give; the caller closes it.
	Pidfd int
}

// Of asks the kernel who is at the other end of c, which must be a unix
// socket connection. With pidfd, it asks for a pidfd too.
func Of(c net.Conn, pidfd bool) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("not a unix socket connection: %T", c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	p := Peer{Pidfd: -1}
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); cerr == nil {
			p.PID, p.UID = int(cred.Pid), int(cred.Uid)
		}
		if pidfd {
			if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd); err == nil {
				p.Pidfd = v
			}
		}
	}); err != nil {
		return Peer{}, err
	}
	return p, cerr
}

// Alive reports whether the process the peer's pidfd refers to still
// runs: its PID still names it. Without a pidfd, it cannot tell, and
// says yes.
func (p Peer) Alive() bool {
	return p.Pidfd < 0 || unix.PidfdSendSignal(p.Pidfd, 0, nil, 0) == nil
}

// Close closes the peer's pidfd.
func (p Peer) Close() {
	if p.Pidfd >= 0 {
		unix.Close(p.Pidfd)
	}
}
