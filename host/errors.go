package host

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a plugin can cause. A *PluginError wraps one of them; test with
// errors.Is.
var (
	// ErrPluginStart: the plugin's program could not be started at all.
	ErrPluginStart = errors.New("plugin could not be started")
	// ErrChecksumMismatch: the program does not match its pinned sha256.
	ErrChecksumMismatch = errors.New("plugin program does not match its pinned sha256")
	// ErrStartTimeout: the plugin did not finish the handshake in time.
	ErrStartTimeout = errors.New("plugin did not finish the handshake in time")
	// ErrHandshake: the plugin spoke something other than the handshake.
	ErrHandshake = errors.New("plugin failed the handshake")
	// ErrProtocolVersion: host and plugin share no protocol version.
	ErrProtocolVersion = errors.New("plugin speaks an unsupported protocol version")
	// ErrPluginExited: the plugin process exited while the host needed it.
	ErrPluginExited = errors.New("plugin process exited")
	// ErrPluginHung: the plugin stopped answering, or did not finish a task
	// by its deadline, and was stopped.
	ErrPluginHung = errors.New("plugin stopped responding")
)

// PluginError is a failure of one plugin process: which agent and session,
// what the host was doing, what went wrong, and how to fix it where that is
// known.
type PluginError struct {
	Agent   string
	Session string
	// Op is what the host was doing: "start", "run task task-1", ...
	Op string
	// Err is one of the Err* sentinels above, or the underlying error.
	Err error
	// Detail is what the plugin or go-plugin said.
	Detail string
	// Hint says how to fix the problem, when the host can tell.
	Hint string
	// Stderr holds the last lines the plugin wrote to stderr.
	Stderr []string
}

func (e *PluginError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %q (session %s): %s: %v", e.Agent, e.Session, e.Op, e.Err)
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	if len(e.Stderr) > 0 {
		fmt.Fprintf(&b, "\nlast lines of the plugin's stderr:\n  %s", strings.Join(e.Stderr, "\n  "))
	}
	return b.String()
}

func (e *PluginError) Unwrap() error { return e.Err }
