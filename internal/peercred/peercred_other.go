//go:build !linux

// Package peercred asks the kernel who is at the other end of a unix
// socket connection; elsewhere than Linux it cannot, and the socket's
// owner-only mode is what keeps others out.
package peercred

import (
	"errors"
	"fmt"
	"net"
)

// Peer is who is at the other end.
type Peer struct{ PID, UID, Pidfd int }

// Of reports that this system cannot tell.
func Of(net.Conn, bool) (Peer, error) {
	return Peer{Pidfd: -1}, fmt.Errorf("peer credentials are read on Linux only: %w", errors.ErrUnsupported)
}

// Alive cannot tell, and says yes.
func (Peer) Alive() bool { return true }

// Close does nothing.
func (Peer) Close() {}
