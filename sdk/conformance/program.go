package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hearth-dev/hearth/internal/procwait"
	"github.com/hearth-dev/hearth/sdk"
	agentplugin "github.com/hearth-dev/hearth/sdk/plugin"
)

// The checks only a plugin program can be held to: how it ends, and how
// a cancellation reaches its calls to the host.

// shutdownLimit is how long a program may take to exit once the host
// asked it to shut down; go-plugin's host kills it after as long.
const shutdownLimit = 2 * time.Second

// orphanLimit is how long a program may outlive its host.
const orphanLimit = time.Second

// checkCancelledProgram holds the first tool question of a task, cancels
// the task, and requires the program to give the question up (its call
// cancelled, as the task's other host calls must be) within cancelLimit,
// then to run the next task. A program whose tasks ask no question has
// nothing to hold, and passes.
func checkCancelledProgram(ctx context.Context, s *Subject) []error {
	h, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	asked := make(chan struct{})
	released := make(chan struct{})
	var once sync.Once
	h.Recorder.mu.Lock()
	h.Recorder.hold = func(qctx context.Context, task string) error {
		if task != "cancel-held" {
			return nil
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(asked)
		<-qctx.Done()
		close(released)
		return qctx.Err()
	}
	h.Recorder.mu.Unlock()

	t := s.Tasks[0]
	t.ID = "cancel-held"
	rctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		_, err := h.Run(rctx, t)
		ran <- err
	}()
	select {
	case <-asked:
	case err := <-ran:
		if err = h.explain(err); errors.Is(err, sdk.ErrConnectionLost) {
			return []error{fmt.Errorf("the task failed: %v", err)}
		}
		return []error{couldNotRun("the task finished without asking the host about a tool use, so there was no question to hold while it was cancelled; give a task that makes the agent use a tool")}
	}
	cancel()
	var errs []error
	select {
	case <-released:
	case <-time.After(cancelLimit):
		errs = append(errs, fmt.Errorf("the agent did not give up its tool question within %s of its task's cancellation; cancel the task's host calls when the host cancels the task (the SDKs do)", cancelLimit))
	}
	<-ran
	next := s.Tasks[0]
	next.ID = "after-cancel"
	nctx, ncancel := context.WithTimeout(ctx, callLimit)
	defer ncancel()
	if _, err := h.Run(nctx, next); err != nil {
		errs = append(errs, fmt.Errorf("the session failed the next task after a cancellation: %v", err))
	}
	return errs
}

func checkShutdown(_ context.Context, s *Subject) []error {
	if _, ok := s.Target.(Program); !ok {
		return []error{notApplicable("the agent runs in this process, not as a program")}
	}
	h, err := s.Target.Start(Options{})
	if err != nil {
		return []error{err}
	}
	defer h.Close()
	pid := 0
	if h.prog != nil {
		pid = h.prog.pid()
	}
	if pid == 0 {
		return []error{errors.New("the plugin's process ID is unknown")}
	}
	// Closing the client sends the controller's Shutdown, as a host that
	// stops a session does.
	_ = h.rpc.Close()
	if !procwait.Gone(pid, shutdownLimit) {
		return []error{fmt.Errorf("the program did not exit within %s of the host's request to shut down (plugin.GRPCController/Shutdown); stop serving and exit when asked", shutdownLimit)}
	}
	return nil
}

// checkHostCrash starts the program under a stand-in host, /bin/sh, that
// only starts it, waits for its handshake and is then killed with
// SIGKILL: the program must notice and exit.
func checkHostCrash(_ context.Context, s *Subject) []error {
	p, ok := s.Target.(Program)
	if !ok {
		return []error{notApplicable("the agent runs in this process, not as a program")}
	}
	cmd := p.Cmd()
	sh, err := exec.LookPath("sh")
	if err != nil {
		return []error{fmt.Errorf("the stand-in host needs sh: %v", err)}
	}
	cmd.Args = append([]string{"sh", "-c", `"$@" & echo "$!"; wait`, "sh"}, cmd.Args...)
	cmd.Path = sh
	cmd.Env = append(cmd.Env,
		agentplugin.Handshake.MagicCookieKey+"="+agentplugin.Handshake.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1,2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return []error{err}
	}
	if err := cmd.Start(); err != nil {
		return []error{fmt.Errorf("start the stand-in host: %v", err)}
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Whatever else happens, the program's output is drained, so that it
	// never blocks on a full pipe.
	defer func() {
		go func() {
			for range lines {
			}
		}()
	}()
	timeout := time.After(commandStartTimeout)
	pid := 0
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return []error{errors.New("the program exited before its handshake under the stand-in host")}
			}
			if pid == 0 {
				if pid, err = strconv.Atoi(strings.TrimSpace(l)); err != nil {
					return []error{fmt.Errorf("the stand-in host said %q, want the program's process ID", l)}
				}
				continue
			}
			if !strings.Contains(l, "|grpc|") {
				continue
			}
		case <-timeout:
			return []error{fmt.Errorf("no handshake from the program under the stand-in host within %s", commandStartTimeout)}
		}
		break
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return []error{err}
	}
	_ = cmd.Wait()
	if !procwait.Gone(pid, orphanLimit) {
		return []error{fmt.Errorf("the program outlived its host by more than %s after the host was killed with SIGKILL; watch the parent process and exit when it is gone (the SDKs do)", orphanLimit)}
	}
	return nil
}
