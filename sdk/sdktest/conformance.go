package sdktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// callLimit bounds each call the conformance check makes, so that an agent
// that hangs fails the check instead of hanging the author's test run.
const callLimit = 30 * time.Second

// cancelLimit is how long Run may take to return once its context is done.
const cancelLimit = 5 * time.Second

// TestAgent checks that the agents made by newAgent keep the hearth agent
// contract while running tasks, each of which the agent should complete
// successfully. It returns nil, or an error listing every violation found:
//
//   - Describe names the agent and its version and declares a non-negative
//     capacity.
//   - Every task succeeds through the plugin protocol, reports well-formed
//     tool uses, and can be summarized afterwards.
//   - With every tool use denied, Run still returns, and no tool use whose
//     pre-tool-use question was denied is reported as having succeeded.
//   - Run returns promptly when its context is already cancelled.
//   - Capacity tasks run at once on one session all succeed (run your
//     tests with -race to catch data races here).
//   - An agent that exports state can be rehydrated into a fresh agent
//     that then runs the first task, and does not panic on malformed state.
//   - Summarize of an unknown task does not panic.
//
// newAgent is called once per fresh session the check needs.
func TestAgent(ctx context.Context, newAgent func() sdk.Agent, tasks ...sdk.Task) error {
	if len(tasks) == 0 {
		return errors.New("sdktest: TestAgent needs at least one task the agent should complete")
	}
	c := &checker{ctx: ctx, newAgent: newAgent, tasks: tasks}
	c.run()
	return errors.Join(c.errs...)
}

type checker struct {
	ctx      context.Context
	newAgent func() sdk.Agent
	tasks    []sdk.Task
	name     string
	info     sdk.Info
	errs     []error
}

func (c *checker) fail(check, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("sdktest: agent %q: %s: %s", c.name, check, fmt.Sprintf(format, args...)))
}

func (c *checker) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.ctx, callLimit)
}

func (c *checker) start(check string, p Policy) *Harness {
	h, err := Start(c.newAgent(), Options{Policy: p})
	if err != nil {
		c.fail(check, "%v", err)
		return nil
	}
	return h
}

func (c *checker) run() {
	h := c.start("start", nil)
	if h == nil {
		return
	}
	defer h.Close()
	c.describe(h)
	c.runTasks(h)
	c.stateful(h)
	c.unknownSummary(h)
	c.denied()
	c.cancelled()
	c.concurrent()
}

func (c *checker) describe(h *Harness) {
	ctx, cancel := c.call()
	defer cancel()
	info, err := h.Agent.Describe(ctx)
	if err != nil {
		c.fail("Describe", "%v", err)
		return
	}
	c.info, c.name = info, info.Name
	switch {
	case info.Name == "":
		c.fail("Describe", "Info.Name is empty; name the agent")
	case strings.ContainsAny(info.Name, " \t\n"):
		c.fail("Describe", "Info.Name %q contains whitespace; use a single word such as %q", info.Name, strings.Join(strings.Fields(info.Name), "-"))
	}
	if info.Version == "" {
		c.fail("Describe", "Info.Version is empty; give the agent a version such as \"0.1.0\"")
	}
	if info.Capacity < 0 {
		c.fail("Describe", "Info.Capacity is %d; use 0 or 1 for one task at a time, more for concurrent tasks", info.Capacity)
	}
}

func (c *checker) runTasks(h *Harness) {
	for i, t := range c.tasks {
		t.ID = fmt.Sprintf("conformance-%d", i)
		check := fmt.Sprintf("task %d (%s)", i, describeTask(t))
		ctx, cancel := c.call()
		res, err := h.Run(ctx, t)
		cancel()
		if err != nil {
			c.fail(check, "Run failed: %v", err)
			continue
		}
		uses := h.Host.ToolUses(t.ID)
		if res.ToolUses != uint64(len(uses)) {
			c.fail(check, "the host acknowledged %d tool uses but recorded %d", res.ToolUses, len(uses))
		}
		for j, u := range uses {
			if u.Tool == "" {
				c.fail(check, "tool use %d has no Tool name", j)
			}
			if u.Outcome < sdk.OutcomeOK || u.Outcome > sdk.OutcomeDenied {
				c.fail(check, "tool use %d (%s) has an unknown outcome %d", j, u.Tool, u.Outcome)
			}
			for _, p := range u.Paths {
				if strings.TrimSpace(p) == "" {
					c.fail(check, "tool use %d (%s) reports an empty path", j, u.Tool)
				}
			}
		}
		ctx, cancel = c.call()
		if _, err := h.Agent.Summarize(ctx, t.ID); err != nil {
			c.fail(check, "Summarize after a successful Run failed: %v", err)
		}
		cancel()
	}
}

