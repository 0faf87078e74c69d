package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/confine"
	"github.com/hearth-dev/hearth/internal/paths"
)

// Confinement is what a confined plugin may reach (Linux, Landlock): its
// workspace (read and write), Read and Write, and what any program needs
// to run (systemGrants); nothing else. Protect is never reached, even
// when it lies inside the workspace or a granted path.
type Confinement struct {
	// Require fails the start where Landlock is unavailable; without it
	// the plugin runs unconfined there (the host says so when it starts).
	Require bool
	// Read and Write are absolute paths the agent block grants.
	Read, Write []string
	// Protect are the paths no plugin reaches: the data directory, the
	// token file.
	Protect []string
	// Blobs is the host's store of run files, in the data directory: a
	// plugin reads the files it is given (sdk.File.Path, named by their
	// SHA-256) and cannot list the others.
	Blobs string
	// RestrictTCP refuses TCP binds and connects to ports other than
	// ConnectTCP.
	RestrictTCP bool
	ConnectTCP  []uint16
	// Pins are where the grants led when the agent's config was loaded
	// (PinGrants); nil pins nothing.
	Pins Pins
}

// LandlockStatus says whether plugins can be confined on this system:
// the kernel's Landlock ABI, or why there is none.
type LandlockStatus = confine.Status

// Landlock reports whether plugins can be confined on this system, and
// if not, why.
func Landlock() LandlockStatus { return confine.Probe() }

// systemGrants are what programs need to run: their libraries and
// interpreters, a few devices, the process's own /proc entry, and the CPU
// information runtimes size themselves by. Missing ones are skipped.
var systemGrants = []confine.Grant{
	{Path: "/usr", Access: confine.Read, Optional: true},
	{Path: "/bin", Access: confine.Read, Optional: true},
	{Path: "/sbin", Access: confine.Read, Optional: true},
	{Path: "/lib", Access: confine.Read, Optional: true},
	{Path: "/lib32", Access: confine.Read, Optional: true},
	{Path: "/lib64", Access: confine.Read, Optional: true},
	{Path: "/libx32", Access: confine.Read, Optional: true},
	{Path: "/dev/null", Access: confine.Device, Optional: true},
	{Path: "/dev/zero", Access: confine.ReadOnly, Optional: true},
	{Path: "/dev/random", Access: confine.ReadOnly, Optional: true},
	{Path: "/dev/urandom", Access: confine.ReadOnly, Optional: true},
	// Resolved by the shim to /proc/<its pid>, which the plugin keeps
	// after the exec.
	{Path: "/proc/self", Access: confine.ReadOnly, Optional: true},
	{Path: "/sys/devices/system/cpu", Access: confine.ReadOnly, Optional: true},
	{Path: "/sys/fs/cgroup", Access: confine.ReadOnly, Optional: true},
}

// EtcFiles are what a plugin reads of /etc: what the dynamic linker, name
// resolution, TLS, time zones, locales, user names and the usual tools
// need to run, and nothing that holds a secret. /etc is not granted
// whole: it holds shadow and gshadow (readable by a plugin of a host
// run as root), TLS and SSH private keys, and wherever an operator
// keeps hearth's token file. A pattern ends in * (Debian's python3.N
// directories, with sitecustomize.py). docs/confinement.md lists them.
var EtcFiles = []string{
	// The dynamic linker.
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	// Names: hosts, services and users (passwd holds no password hash:
	// those are in shadow, which is not granted).
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/networks", "/etc/passwd", "/etc/group", "/etc/hostname",
	// TLS roots, never the private keys beside them.
	"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/ssl/openssl.cnf", "/etc/ca-certificates",
	"/etc/ca-certificates.conf", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/etc/pki/tls/openssl.cnf",
	// Time, locale, terminals, file types.
	"/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale",
	"/etc/terminfo", "/etc/inputrc", "/etc/mime.types", "/etc/magic",
	// Shells and tools that read a system-wide file at start.
	"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/gitconfig", "/etc/os-release",
	"/etc/debian_version", "/etc/alternatives", "/etc/python3*",
}

// etcGrants are EtcFiles that exist here, patterns expanded.
func etcGrants() []confine.Grant {
	var out []confine.Grant
	for _, f := range EtcFiles {
		names := []string{f}
		if strings.HasSuffix(f, "*") {
			names, _ = filepath.Glob(f)
		}
		for _, n := range names {
			out = append(out, confine.Grant{Path: n, Access: confine.ReadOnly, Optional: true})
		}
	}
	return out
}

