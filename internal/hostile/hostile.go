// Package hostile is the escape suite's attacker: an agent built on
// hearth's SDK that, run as a confined plugin the way users run agents,
// tries every way out of its sandbox the project knows of (issue 25, and
// issues 13 and 19 before it) and reports each attempt to the test that
// started it. The test (host/api's TestEscapeSuite) requires every attempt
// to fail; an attempt that succeeds says what it reached.
//
// The task's prompt is a JSON Targets; the output is a JSON list of
// Attempt. Attempts that need another process (setsid, a double fork, a
// child) run this same binary again: a process started with EnvHelper
// set runs the helper it names from this package's init function, before
// main or TestMain, and exits.
package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/sdk"
)

// Targets is what the test points the attacker at.
type Targets struct {
	// The daemon: its unix socket, TCP API, HTTP side, token file, data
	// directory and PID (the host).
	Socket, TCP, HTTP, TokenFile, DataDir string
	HostPID                               int
	// SiblingPID is another agent's plugin.
	SiblingPID int
	// Home is a home directory outside every grant, with Bashrc in it;
	// ArgFile is a file in it that the agent's command names.
	Home, Bashrc, ArgFile string
	// Secret is a file outside every grant.
	Secret string
	// WriteGrant is a write_paths entry: a directory the agent may
	// write, which it replaces with a link to Home between starts.
	WriteGrant string
	// Abstract is an abstract unix socket the test listens on, outside
	// the sandbox ("@name").
	Abstract string
	// Restricted: the agent's connect_ports is set ([]), so that TCP,
	// UDP and the rest are refused; otherwise TCP is open, and the
	// daemon's own authentication is what must refuse.
	Restricted bool
	// Stage: "attack" tries everything; "api" only the daemon's API;
	// "plant" replaces WriteGrant with a link to Home and exits the
	// plugin, so that the next start meets the link; "reap" writes
	// through WriteGrant after that start.
	Stage string
}

// Attempt is one thing the attacker tried.
type Attempt struct {
	Name string `json:"name"`
	// Escaped: it got what it tried for. Detail says what happened.
	Escaped bool   `json:"escaped"`
	Detail  string `json:"detail"`
}

// Agent is the attacker.
type Agent struct{}

func (Agent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "hostile", Version: "0.0.1-test", Capacity: 1}, nil
}

func (Agent) Run(ctx context.Context, t sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
	var tg Targets
	if err := json.Unmarshal([]byte(t.Prompt), &tg); err != nil {
		return sdk.Result{}, sdk.Permanent(err)
	}
	var out []Attempt
	switch tg.Stage {
	case "plant":
		out = append(out, plant(tg))
		b, _ := json.Marshal(out)
		// Exit once the result is on its way: the next task starts a new
		// plugin, which meets the link.
		go func() { time.Sleep(200 * time.Millisecond); os.Exit(3) }()
		return sdk.Result{Output: string(b)}, nil
	case "reap":
		out = append(out, reap(tg))
	case "api":
		out = attackAPI(ctx, tg, nil)
	default:
		out = attack(ctx, tg)
	}
	b, err := json.Marshal(out)
	return sdk.Result{Output: string(b)}, err
}

var _ sdk.Agent = Agent{}

