package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/claudetest"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/internal/procwait"
	"github.com/hearth-dev/hearth/plugins/claude"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

func run(t *testing.T, a *claude.Agent, prompt string) (*conformance.Harness, sdk.Result, error) {
	t.Helper()
	h := sdktest.New(t, a, conformance.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	task := sdk.Task{ID: "t1", Session: h.Session, Prompt: prompt}
	res, err := h.Agent.Run(ctx, task, h.Recorder.For(task.ID))
	return h, res, err
}

// TestAuthRefusedIsPermanent: a refused key fails the task for good at
// Claude Code's first retry, naming the key's variable.
func TestAuthRefusedIsPermanent(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	a := claude.New(claude.Settings{Command: claudetest.Binary(t), BaseURL: api.URL, APIKeyEnv: "HEARTH_TEST_KEY", APIKey: "wrong", Root: workspace(t)})
	began := time.Now()
	_, _, err := run(t, a, "What does cart/cart.go do?")
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "HEARTH_TEST_KEY") {
		t.Fatalf("error %v, want a permanent one naming HEARTH_TEST_KEY", err)
	}
	if n := len(api.Requests()); n > 3 {
		t.Errorf("%d requests with a refused key, want the task to stop at the first retry", n)
	}
	t.Logf("refused in %s", time.Since(began))
}

// TestRateLimitRetriedAfterDelay: a rate limit is retried by Claude Code
// after the server's retry-after, reported as progress, and the task
// succeeds.
func TestRateLimitRetriedAfterDelay(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	api.Fail(fakeapi.Failure{Status: 429, RetryAfter: "2"}, fakeapi.Failure{Status: 529, RetryAfter: "1"})
	a := newAgent(t, api, workspace(t))
	h, res, err := run(t, a, "What does cart/cart.go do?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "cart/cart.go") {
		t.Errorf("output %q", res.Output)
	}
	var said []string
	for _, p := range h.Recorder.Progress("t1") {
		if strings.Contains(p.Message, "HTTP 429") || strings.Contains(p.Message, "HTTP 529") {
			said = append(said, p.Message)
		}
	}
	// (Claude Code before 2.1.332 retries a 529 without a word.)
	if len(said) == 0 || !strings.Contains(said[0], "HTTP 429") || !strings.Contains(said[0], "retries in 2") {
		t.Errorf("progress about the retries: %q, want the 429's, with the server's delay", said)
	}
}

// TestMaxTurns: a task that needs more turns than max_turns fails for
// good, saying so.
func TestMaxTurns(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	a := claude.New(claude.Settings{Command: claudetest.Binary(t), BaseURL: api.URL, APIKeyEnv: "HEARTH_TEST_KEY", APIKey: key, Root: workspace(t), MaxTurns: 1})
	_, _, err := run(t, a, "read:cart/cart.go list:pricing")
	// Across the plugin boundary the error keeps its message and its
	// permanence, not its sentinel.
	if !errors.Is(err, sdk.ErrPermanent) || !strings.Contains(err.Error(), "max_turns (1)") {
		t.Fatalf("error %v, want a permanent max_turns failure saying so", err)
	}
}

// TestCancelStopsClaude: cancelling a task ends its claude process
// promptly, and what Claude Code's Bash left running, in claude's
// process group or out of it.
func TestCancelStopsClaude(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	ws := workspace(t)
	a := claude.New(claude.Settings{Command: claudetest.Binary(t), BaseURL: api.URL, APIKeyEnv: "HEARTH_TEST_KEY", APIKey: key, Root: ws, MaxTurns: 10, AllowedTools: []string{"Bash"}})
	h := sdktest.New(t, a, conformance.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	prompt, marks := backgroundThenHang(ws)
	task := sdk.Task{ID: "t1", Session: h.Session, Prompt: prompt}
	done := make(chan error, 1)
	go func() {
		_, err := h.Agent.Run(ctx, task, h.Recorder.For(task.ID))
		done <- err
	}()
	var rec *fakeapi.Recorded
	select {
	case rec = <-api.Hung:
	case err := <-done:
		t.Fatalf("the task ended before the model call: %v", err)
	}
	id := rec.Header.Get("X-Claude-Code-Session-Id")
	if id == "" {
		t.Fatal("claude sent no session ID")
	}
	procs := append(processPIDs(t, id), backgroundPIDs(t, ws, marks)...)
	t.Cleanup(func() {
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled task succeeded")
	}
	<-api.Released
	for _, pid := range procs {
		if !procwait.Gone(pid, 2*time.Second) {
			t.Errorf("process %d of session %s outlived the cancelled task: %s", pid, id, cmdline(pid))
		}
	}
}

// processesWith lists the processes whose command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, filepath.Base(filepath.Dir(d))+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestDeadlineStopsClaude: a task whose deadline passes (the host's
// task_timeout) ends its claude process like a cancelled one.
func TestDeadlineStopsClaude(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(key)
	defer api.Close()
	h := sdktest.New(t, newAgent(t, api, workspace(t)), conformance.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	task := sdk.Task{ID: "t1", Session: h.Session, Prompt: "hang"}
	go func() {
		_, err := h.Agent.Run(ctx, task, h.Recorder.For(task.ID))
		done <- err
	}()
	rec := <-api.Hung
	id := rec.Header.Get("X-Claude-Code-Session-Id")
	if err := <-done; err == nil {
		t.Fatal("a task past its deadline succeeded")
	}
	<-api.Released
	if ps := processesWith(t, id); len(ps) != 0 {
		t.Errorf("processes of session %s outlived the task's deadline: %v", id, ps)
	}
}