func (c *checker) denied() {
	h := c.start("denied tool uses", DenyAll)
	if h == nil {
		return
	}
	defer h.Close()
	for i, t := range c.tasks {
		t.ID = fmt.Sprintf("denied-%d", i)
		check := fmt.Sprintf("task %d (%s) with every tool use denied", i, describeTask(t))
		ctx, cancel := c.call()
		_, err := h.Run(ctx, t)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			c.fail(check, "Run did not return within %s", callLimit)
			continue
		}
		if errors.Is(err, sdk.ErrAgentPanicked) {
			c.fail(check, "Run panicked: %v", err)
			continue
		}
		denied := make(map[string]bool)
		for _, call := range h.Host.Calls(t.ID) {
			if call.Call.CallID != "" {
				denied[call.Call.CallID] = true
			}
		}
		for _, u := range h.Host.ToolUses(t.ID) {
			if u.CallID != "" && denied[u.CallID] && u.Outcome == sdk.OutcomeOK {
				c.fail(check, "tool use %s (%s) was denied but reported as done; skip a denied call and report it with OutcomeDenied", u.CallID, u.Tool)
			}
		}
	}
}

func (c *checker) cancelled() {
	// Called directly, not through the protocol: gRPC does not even send
	// a call whose context is already done, and it is the author's code
	// that must notice.
	a := c.newAgent()
	ctx, cancel := context.WithCancel(c.ctx)
	cancel()
	t := c.tasks[0]
	t.ID = "cancelled"
	done := make(chan struct{})
	var panicked any
	go func() {
		defer close(done)
		defer func() { panicked = recover() }()
		_, _ = a.Run(ctx, t, NewRecorder(nil).For(t.ID))
	}()
	select {
	case <-done:
		if panicked != nil {
			c.fail("cancelled context", "Run panicked: %v", panicked)
		}
	case <-time.After(cancelLimit):
		c.fail("cancelled context", "Run did not return within %s of its context being cancelled; check ctx.Done() or ctx.Err() in long loops and pass ctx to blocking calls", cancelLimit)
	}
}

func (c *checker) concurrent() {
	n := c.info.Capacity
	if n <= 1 {
		return
	}
	n = min(n, 8)
	h := c.start("concurrent tasks", nil)
	if h == nil {
		return
	}
	defer h.Close()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			t := c.tasks[0]
			t.ID = fmt.Sprintf("concurrent-%d", i)
			ctx, cancel := c.call()
			defer cancel()
			_, errs[i] = h.Run(ctx, t)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.fail("concurrent tasks", "task %d of %d running at once (capacity %d) failed: %v", i+1, n, c.info.Capacity, err)
		}
	}
}

func (c *checker) stateful(h *Harness) {
	if !c.info.ExportsState {
		return
	}
	exp := h.Agent.(sdk.StateExporter)
	ctx, cancel := c.call()
	defer cancel()
	state, err := exp.ExportState(ctx)
	if err != nil {
		c.fail("ExportState", "%v", err)
		return
	}
	fresh := c.start("ImportState", nil)
	if fresh == nil {
		return
	}
	defer fresh.Close()
	if err := fresh.Agent.(sdk.StateExporter).ImportState(ctx, state); err != nil {
		c.fail("ImportState", "importing the state a session exported failed: %v", err)
		return
	}
	t := c.tasks[0]
	t.ID = "rehydrated"
	if _, err := fresh.Run(ctx, t); err != nil {
		c.fail("ImportState", "a rehydrated session failed the first task: %v", err)
	}
	garbage := c.start("ImportState", nil)
	if garbage == nil {
		return
	}
	defer garbage.Close()
	if err := garbage.Agent.(sdk.StateExporter).ImportState(ctx, []byte("\x00not state\xff")); errors.Is(err, sdk.ErrAgentPanicked) {
		c.fail("ImportState", "malformed state made the agent panic: %v; return an error instead", err)
	}
}

func (c *checker) unknownSummary(h *Harness) {
	ctx, cancel := c.call()
	defer cancel()
	if _, err := h.Agent.Summarize(ctx, "no-such-task"); errors.Is(err, sdk.ErrAgentPanicked) {
		c.fail("Summarize", "an unknown task ID made the agent panic: %v; return an error or an empty artifact", err)
	}
}

func describeTask(t sdk.Task) string {
	if t.Name != "" {
		return t.Name
	}
	p := t.Prompt
	if len(p) > 40 {
		p = p[:40] + "..."
	}
	return fmt.Sprintf("%q", p)
}
