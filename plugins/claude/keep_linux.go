package claude

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The keeper stands between the plugin and claude so that nothing claude
// starts outlives the run, whatever happens to the plugin: a host killed
// with kill -9 takes its plugin with it (the parent-death signal), and
// the plugin's own death is a signal the keeper can act on (SIGHUP, its
// parent-death signal), where claude's SIGKILL was not. Claude Code's
// Bash commands are claude's children, and they were left running,
// re-parented to PID 1, after a host's kill -9.
//
// Which processes are the run's must rest on a property none of them can
// change: the parent chain is not (an orphan is re-parented), the process
// group and session are not (setsid). A Landlock domain is: the keeper
// puts itself in a domain of its own that scopes signals (Landlock ABI
// 6) before it starts claude, and every process claude starts is born in
// it and can never leave it. kill(-1, SIGKILL) from inside that domain
// reaches exactly the domain's processes (Landlock refuses every other
// target), the keeper excepted: the run's processes, all of them. The
// domain restricts nothing else; the plugin's own confinement still
// applies below it.
//
// A kernel without Landlock ABI 6 gets the keeper without the domain:
// it ends claude's process group, which is what claude's children share
// unless they call setsid.

// KeepArg is the argument that makes this program the keeper of one
// claude run: PROGRAM KeepArg CLAUDE ARGS...
const KeepArg = "__hearth-claude-keep"

// envKeepScoped tells the keeper, after it re-executes itself, that it
// runs in its own signal-scoped Landlock domain.
const envKeepScoped = "HEARTH_CLAUDE_KEEP_SCOPED"

// envKeepParent is the PID of the plugin that starts the keeper: a
// keeper whose parent is already another has lost its plugin.
const envKeepParent = "HEARTH_CLAUDE_KEEP_PARENT"

// keepCommand is the keeper running claude with args: what the agent
// starts in place of claude.
func (a *Agent) keepCommand(cmd *exec.Cmd) {
	cmd.Args = append([]string{a.relay, KeepArg, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = a.relay
	cmd.Env = append(cmd.Env, envKeepParent+"="+strconv.Itoa(os.Getpid()))
	// The plugin's death is a signal the keeper acts on; SIGKILL would
	// take it before it could.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGHUP
	// The keeper gives claude stopGrace after a SIGTERM; the plugin gives
	// the keeper a little longer to end everything.
	cmd.WaitDelay = stopGrace + 2*time.Second
}

// keepIfRequested runs the keeper and exits when the program was started
// as one.
func keepIfRequested() {
	if len(os.Args) < 3 || os.Args[1] != KeepArg {
		return
	}
	if os.Getenv(envKeepScoped) == "" {
		enterDomain() // returns only where it cannot
	}
	os.Exit(keep(os.Args[2], os.Args[3:], os.Getenv(envKeepScoped) == "1" && scoped()))
}

// scoped reports whether the keeper is in a domain that scopes signals,
// which kill(-1) must be sure of (elsewhere it reaches every process of
// the user): the variable says the keeper entered one, and the kernel
// confirms it, refusing a signal to the keeper's parent, which is
// outside it and of the same user.
func scoped() bool {
	return syscall.Kill(os.Getppid(), 0) == syscall.EPERM
}

// enterDomain puts the keeper in a Landlock domain of its own that scopes
// signals, and executes the keeper again inside it (Landlock restricts
// the calling thread; the exec makes it the whole process). Where the
// kernel cannot, it notes so and returns.
func enterDomain() {
	if err := scopeThread(); err != nil {
		_ = os.Setenv(envKeepScoped, "0")
		return
	}
	env := append(os.Environ(), envKeepScoped+"=1")
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	fmt.Fprintf(os.Stderr, "hearth claude keeper: execute itself in its domain: %v\n", err)
	os.Exit(1)
}

// scopeThread applies a signal-scoped Landlock domain to the calling
// thread, which stays locked for the exec.
func scopeThread() error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < 6 {
		return fmt.Errorf("landlock ABI %d: signal scoping needs 6", abi)
	}
	fd, err := ll.LandlockCreateRuleset(&ll.RulesetAttr{Scoped: ll.ScopeSignal}, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return ll.LandlockRestrictSelf(fd, 0)
}

// keep runs program with args and returns its exit status, after ending
// every process of the run: at once when the plugin dies (SIGHUP),
// after stopGrace when asked to stop (SIGTERM, SIGINT, passed on to
// claude's process group), and when claude ends. scoped says the keeper
// is in its own domain, where kill(-1) reaches the run's processes alone.
func keep(program string, args []string, scoped bool) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	if p := os.Getenv(envKeepParent); p != strconv.Itoa(os.Getppid()) {
		return 1 // the plugin is gone already
	}
	cmd := exec.Command(program, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = without(os.Environ(), envKeepScoped, envKeepParent)
	// claude leads its own group, which the keeper ends; and dies with
	// the keeper, should anything kill it with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "hearth claude keeper: start %s: %v\n", program, err)
		return 127
	}
	pid := cmd.Process.Pid
	endAll := func() {
		if scoped {
			_ = syscall.Kill(-1, syscall.SIGKILL)
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var grace <-chan time.Time
	for {
		select {
		case err := <-done:
			endAll()
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee) && ee.ExitCode() >= 0:
				return ee.ExitCode()
			}
			return 1
		case s := <-sigs:
			if s == syscall.SIGHUP {
				endAll()
				return 1
			}
			_ = syscall.Kill(-pid, s.(syscall.Signal))
			if grace == nil {
				grace = time.After(stopGrace)
			}
		case <-grace:
			endAll()
		}
	}
}

// without is env less the variables named.
func without(env []string, names ...string) []string {
	out := env[:0:0]
	for _, kv := range env {
		keep := true
		for _, n := range names {
			if len(kv) > len(n) && kv[:len(n)+1] == n+"=" {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