// attack tries everything that needs no second start.
func attack(ctx context.Context, tg Targets) []Attempt {
	var out []Attempt
	try := func(name string, fn func() (bool, string)) {
		escaped, detail := fn()
		out = append(out, Attempt{Name: name, Escaped: escaped, Detail: detail})
	}
	// Files.
	for name, p := range map[string]string{
		"read the token file":                 tg.TokenFile,
		"read the secret outside the grants":  tg.Secret,
		"read the home directory's .bashrc":   tg.Bashrc,
		"read /etc/shadow":                    "/etc/shadow",
		"read /etc/gshadow":                   "/etc/gshadow",
		"read the host's memory (/proc/PID)":  fmt.Sprintf("/proc/%d/environ", tg.HostPID),
		"read the secret via /proc/PID/root":  fmt.Sprintf("/proc/%d/root%s", tg.HostPID, tg.Secret),
		"read the secret via /proc/1/root":    "/proc/1/root" + tg.Secret,
		"read the token via /proc/PID/cwd":    fmt.Sprintf("/proc/%d/cwd/%s", tg.HostPID, upTo(tg.TokenFile)),
		"read the secret via /proc/self/cwd":  "/proc/self/cwd/" + upTo(tg.Secret),
		"read the data directory's store":     filepath.Join(tg.DataDir, "store", "MANIFEST"),
		"read the secret via /proc/self/root": "/proc/self/root" + tg.Secret,
	} {
		try(name, func() (bool, string) { return readFile(p) })
	}
	try("list the data directory", func() (bool, string) {
		es, err := os.ReadDir(tg.DataDir)
		return err == nil, fmt.Sprintf("%d entries, %v", len(es), err)
	})
	try("write the home directory's .bashrc", func() (bool, string) {
		f, err := os.OpenFile(tg.Bashrc, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return false, err.Error()
		}
		f.Close()
		return true, "opened for writing"
	})
	try("hard-link the secret into the workspace", func() (bool, string) {
		dst := filepath.Join(tg.WriteGrant, "linked-secret")
		err := os.Link(tg.Secret, dst)
		if err != nil {
			return false, err.Error()
		}
		return readFile(dst)
	})
	try("hard-link the secret over the command's file", func() (bool, string) {
		err := os.Link(tg.Secret, filepath.Join(filepath.Dir(tg.ArgFile), "linked"))
		return err == nil, fmt.Sprint(err)
	})
	try("inherited descriptors into the data directory", func() (bool, string) {
		return leakedFDs(tg.DataDir)
	})
	try("the daemon's token in the environment", func() (bool, string) {
		for _, kv := range os.Environ() {
			if strings.Contains(kv, "TOKEN") || strings.Contains(kv, "HEARTH_CONFINE") {
				return true, kv
			}
		}
		return false, "none"
	})

	// Processes.
	try("signal the host", func() (bool, string) {
		err := syscall.Kill(tg.HostPID, 0)
		return err == nil, fmt.Sprint(err)
	})
	try("ptrace the host", func() (bool, string) { return ptrace(tg.HostPID) })
	if tg.SiblingPID > 0 {
		try("ptrace a sibling plugin", func() (bool, string) { return ptrace(tg.SiblingPID) })
		try("signal a sibling plugin", func() (bool, string) {
			err := syscall.Kill(tg.SiblingPID, 0)
			return err == nil, fmt.Sprint(err)
		})
	}
	try("load a kernel module", func() (bool, string) {
		f, err := os.Open("/dev/null")
		if err != nil {
			return false, err.Error()
		}
		defer f.Close()
		err = unix.FinitModule(int(f.Fd()), "", 0)
		return err == nil, fmt.Sprint(err) // EPERM without CAP_SYS_MODULE; ENOSYS on a kernel without modules
	})
	try("set the host name", func() (bool, string) {
		name, _ := os.Hostname()
		err := unix.Sethostname([]byte(name))
		return err == nil, fmt.Sprint(err)
	})
	try("start a process through a service manager", func() (bool, string) {
		for _, argv := range [][]string{{"systemd-run", "--user", "--collect", "true"}, {"systemd-run", "--collect", "true"}} {
			if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err == nil {
				return true, strings.Join(argv, " ") + ": " + string(out)
			}
		}
		cmd := exec.CommandContext(ctx, "at", "now")
		cmd.Stdin = strings.NewReader("true\n")
		if out, err := cmd.CombinedOutput(); err == nil {
			return true, "at: " + string(out)
		}
		return false, "no service manager accepted a job"
	})
	try("io_uring (sockets past the seccomp filter)", func() (bool, string) {
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(ptr(&params[0])), 0)
		if errno == 0 {
			unix.Close(int(fd))
			return true, "io_uring_setup succeeded"
		}
		return false, errno.Error()
	})

	out = attackAPI(ctx, tg, out)

	// Sockets of every family.
	try("connect to an abstract unix socket outside", func() (bool, string) {
		c, err := net.DialTimeout("unix", tg.Abstract, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, "connected"
	})
	if tg.Restricted {
		try("TCP connect to a port not in connect_ports", func() (bool, string) { return dial("tcp", tg.HTTP) })
		try("TCP listen", func() (bool, string) { return listen("tcp") })
		try("MPTCP connect", func() (bool, string) {
			return rawSocket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, tg.HTTP, false)
		})
		try("MPTCP bind", func() (bool, string) {
			return rawSocket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, "127.0.0.1:0", true)
		})
		try("MPTCP over IPv6", func() (bool, string) {
			return rawSocket(unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, "[::1]:0", true)
		})
		try("UDP send", func() (bool, string) { return dial("udp", tg.HTTP) })
		try("UDP listen", func() (bool, string) { return listen("udp") })
		try("SCTP", func() (bool, string) {
			return rawSocket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP, "127.0.0.1:0", true)
		})
		try("raw IP socket", func() (bool, string) { return rawSocket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, "", false) })
		try("packet socket", func() (bool, string) { return rawSocket(unix.AF_PACKET, unix.SOCK_RAW, 0, "", false) })
	}
	try("netlink: change a network interface", func() (bool, string) { return netlinkSetLink() })
	return out
}

