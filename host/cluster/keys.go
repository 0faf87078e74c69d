package cluster

import (
	"fmt"
	"strings"
)

// The key layout. Every key lives under Prefix; the version in it changes
// only with a layout no older host could read.
const (
	// Prefix holds everything hearth keeps in etcd.
	Prefix = "/hearth/v1/"
	// HostsPrefix holds one key per member, bound to its lease.
	HostsPrefix = Prefix + "hosts/"
	// SessionsPrefix holds one key per published session, under its
	// host's ID, bound to the host's lease.
	SessionsPrefix = Prefix + "sessions/"
	// DrainPrefix holds one key per host drained for maintenance (hearth
	// hosts drain), under no lease: the mark outlives the host's
	// restarts until hearth hosts undrain deletes it.
	DrainPrefix = Prefix + "drain/"
)

// DrainKey is the key that marks host id drained: /hearth/v1/drain/<id>.
func DrainKey(id string) string { return DrainPrefix + id }

// HostKey is the key of host id's record: /hearth/v1/hosts/<id>.
func HostKey(id string) string { return HostsPrefix + id }

// SessionKey is the key of a session's summary:
// /hearth/v1/sessions/<host>/<session>.
func SessionKey(host, session string) string { return SessionsPrefix + host + "/" + session }

// HostSessionsPrefix holds the summaries of host's sessions.
func HostSessionsPrefix(host string) string { return SessionsPrefix + host + "/" }

// KeyKind says what a key under Prefix names.
type KeyKind int

// The kinds of keys.
const (
	KeyUnknown KeyKind = iota
	KeyHost
	KeySession
	KeyDrain
)

// ParseKey reads a key under Prefix: a host's record, a session's
// summary, or a host's drain mark. Keys come from etcd, which anyone with access may write: a key
// of neither shape is an error wrapping [ErrBadRecord] that quotes it.
func ParseKey(key string) (kind KeyKind, host, session string, err error) {
	switch {
	case strings.HasPrefix(key, HostsPrefix):
		host = key[len(HostsPrefix):]
		if e := CheckHostID(host); e != nil {
			return KeyUnknown, "", "", fmt.Errorf("%w: key %q: host ID %v", ErrBadRecord, key, e)
		}
		return KeyHost, host, "", nil
	case strings.HasPrefix(key, DrainPrefix):
		host = key[len(DrainPrefix):]
		if e := CheckHostID(host); e != nil {
			return KeyUnknown, "", "", fmt.Errorf("%w: key %q: host ID %v", ErrBadRecord, key, e)
		}
		return KeyDrain, host, "", nil
	case strings.HasPrefix(key, SessionsPrefix):
		rest := key[len(SessionsPrefix):]
		host, session, ok := strings.Cut(rest, "/")
		if !ok {
			return KeyUnknown, "", "", fmt.Errorf("%w: key %q names no session; want %s<host>/<session>", ErrBadRecord, key, SessionsPrefix)
		}
		if e := CheckHostID(host); e != nil {
			return KeyUnknown, "", "", fmt.Errorf("%w: key %q: host ID %v", ErrBadRecord, key, e)
		}
		if e := checkSessionID(session); e != nil {
			return KeyUnknown, "", "", fmt.Errorf("%w: key %q: session ID %v", ErrBadRecord, key, e)
		}
		return KeySession, host, session, nil
	}
	return KeyUnknown, "", "", fmt.Errorf("%w: key %q is under none of %s, %s and %s", ErrBadRecord, key, HostsPrefix, SessionsPrefix, DrainPrefix)
}

// RemoteID names another host's session among placement candidates:
// "<host>/<session>". Host IDs hold no '/', so the first one splits it.
func RemoteID(host, session string) string { return host + "/" + session }

// SplitRemoteID splits a RemoteID; ok is false for an ID without a '/'
// (a local session).
func SplitRemoteID(id string) (host, session string, ok bool) {
	return strings.Cut(id, "/")
}