// Pins are where an agent's grants led when its config was loaded: each
// grant path (workspace, read_paths, write_paths, the files its command
// names) to its resolution, links followed. A start whose grant leads
// elsewhere is refused, naming the path: an agent may write where some
// grants are (its workspace, a write_paths entry), and a link it planted
// there would otherwise redirect the grant at its next start (issue 25,
// finding 2).
type Pins map[string]string

// PinGrants resolves an agent's grant paths, as its config is loaded.
// workspace and argv are the plugin's; a path that does not exist yet is
// pinned when it first does, by the start that finds it.
func PinGrants(workspace string, read, write, argv []string) Pins {
	pins := Pins{}
	pin := func(p string) {
		if _, err := os.Stat(p); err == nil {
			pins[p] = resolve(p)
		}
	}
	if workspace != "" {
		pin(workspace)
	}
	for _, p := range append(slices.Clip(read), write...) {
		pin(p)
	}
	for _, a := range argFiles(argv, workspace) {
		pin(a)
	}
	return pins
}

// check reports the first grant whose resolution changed since it was
// pinned.
func (p Pins) check(what, path string) error {
	was, ok := p[path]
	if !ok {
		return nil
	}
	if now := resolve(path); now != was {
		return fmt.Errorf("%w: %s %s led to %s when the config was loaded and leads to %s now: a symbolic link was put in its place, "+
			"which would redirect the grant (a plugin may write there); remove the link, or, if the change is yours, restart hearth (or reload a config that changes the agent block)",
			hearth.ErrConfinement, what, path, was, now)
	}
	return nil
}

// argFiles are the command's arguments that name existing files, made
// absolute against workspace.
func argFiles(argv []string, workspace string) []string {
	var out []string
	for _, a := range argv[min(1, len(argv)):] {
		if !filepath.IsAbs(a) {
			a = filepath.Join(workspace, a)
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			out = append(out, a)
		}
	}
	return out
}

// policy is the shim's policy for running exe, with argv as the program
// sees it, confined by c, in workspace. A pinned program's sealed copy
// replaces exe as the file executed, and the directory of go-plugin's
// sockets is added, once the command is made.
func policy(c *Confinement, exe string, argv []string, workspace string) (*confine.Policy, error) {
	p := &confine.Policy{Program: exe, Args: argv, RestrictTCP: c.RestrictTCP, ConnectTCP: c.ConnectTCP}
	p.Grants = append(p.Grants, systemGrants...)
	p.Grants = append(p.Grants, etcGrants()...)
	s := newSplitter(c.Protect)
	// The program's own file. A pinned program runs from its sealed copy,
	// which Landlock lets any process execute (an anonymous file is in no
	// directory a rule could name); its path is granted all the same, for
	// a program that reads itself.
	s.add(exe, confine.Read, false)
	// An interpreter's script: an argument naming an existing file is
	// the program as much as the interpreter is. The file is granted,
	// not its directory, which may be a home directory or /: what it
	// imports beside it is granted with read_paths, as is code elsewhere
	// (a virtualenv, a package's source).
	for _, a := range argFiles(argv, workspace) {
		if err := c.Pins.check("the command's argument", a); err != nil {
			return nil, err
		}
		s.add(a, confine.Read, false)
	}
	if workspace != "" {
		if err := c.Pins.check("the workspace", workspace); err != nil {
			return nil, err
		}
		if err := s.add(workspace, confine.Write, true); err != nil {
			return nil, fmt.Errorf("%w: the workspace %s %v", hearth.ErrConfinement, workspace, err)
		}
	}
	for _, r := range c.Read {
		if err := c.Pins.check("read_paths entry", r); err != nil {
			return nil, err
		}
		if err := s.add(r, confine.Read, true); err != nil {
			return nil, fmt.Errorf("%w: read_paths entry %s %v", hearth.ErrConfinement, r, err)
		}
	}
	for _, w := range c.Write {
		if err := c.Pins.check("write_paths entry", w); err != nil {
			return nil, err
		}
		if err := s.add(w, confine.Write, true); err != nil {
			return nil, fmt.Errorf("%w: write_paths entry %s %v", hearth.ErrConfinement, w, err)
		}
	}
	p.Grants = append(p.Grants, s.grants...)
	if c.Blobs != "" {
		p.Grants = append(p.Grants, confine.Grant{Path: c.Blobs, Access: confine.ReadByName, Optional: true})
	}
	return p, nil
}