// attackAPI tries the daemon's API, over every transport, from the plugin
// and from every kind of descendant, and adds the attempts to out.
func attackAPI(ctx context.Context, tg Targets, out []Attempt) []Attempt {
	try := func(name string, fn func() (bool, string)) {
		escaped, detail := fn()
		out = append(out, Attempt{Name: name, Escaped: escaped, Detail: detail})
	}
	try("API on the unix socket, from the plugin", func() (bool, string) { return callAPI(ctx, tg.Socket) })
	for _, how := range []string{"child", "setsid", "doublefork", "setsid-doublefork"} {
		try("API on the unix socket, from a "+how, func() (bool, string) { return viaHelper(ctx, how, tg.Socket) })
	}
	try("API on the unix socket, raw gRPC health", func() (bool, string) {
		conn, err := grpc.NewClient("unix://"+tg.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false, err.Error()
		}
		defer conn.Close()
		c, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = grpc_health_v1.NewHealthClient(conn).Check(c, &grpc_health_v1.HealthCheckRequest{})
		return err == nil, fmt.Sprint(err)
	})
	if tg.TCP != "" {
		try("API over TCP without the token", func() (bool, string) {
			c, err := client.Dial(ctx, client.Options{Address: tg.TCP, DialTimeout: 3 * time.Second})
			if err != nil {
				return false, err.Error()
			}
			defer c.Close()
			_, err = c.Sessions(ctx)
			return err == nil, fmt.Sprint(err)
		})
	}
	if tg.HTTP != "" {
		for _, p := range []string{"/api/snapshot", "/metrics", "/api/events"} {
			try("HTTP "+p+" without the token", func() (bool, string) { return httpGet(ctx, "http://"+tg.HTTP+p) })
		}
	}

	return out
}

// plant replaces the write grant with a link to the home directory: at
// the plugin's next start, a host that follows it grants the home
// directory.
func plant(tg Targets) Attempt {
	a := Attempt{Name: "plant a link over a write grant"}
	if err := os.RemoveAll(tg.WriteGrant); err != nil {
		a.Detail = err.Error()
		return a
	}
	if err := os.Symlink(tg.Home, tg.WriteGrant); err != nil {
		a.Detail = err.Error()
		return a
	}
	a.Detail = "planted " + tg.WriteGrant + " -> " + tg.Home
	return a
}

