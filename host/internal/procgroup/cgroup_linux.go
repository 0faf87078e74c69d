package procgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup per plugin (cgroup v2). A plugin is started straight into a
// cgroup of its own (clone3 with CLONE_INTO_CGROUP: there is no moment
// when it runs outside it), and every process it starts is born in the
// same cgroup, whatever it does afterwards: setsid, a double fork, an
// exit of every process between it and the plugin. Leaving takes a write
// to a cgroup.procs file, which Landlock refuses a confined plugin
// (/sys/fs/cgroup is granted read-only at most). So the cgroup is what
// the daemon recognises a plugin's descendants by (registry.go in
// host/process), and what stopping a plugin kills (cgroup.kill), where a
// process group misses whatever called setsid.
//
// The cgroups are made below the host's own, in a directory named after
// the host's PID (hearth.PID), one per plugin start. That takes write
// access to the host's cgroup: root has it, and so has a user whose
// service manager delegated the subtree (systemd: Delegate=yes, as
// `systemd-run --user -p Delegate=yes hearth serve` gives). Elsewhere
// Cgroups reports why not, and plugins run in the host's cgroup as
// before (docs/confinement.md says what the daemon then relies on).

// Cgroups is where this host makes its plugins' cgroups.
type Cgroups struct {
	// Root is the cgroup v2 mount point, and Dir the directory of this
	// host's plugins below it; Rel is Dir relative to Root, as
	// /proc/PID/cgroup names cgroups ("/hearth.123").
	Root, Dir, Rel string
}

var (
	cgroupsOnce = sync.OnceValues(probeCgroups)
	cgroupSeq   atomic.Uint64
	noCgroups   atomic.Bool
)

// HostCgroups returns where this host makes its plugins' cgroups, or why
// it cannot.
func HostCgroups() (*Cgroups, error) {
	if noCgroups.Load() {
		return nil, errors.New("cgroups are turned off for this test")
	}
	return cgroupsOnce()
}

// CgroupsOffForTesting makes later plugins start without a cgroup of
// their own, as on a system that cannot give them one, until the
// returned function is called. Only tests and benchmarks call it.
func CgroupsOffForTesting() (restore func()) {
	old := noCgroups.Swap(true)
	return func() { noCgroups.Store(old) }
}

func probeCgroups() (*Cgroups, error) {
	root, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	own, err := CgroupOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(root, own)
	sweepStale(parent)
	name := "hearth." + strconv.Itoa(os.Getpid())
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make a cgroup for plugins in %s: %w (run as root, or in a delegated cgroup: systemd-run --user -p Delegate=yes)", parent, err)
	}
	return &Cgroups{Root: root, Dir: dir, Rel: filepath.Join(own, name)}, nil
}

// sweepStale removes what hosts killed with kill -9 left below parent:
// their plugins' descendants that left the process group are killed,
// and the cgroups removed. A hearth.PID whose PID is alive is another
// host's (or a process that took the PID since: left alone, at worst
// until that process exits).
func sweepStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := strings.CutPrefix(e.Name(), "hearth.")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || !e.IsDir() || n == os.Getpid() {
			continue
		}
		if err := syscall.Kill(n, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		leaves, _ := os.ReadDir(dir)
		for _, l := range leaves {
			if l.IsDir() {
				removeCgroup(filepath.Join(dir, l.Name()))
			}
		}
		_ = os.Remove(dir)
	}
}

// cgroup2Mount finds where the cgroup v2 hierarchy is mounted:
// /sys/fs/cgroup on a unified system, /sys/fs/cgroup/unified on a
// hybrid one.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 && f[3] == "/" {
			return unescapeMount(f[4]), nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// CgroupOf returns the cgroup v2 path of process pid, as
// /proc/PID/cgroup names it ("/hearth.123/p7").
func CgroupOf(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return rest, nil
		}
	}
	return "", fmt.Errorf("process %d is in no cgroup v2", pid)
}

// pluginCgroup is the cgroup one plugin start runs in.
type pluginCgroup struct {
	dir, rel string
	fd       int
}

// newPluginCgroup makes a cgroup for one plugin start, or returns nil
// where this host has none to give.
func newPluginCgroup() *pluginCgroup {
	cg, err := HostCgroups()
	if err != nil {
		return nil
	}
	name := "p" + strconv.FormatUint(cgroupSeq.Add(1), 10)
	dir := filepath.Join(cg.Dir, name)
	// The host's directory goes when its last plugin does (remove), and
	// comes back with the next.
	if err := os.MkdirAll(cg.Dir, 0o755); err != nil {
		return nil
	}
	if err := os.Mkdir(dir, 0o755); errors.Is(err, fs.ErrNotExist) {
		// Removed by the last plugin's stop in between.
		_ = os.MkdirAll(cg.Dir, 0o755)
		err = os.Mkdir(dir, 0o755)
		if err != nil {
			return nil
		}
	} else if err != nil {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil
	}
	return &pluginCgroup{dir: dir, rel: filepath.Join(cg.Rel, name), fd: fd}
}

// attach has the process cmd starts born in the cgroup.
func (c *pluginCgroup) attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD, a.CgroupFD = true, c.fd
}

// started closes the descriptor the start needed.
func (c *pluginCgroup) started() {
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
}

// kill kills every process in the cgroup.
func (c *pluginCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove kills what is left in the cgroup, waits for it to be empty, and
// removes it.
func (c *pluginCgroup) remove() {
	c.started()
	removeCgroup(c.dir)
	// The host's directory too, once no plugin's is left in it (the
	// kernel refuses while one is): nothing stays behind a host that
	// exits.
	_ = os.Remove(filepath.Dir(c.dir))
}

// removeCgroup kills every process in the cgroup at dir and removes it
// once it is empty. The kernel says when it is (cgroup.events, which
// inotify reports as modified); a process that does not die within
// cgroupDrain (one stuck in the kernel) leaves the directory behind, and
// the next host's sweep removes it.
func removeCgroup(dir string) {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	events := filepath.Join(dir, "cgroup.events")
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err == nil {
		defer unix.Close(in)
		_, _ = unix.InotifyAddWatch(in, events, unix.IN_MODIFY)
	}
	deadline := time.Now().Add(cgroupDrain)
	for {
		if b, err := os.ReadFile(events); err != nil || bytes.Contains(b, []byte("populated 0")) {
			break
		}
		left := time.Until(deadline)
		if left <= 0 || in < 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		_, _ = unix.Poll(fds, int(min(left, 100*time.Millisecond)/time.Millisecond)+1)
		var buf [4096]byte
		_, _ = unix.Read(in, buf[:])
	}
	_ = os.Remove(dir)
}

// cgroupDrain bounds the wait for a killed cgroup to empty.
const cgroupDrain = 5 * time.Second
