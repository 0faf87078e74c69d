//go:build linux

package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The shim runs before main and before TestMain: a process started with
// EnvPolicy never reaches its own program.
func init() {
	s, ok := os.LookupEnv(EnvPolicy)
	if !ok {
		return
	}
	p, err := readPolicy(s)
	if err != nil {
		fail("%v", err)
	}
	if err := apply(p); err != nil {
		fail("%v", err)
	}
	err = syscall.Exec(p.Program, p.Args, without(os.Environ(), EnvPolicy))
	fail("execute %s: %v", p.Program, err)
}

// Attach hands p to the shim that cmd starts: the policy in a sealed
// memory file cmd inherits, its descriptor named by EnvPolicy. The
// caller closes the returned file (its own copy) once cmd has started.
func (p *Policy) Attach(cmd *exec.Cmd) (*os.File, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("hearth-confine-policy", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make the confinement policy's file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "hearth-confine-policy")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the confinement policy: %w", err)
	}
	// Sealed, the file is what the host wrote, whoever else holds it.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, fmt.Errorf("seal the confinement policy: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Env = append(cmd.Env, EnvPolicy+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return f, nil
}

// readPolicy reads the policy from the descriptor the variable's value
// names, and closes it: the program the shim executes inherits neither.
func readPolicy(v string) (*Policy, error) {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q names no inherited descriptor", EnvPolicy, v)
	}
	f := os.NewFile(uintptr(fd), EnvPolicy)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("the confinement policy's descriptor %d: %w", fd, err)
	}
	// ReadAt: the file's offset is shared with the host, which wrote it.
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the confinement policy: %w", err)
	}
	return decode(b)
}

// Access rights, from Landlock's (package landlock/syscall).
const (
	rRead    = ll.AccessFSReadFile | ll.AccessFSReadDir
	rExec    = ll.AccessFSExecute
	rWrite   = ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	rOnFiles = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev | ll.AccessFSResolveUnix
	// handledFS is every filesystem right go-landlock knows; BestEffort
	// keeps those the kernel knows. A right handled and not granted is
	// refused.
	handledFS = (1 << 17) - 1
)

// rights are the Landlock rights of an access.
func rights(a Access) (landlock.AccessFSSet, bool) {
	switch a {
	case Read:
		return rRead | rExec, true
	case ReadOnly:
		return rRead, true
	case ReadByName:
		return ll.AccessFSReadFile, true
	case Write:
		return rRead | rExec | rWrite, true
	case Device:
		return ll.AccessFSReadFile | ll.AccessFSWriteFile, true
	case Socket:
		return rRead | rExec | rWrite | ll.AccessFSResolveUnix, true
	}
	return 0, false
}

// config is the Landlock configuration of p: every filesystem right the
// kernel knows, TCP when p restricts it, and the IPC scopes (signals and
// abstract unix sockets reach only the plugin's own processes: it cannot
// kill its host).
func config(p *Policy) landlock.Config {
	c := landlock.Config{
		HandledAccessFS: handledFS,
		Scoped:          ll.ScopeAbstractUnixSocket | ll.ScopeSignal,
	}
	if p.RestrictTCP {
		c.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	// Denials by the plugin program (after the exec) reach the audit log
	// where the kernel has one (ABI 7).
	return c.BestEffort().EnableLoggingForSubprocesses()
}

// rules are p's grants and ports as Landlock rules.
func rules(p *Policy) ([]landlock.Rule, error) {
	var out []landlock.Rule
	for _, g := range p.Grants {
		r, ok := rights(g.Access)
		if !ok {
			return nil, errors.New("unknown access " + string(g.Access) + " for " + g.Path)
		}
		path := g.Path
		if g.NoFollow {
			fd, err := unix.Openat2(unix.AT_FDCWD, g.Path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
			switch {
			case errors.Is(err, unix.ELOOP):
				return nil, fmt.Errorf("%s: a symbolic link is on the way to it now, which the host did not find when it resolved it: refusing to grant where it leads", g.Path)
			case err != nil && g.Optional && errors.Is(err, unix.ENOENT):
				continue
			case errors.Is(err, unix.ENOSYS):
				// A kernel before openat2 (5.6): Landlock 5.13 has it.
			case err != nil:
				return nil, fmt.Errorf("%s: %w", g.Path, err)
			default:
				// The descriptor is inherited by nothing (CLOEXEC) and
				// names exactly what was opened: go-landlock opens it
				// again through /proc, which follows no path.
				path = "/proc/self/fd/" + strconv.Itoa(fd)
			}
		}
		fi, err := os.Stat(path)
		if err != nil {
			if g.Optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if !fi.IsDir() {
			r &= rOnFiles
		}
		rule := landlock.PathAccess(r, path)
		if g.Optional {
			rule = rule.IgnoreIfMissing()
		}
		out = append(out, rule)
	}
	for _, port := range p.ConnectTCP {
		out = append(out, landlock.ConnectTCP(port))
	}
	return out, nil
}

// apply confines the calling thread (and so the program it executes) to
// p. The thread stays locked: the exec follows on it.
func apply(p *Policy) error {
	rs, err := rules(p)
	if err != nil {
		return err
	}
	fd, flags, err := config(p).NewRulesetFD(rs...)
	if err != nil {
		return err
	}
	if fd < 0 {
		// Best effort on a kernel without Landlock: the host decided to
		// start the plugin anyway (confinement = "auto").
		return nil
	}
	defer unix.Close(fd)
	runtime.LockOSThread() // never unlocked: the exec replaces the process
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return err
	}
	if err := installFilter(p.RestrictTCP); err != nil {
		return fmt.Errorf("install the seccomp filter: %w", err)
	}
	return dropCapabilities()
}

// dropCapabilities leaves the program no capabilities, also when the host
// runs as root: root's would let it load a kernel module, reconfigure
// the network, set the clock or reboot, none of which Landlock governs.
// The inheritable and ambient sets are emptied, and for root the bounding
// set too: an exec gives root its bounding set, and any other user only
// what the ambient and inheritable sets (and the file, which
// no_new_privs ignores) pass on. A process without capabilities has
// nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read the capabilities: %w", err)
	}
	if data[0].Permitted|data[1].Permitted|data[0].Inheritable|data[1].Inheritable == 0 {
		return nil
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last && os.Geteuid() == 0; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear the inheritable capabilities: %w", err)
	}
	return nil
}

func probe() Status {
	v, err := ll.LandlockGetABIVersion()
	switch {
	case err == nil && v > 0:
		return Status{ABI: v}
	case errors.Is(err, unix.ENOSYS):
		return Status{Reason: "this kernel was built without Landlock (CONFIG_SECURITY_LANDLOCK)"}
	case errors.Is(err, unix.EOPNOTSUPP):
		return Status{Reason: "Landlock is built in but not enabled; add landlock to the kernel's lsm= boot parameter"}
	case err != nil:
		return Status{Reason: err.Error()}
	}
	return Status{Reason: "the kernel reports no Landlock ABI"}
}