// reap reads and writes the home directory through the planted link.
func reap(tg Targets) Attempt {
	a := Attempt{Name: "reach the home directory through a planted link, after a restart"}
	p := filepath.Join(tg.WriteGrant, filepath.Base(tg.Bashrc))
	escaped, detail := readFile(p)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		f.Close()
		escaped, detail = true, detail+"; opened .bashrc for writing"
	}
	a.Escaped, a.Detail = escaped, detail
	return a
}

func readFile(p string) (bool, string) {
	b, err := os.ReadFile(p)
	if err != nil {
		return false, err.Error()
	}
	return true, fmt.Sprintf("read %d bytes", len(b))
}

// upTo climbs from any directory (the host's working directory, the
// workspace) to p: enough ../ to reach / whatever the depth, then p.
func upTo(p string) string { return strings.Repeat("../", 16) + strings.TrimPrefix(p, "/") }

// leakedFDs lists the plugin's open descriptors that lead into dir.
func leakedFDs(dir string) (bool, string) {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false, err.Error()
	}
	var bad []string
	for _, e := range es {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, dir) {
			bad = append(bad, e.Name()+" -> "+target)
		}
	}
	return len(bad) > 0, fmt.Sprintf("%d descriptors, %v into the data directory", len(es), bad)
}

func ptrace(pid int) (bool, string) {
	// ptrace ties the tracee to the calling thread.
	done := make(chan error, 1)
	go func() {
		err := unix.PtraceAttach(pid)
		if err == nil {
			_ = unix.PtraceDetach(pid)
		}
		done <- err
	}()
	err := <-done
	return err == nil, fmt.Sprint(err)
}

func callAPI(ctx context.Context, sock string) (bool, string) {
	c, err := client.Dial(ctx, client.Options{Socket: sock, Lazy: true})
	if err != nil {
		return false, err.Error()
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := c.Sessions(cctx)
	if err != nil {
		return false, err.Error()
	}
	return true, fmt.Sprintf("listed %d sessions", len(s))
}

func httpGet(ctx context.Context, url string) (bool, string) {
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(c, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode < 300, resp.Status
}

func dial(network, addr string) (bool, string) {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return false, err.Error()
	}
	defer c.Close()
	if network == "udp" {
		if _, err := c.Write([]byte("x")); err != nil {
			return false, err.Error()
		}
		return true, "sent a datagram"
	}
	return true, "connected"
}

func listen(network string) (bool, string) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, "bound " + c.LocalAddr().String()
	}
	l, err := net.Listen(network, "127.0.0.1:0")
	if err != nil {
		return false, err.Error()
	}
	l.Close()
	return true, "listening on " + l.Addr().String()
}

// rawSocket makes a socket by hand (Go's net falls back from MPTCP to
// TCP on its own) and connects it to addr, or binds it with bind.
func rawSocket(family, typ, proto int, addr string, bind bool) (bool, string) {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return false, "socket: " + err.Error()
	}
	defer unix.Close(fd)
	if addr == "" {
		return true, "made the socket"
	}
	ap, err := netipAddr(addr)
	if err != nil {
		return false, err.Error()
	}
	var sa unix.Sockaddr
	if family == unix.AF_INET6 {
		sa = &unix.SockaddrInet6{Port: ap.port, Addr: [16]byte{15: 1}}
	} else {
		sa = &unix.SockaddrInet4{Port: ap.port, Addr: [4]byte{127, 0, 0, 1}}
	}
	if bind {
		if err := unix.Bind(fd, sa); err != nil {
			return false, "bind: " + err.Error()
		}
		if err := unix.Listen(fd, 1); err != nil {
			return false, "listen: " + err.Error()
		}
		return true, "bound and listening"
	}
	if err := unix.Connect(fd, sa); err != nil {
		return false, "connect: " + err.Error()
	}
	return true, "connected"
}

type hostPort struct{ port int }

func netipAddr(addr string) (hostPort, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return hostPort{}, err
	}
	n, err := strconv.Atoi(port)
	return hostPort{n}, err
}

