// Package confine runs a plugin program under Landlock, the Linux
// security module that lets an unprivileged process give up access to
// files and network ports for itself and everything it starts.
//
// Landlock restricts the calling thread and its future children, so a
// host cannot confine a child without confining itself. The host starts
// its own executable instead (/proc/self/exe, which is the running binary
// even if the file on disk was replaced) with the policy in an inherited
// file whose descriptor the environment variable EnvPolicy names (Attach);
// this package's init function sees it, reads and closes the file,
// applies the policy to its thread, removes the variable and executes the
// plugin program in place (syscall.Exec: same process, same PID, same
// inherited descriptors, so a pinned program's sealed copy at
// /proc/self/fd/N and go-plugin's handshake on stdout work unchanged).
// Because the shim runs in an init function, any binary that links the
// host (hearth, or a `go test` binary that re-executes itself as a
// plugin) is its own shim, with nothing to call from main or TestMain.
//
// What a policy grants is decided by the host (package host/process);
// this package only applies it. Paths not granted are refused by the
// kernel with EACCES, whatever the process's user may otherwise do.
package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// EnvPolicy names the descriptor of the file that carries the JSON
// Policy from the host to the shim. Neither reaches the plugin program.
//
// The policy is not in the variable itself: a workspace that holds the
// data directory is granted entry by entry, and a workspace of a few
// thousand entries made a policy longer than the kernel takes for one
// variable (MAX_ARG_STRLEN, 128 KiB), so the start failed with E2BIG.
// A file has no such bound.
const EnvPolicy = "HEARTH_CONFINE_POLICY"

// Access is what a Grant allows beneath its path.
type Access string

// Accesses.
const (
	// Read lets the program read files and list directories beneath the
	// path, and execute files there.
	Read Access = "read"
	// ReadOnly is Read without execution: configuration, not programs.
	ReadOnly Access = "read-only"
	// Write adds creating, changing and removing files and directories
	// (and executing what is there) to Read.
	Write Access = "write"
	// ReadByName lets the program read files beneath the path whose
	// names it knows, without listing any directory there: run files in
	// the host's content-addressed store, named by their SHA-256.
	ReadByName Access = "read-by-name"
	// Device is read and write of a device file such as /dev/null,
	// without ioctl.
	Device Access = "device"
	// Socket is Write plus connecting to unix sockets beneath the path,
	// where the kernel can restrict that (Landlock ABI 9): the directory
	// go-plugin's sockets are made in.
	Socket Access = "socket"
)

// Grant is one path and what the program may do beneath it.
type Grant struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// Optional grants are skipped when the path does not exist (a /lib64
	// that this system lacks, a workspace entry removed since).
	Optional bool `json:"optional,omitempty"`
	// NoFollow: Path is resolved already, and is opened without following
	// any symbolic link: a link found on the way fails the start (one was
	// put there since the host resolved it).
	NoFollow bool `json:"no_follow,omitempty"`
}

// Policy is what the shim applies before it executes the program.
type Policy struct {
	// Program is the file to execute and Args its argv (Args[0] as the
	// program should see it).
	Program string   `json:"program"`
	Args    []string `json:"args"`
	Grants  []Grant  `json:"grants"`
	// RestrictTCP, when set, refuses TCP binds, and TCP connects to
	// ports other than ConnectTCP (Landlock ABI 4 and later).
	RestrictTCP bool     `json:"restrict_tcp,omitempty"`
	ConnectTCP  []uint16 `json:"connect_tcp,omitempty"`
}

// decode reads a policy from the file's content.
func decode(b []byte) (*Policy, error) {
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("the confinement policy in %s does not decode: %w", EnvPolicy, err)
	}
	if p.Program == "" || len(p.Args) == 0 {
		return nil, fmt.Errorf("the confinement policy in %s names no program", EnvPolicy)
	}
	return &p, nil
}

// Status says whether plugins can be confined on this system.
type Status struct {
	// ABI is the kernel's Landlock ABI version; 0 when Landlock is
	// unavailable.
	ABI int
	// Reason says why Landlock is unavailable ("" when it is available).
	Reason string
}

// Available reports whether plugins can be confined.
func (s Status) Available() bool { return s.ABI > 0 }

// String is "Landlock ABI 7", or why Landlock is unavailable.
func (s Status) String() string {
	if s.Available() {
		return fmt.Sprintf("Landlock ABI %d", s.ABI)
	}
	return "Landlock unavailable: " + s.Reason
}

// fake, when set, replaces the kernel's answer (tests of an unavailable
// Landlock on a system that has it).
var fake *Status

// Probe asks the kernel whether Landlock is available.
func Probe() Status {
	if fake != nil {
		return *fake
	}
	return probe()
}

// FakeForTesting makes Probe answer s until the returned function is
// called.
func FakeForTesting(s Status) (restore func()) {
	old := fake
	fake = &s
	return func() { fake = old }
}

// without returns env without the variable name.
func without(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// fail reports a shim failure on stderr, which the host shows beside the
// start error, and exits: the handshake never comes.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "hearth: cannot confine the plugin: "+format+"\n", args...)
	os.Exit(126)
}