// splitter grants paths, keeping the protected ones out of reach.
// Landlock only allows: what is granted on a directory holds for all
// beneath it. So a granted directory with a protected path inside is not
// granted itself: its entries are, one by one, except the branch that
// leads to the protected path, which is split the same way. The
// directories on that branch get nothing themselves: not even listing,
// which Landlock would extend to the protected path beneath (its file
// names, and run files read by name would become readable by listing).
// So a plugin cannot list them or make new entries in them, and does not
// reach entries made there after it started (docs/confinement.md).
type splitter struct {
	protect []string
	seen    map[string]bool
	grants  []confine.Grant
}

// newSplitter keeps protect, resolved, out of what it grants.
func newSplitter(protect []string) *splitter {
	s := &splitter{protect: make([]string, 0, len(protect)), seen: map[string]bool{}}
	for _, pr := range protect {
		s.protect = append(s.protect, resolve(pr))
	}
	return s
}

func (s *splitter) add(path string, a confine.Access, must bool) error {
	rp := resolve(path)
	if _, err := os.Stat(rp); err != nil {
		if must {
			return errors.New("does not exist; create it or remove it from the agent block")
		}
		return nil
	}
	for _, pr := range s.protect {
		if paths.Within(rp, pr) {
			if must {
				return fmt.Errorf("lies inside %s, which no plugin may reach; move it out, or move the data directory (data_dir)", pr)
			}
			return nil
		}
	}
	s.split(rp, a, !must)
	return nil
}

func (s *splitter) split(rp string, a confine.Access, optional bool) {
	if s.seen[rp+"\x00"+string(a)] {
		return
	}
	s.seen[rp+"\x00"+string(a)] = true
	var inside bool
	for _, pr := range s.protect {
		if paths.Within(rp, pr) {
			return
		}
		if paths.Within(pr, rp) {
			inside = true
		}
	}
	if !inside {
		// rp is resolved: the shim opens it without following links, so
		// that a link made in its place since cannot redirect it.
		s.grants = append(s.grants, confine.Grant{Path: rp, Access: a, Optional: optional, NoFollow: true})
		return
	}
	entries, err := os.ReadDir(rp)
	if err != nil {
		return
	}
	for _, e := range entries {
		child := filepath.Join(rp, e.Name())
		if slices.Contains(s.protect, child) {
			continue
		}
		// Landlock grants where a link leads, so a link is judged by
		// its target: into the protected path, back up to an ancestor,
		// or nowhere. (Links further down need no care: Landlock judges
		// an access by the path it resolves to, not the way there.)
		target := resolve(child)
		if _, err := os.Stat(target); err != nil {
			continue
		}
		s.split(target, a, true)
	}
}

// resolve is path made absolute, clean and free of symlinks as far as
// it exists.
func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// CheckGrants checks, without starting anything, that the paths an agent
// block grants exist and lie outside protect (the data directory): what
// `hearth config validate` reports, and what a confined start would
// refuse.
func CheckGrants(read, write, protect []string) error {
	s := newSplitter(protect)
	var errs []error
	for _, g := range []struct {
		name  string
		paths []string
	}{{"read_paths", read}, {"write_paths", write}} {
		for _, p := range g.paths {
			if err := s.add(p, confine.Read, true); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s entry %s %v", hearth.ErrConfinement, g.name, p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// outsideHint explains a confined program that died before its handshake
// when the file that runs (exe, its links followed) lies outside what the
// plugin may read: an interpreter (pyenv's, conda's, a virtualenv's link
// to one) is granted its own file but reads its whole installation, and
// dies of a "permission denied" on its standard library. It names the
// installation to grant: the directory above the program's bin. "" when
// the program lies where the plugin may read.
func outsideHint(exe, workspace string, c *Confinement) string {
	real := resolve(exe)
	readable := slices.Concat(c.Read, c.Write)
	if workspace != "" {
		readable = append(readable, workspace)
	}
	for _, g := range systemGrants {
		readable = append(readable, g.Path)
	}
	for _, r := range readable {
		if paths.Within(real, resolve(r)) {
			return ""
		}
	}
	prefix := filepath.Dir(real)
	if filepath.Base(prefix) == "bin" {
		prefix = filepath.Dir(prefix)
	}
	via := ""
	if real != exe {
		via = " (through " + exe + ")"
	}
	return fmt.Sprintf("the program runs %s%s, outside what a confined plugin may read: it may run that file, but an interpreter also reads its installation (its standard library), and the kernel refuses that. Grant it in the agent block: read_paths = [%q]; or use an interpreter under /usr", real, via, prefix)
}
