// Package hosttest holds what the tests of several packages do with a
// host they run as a helper process (the test binary started again),
// written once: package engine's own tests and the Python SDK's run the
// same graceful stop (StopOnSIGTERM in the helper, CheckSIGTERM in the
// test) and the same kill -9 check (CheckKill9), and read the helper's
// lines the same way (ExpectLine). It knows hosts through an interface,
// so that package engine's tests can use it without an import cycle.
package hosttest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hearth-dev/hearth"
)

// Host is what StopOnSIGTERM needs of a host.
type Host interface {
	Submit(context.Context, hearth.Task) (*hearth.Outcome, error)
	Close(context.Context) error
}

// StopOnSIGTERM is a helper process's body: it submits a task for agent
// (a scripted agent) that reports progress and then waits until the
// file release exists, prints "running PID" once the task is under way
// (PID from events, subscribed before the call, which unsubscribe
// ends), and on SIGTERM closes h within grace and prints how the task
// ended, then "closed". It returns the process's exit status.
func StopOnSIGTERM(h Host, agent string, events <-chan hearth.Event, unsubscribe func(), release string, grace time.Duration) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	type result struct {
		out *hearth.Outcome
		err error
	}
	ctx := context.Background()
	done := make(chan result, 1)
	go func() {
		out, err := h.Submit(ctx, hearth.Task{Agent: agent, Prompt: "progress:0.1;wait:" + release + ";echo:finished"})
		done <- result{out, err}
	}()
	var pid int
	for e := range events {
		if e.Kind == hearth.EventSessionSpawned {
			pid = e.PID
		}
		if e.Kind == hearth.EventTaskProgress {
			break
		}
	}
	unsubscribe()
	fmt.Println("running", pid)
	<-sigs
	cctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	_ = h.Close(cctx)
	r := <-done
	if r.err != nil {
		fmt.Println("task error", strings.ReplaceAll(r.err.Error(), "\n", " "))
	} else {
		fmt.Println("task result", r.out.Result.Output)
	}
	fmt.Println("closed")
	return 0
}