// netlinkSetLink asks the kernel to set the loopback interface up, which
// it is already: harmless where it is allowed, and allowed only with
// CAP_NET_ADMIN.
func netlinkSetLink() (bool, string) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, "socket: " + err.Error()
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, "bind: " + err.Error()
	}
	const hdr, ifi = unix.SizeofNlMsghdr, unix.SizeofIfInfomsg
	msg := make([]byte, hdr+ifi)
	h := (*unix.NlMsghdr)(ptr(&msg[0]))
	h.Len, h.Type, h.Flags, h.Seq = uint32(len(msg)), unix.RTM_NEWLINK, unix.NLM_F_REQUEST|unix.NLM_F_ACK, 1
	info := (*unix.IfInfomsg)(ptr(&msg[hdr]))
	info.Family, info.Index, info.Flags, info.Change = unix.AF_UNSPEC, 1, unix.IFF_UP, unix.IFF_UP
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, "send: " + err.Error()
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return false, "receive: " + err.Error()
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 || msgs[0].Header.Type != unix.NLMSG_ERROR || len(msgs[0].Data) < 4 {
		return false, fmt.Sprintf("unexpected answer: %v", err)
	}
	code := int32(msgs[0].Data[0]) | int32(msgs[0].Data[1])<<8 | int32(msgs[0].Data[2])<<16 | int32(msgs[0].Data[3])<<24
	if code == 0 {
		return true, "the kernel set lo up"
	}
	return false, syscall.Errno(-code).Error()
}

// EnvHelper makes this binary one of the attacker's helpers.
const EnvHelper = "HEARTH_HOSTILE_HELPER"

// viaHelper calls the API on sock from a descendant made as how says,
// and returns what that descendant reported on a pipe.
func viaHelper(ctx context.Context, how, sock string) (bool, string) {
	r, w, err := os.Pipe()
	if err != nil {
		return false, err.Error()
	}
	defer r.Close()
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), EnvHelper+"="+how+":"+sock)
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		return false, err.Error()
	}
	w.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	_ = cmd.Wait()
	select {
	case b := <-got:
		var a Attempt
		if err := json.Unmarshal(b, &a); err != nil {
			return false, fmt.Sprintf("the helper said %q", b)
		}
		return a.Escaped, a.Detail
	case <-time.After(30 * time.Second):
		return false, "the helper never answered"
	}
}

func init() {
	v, ok := os.LookupEnv(EnvHelper)
	if !ok {
		return
	}
	how, sock, _ := strings.Cut(v, ":")
	report := os.NewFile(3, "report")
	self, _ := os.Executable()
	next := func(mode string, attr *syscall.SysProcAttr) {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), EnvHelper+"="+mode+":"+sock)
		cmd.ExtraFiles = []*os.File{report}
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			_ = json.NewEncoder(report).Encode(Attempt{Detail: "start: " + err.Error()})
		}
		// Exit without waiting: the child is orphaned, and re-parented.
		os.Exit(0)
	}
	switch how {
	case "child":
	case "setsid":
		next("orphan", &syscall.SysProcAttr{Setsid: true})
	case "doublefork":
		next("fork", nil)
	case "fork":
		next("orphan", nil)
	case "setsid-doublefork":
		next("setsid-fork", &syscall.SysProcAttr{Setsid: true})
	case "setsid-fork":
		next("orphan", &syscall.SysProcAttr{Setpgid: true})
	case "orphan":
		// Wait until the parent is gone and this process re-parented.
		for range 200 {
			if os.Getppid() == 1 || os.Getppid() != parentAtStart {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	escaped, detail := callAPI(context.Background(), sock)
	detail = fmt.Sprintf("(pid %d, parent %d, session %d) %s", os.Getpid(), os.Getppid(), sid(), detail)
	_ = json.NewEncoder(report).Encode(Attempt{Escaped: escaped, Detail: detail})
	os.Exit(0)
}

var parentAtStart = os.Getppid()

func sid() int {
	s, _ := unix.Getsid(0)
	return s
}

// ptr is the address of v, for the kernel's structures.
func ptr[T any](v *T) unsafe.Pointer { return unsafe.Pointer(v) }
