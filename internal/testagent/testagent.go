// Package testagent is an agent whose behaviour is scripted by its task's
// prompt, for hearth's own tests: the same agent runs in-process under
// sdktest and conformance, and as a real plugin subprocess (the test binary re-executing
// itself), and can crash, hang, panic, spawn children or flood the host
// with tool uses on request.
//
// A prompt that starts with "verbatim:" is text, not steps: the output is
// the rest of the prompt, then "|context=" and the task's Context.
// Otherwise a prompt is a list of steps separated by ";". Steps:
//
//	echo:TEXT         append TEXT to the output
//	read:PATH         ask before reading PATH, then report a Read tool use
//	sneak:PATH        report a Read tool use of PATH without asking first
//	defy:PATH         ask before reading PATH and, denied or not, report a
//	                  Read of it that succeeded, under a new call ID
//	bigout:N          append N bytes of "x" to the output
//	getenv:NAME       append NAME=VALUE, or NAME unset, from the plugin's environment
//	tools:N           ask once, then report N tool uses (FloodToolUse) as
//	                  fast as possible
//	checks:N          ask N pre-tool-use questions (BenchCall), one at a
//	                  time; metrics p50_ns and p99_ns time them
//	sleep:DURATION    wait, returning early with ctx's error when it is done
//	hang              block forever, ignoring ctx
//	crash             exit the plugin process with status 2
//	panic             panic
//	fail:MESSAGE      fail the task
//	permanent:MESSAGE fail the task permanently
//	progress:F        report progress F (0..1)
//	cost:C            add C to the task's cost
//	metric:NAME=V     set a result metric
//	pid               append the plugin's PID to the output
//	child             start a child process that sleeps, append its PID
//	setsidchild       the same, in a session (and process group) of its own
//	sdkchild          the same, started with sdk.Command
//	wait:FILE         block until FILE exists (or ctx is done)
//	stopmark:FILE=TEXT  when the task's ctx ends before the task does,
//	                  append "TEXT TASK PID" to FILE as mark does (a test
//	                  waits on it to know the plugin stopped the task)
//	touch:FILE        create FILE
//	cat:FILE          append FILE's content; a file it cannot read fails
//	ls:DIR            append the names in DIR, sorted, comma-separated;
//	                  a directory it cannot list fails
//	                  the task with the error (a confined plugin's EACCES)
//	dial:NET:ADDR     connect to ADDR ("unix" or "tcp"), append "dialed"
//	                  and any first line the peer sends within a second;
//	                  a refused connect fails the task with the error
//	seen              append the paths the session has read, imported
//	                  state included
//	enter / leave     count this task in and out of the agent's running
//	                  tasks; metric running_max is the most seen at once
//	failuntil:N       fail (to be retried) every attempt before attempt N
//	attempt           append "attempt=N key=KEY"
//	prompt            append the whole prompt
//	context           append the task's rendered context (Task.Context)
//	feedback          append the task's feedback (Task.Feedback)
//	upstream          append the upstream tasks as TASK@VERSION, in order
//	set:SECTION=JSON  write a section of the run's state
//	get:SECTION       append a section of the run's state
//	checkpoint:LABEL  ask for a checkpoint; append its number
//	files             append the run's files as name=size
//	chunks:FILE:N     do chunks 0..N-1 of FILE that are not done, marking
//	                  each; append "did=..." and "skipped=..."
//	chunks:FILE:N:K   the same, but exit the process after K chunks
//	roundmetric:NAME=V1,V2,...  set metric NAME to the value for the task's
//	                  round (the n of its idempotency key run/task/n)
//	append:FILE=TEXT  append the line TEXT to FILE
//	mark:FILE=TEXT    append the line "TEXT TASK PID" to FILE: a ledger of
//	                  which plugin process did what for which task
//	ckfile:FILE:LABEL ask for a checkpoint and append its number to FILE
//	                  once it is acknowledged
//	span:NAME         start an OpenTelemetry span NAME from the task's
//	                  context (the global tracer provider: the SDK's, in a
//	                  plugin of a host that traces); the steps after it
//	                  run inside it, until endspan ends it
//	endspan           end the span the last span step started
//	traceid           append "trace=" and the trace ID of the task's
//	                  context ("trace=" alone when it carries none)
//
// The steps from set to ckfile reach the task's run (sdk.RunCallbacks), and
// fail a task outside one. Every allowed read is in the task's artifact
// (ModifiedFiles), with the prompt as its key decision.
package testagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/hearth-dev/hearth/sdk"
)

// dial connects to addr and reads what the peer says first, for up to a
// second: a daemon that refuses a peer says so before closing.
func dial(ctx context.Context, network, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	b := make([]byte, 512)
	n, _ := c.Read(b)
	if n == 0 {
		return "", nil
	}
	return " " + strings.TrimSpace(string(b[:n])), nil
}

// Agent is the scripted agent. The zero value is not ready; use New.
type Agent struct {
	name     string
	capacity int

	mu         sync.Mutex
	seen       []string
	running    int
	runningMax int
}

// New returns a scripted agent with the given name and capacity.
func New(name string, capacity int) *Agent {
	return &Agent{name: name, capacity: capacity}
}

// Describe implements sdk.Agent.
func (a *Agent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: a.name, Version: "0.0.1-test", Technologies: []string{"go"}, Capacity: a.capacity}, nil
}

// Run implements sdk.Agent.
func (a *Agent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	var (
		out []string
		res = sdk.Result{Metrics: map[string]float64{}}
		art sdk.ContextArtifact
	)
	runCallbacks := func(step string) (sdk.RunCallbacks, error) {
		rcb, ok := cb.(sdk.RunCallbacks)
		if !ok {
			return nil, sdk.Permanent(fmt.Errorf("testagent: step %q needs a task of a run", step))
		}
		return rcb, nil
	}
	if rest, ok := strings.CutPrefix(t.Prompt, "verbatim:"); ok {
		// The prompt is text, not steps: echo it whole, and the context
		// that came beside it.
		res.Output = rest + "|context=" + t.Context
		res.Artifact = art
		return res, nil
	}
	// spans are the spans the span step started, innermost last; ctx
	// is the innermost's, and outer the contexts they started from.
	var (
		spans []trace.Span
		outer []context.Context
	)
	defer func() {
		for i := len(spans) - 1; i >= 0; i-- {
			spans[i].End()
		}
	}()
	for step := range strings.SplitSeq(t.Prompt, ";") {
		verb, arg, _ := strings.Cut(strings.TrimSpace(step), ":")
		var rcb sdk.RunCallbacks
		if slices.Contains(runSteps, verb) {
			var err error
			if rcb, err = runCallbacks(step); err != nil {
				return res, err
			}
		}
		switch verb {
		case "":
		case "echo":
			out = append(out, arg)
		case "span":
			var sp trace.Span
			outer = append(outer, ctx)
			ctx, sp = otel.Tracer("github.com/hearth-dev/hearth/internal/testagent").Start(ctx, arg)
			spans = append(spans, sp)
		case "endspan":
			if len(spans) == 0 {
				return res, sdk.Permanent(errors.New("testagent: endspan without a span"))
			}
			spans[len(spans)-1].End()
			spans, ctx, outer = spans[:len(spans)-1], outer[len(outer)-1], outer[:len(outer)-1]
		case "traceid":
			id := ""
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				id = sc.TraceID().String()
			}
			out = append(out, "trace="+id)
		case "read":
			call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{arg}, Input: map[string]any{"file_path": arg}}
			v, err := cb.CheckToolUse(ctx, call)
			if err != nil {
				return res, err
			}
			u := sdk.ToolUse{CallID: call.CallID, Tool: "Read", Kind: sdk.KindRead, Paths: []string{arg}, Technologies: []string{"go"}, Outcome: sdk.OutcomeOK}
			if !v.Allow {
				u.Outcome = sdk.OutcomeDenied
				u.Error = v.Reason
				out = append(out, "denied "+arg+": "+v.Reason)
			} else {
				a.mu.Lock()
				a.seen = append(a.seen, arg)
				a.mu.Unlock()
				art.ModifiedFiles = append(art.ModifiedFiles, arg)
			}
			if err := cb.ReportToolUse(ctx, u); err != nil {
				return res, err
			}
		case "getenv":
			if v, ok := os.LookupEnv(arg); ok {
				out = append(out, arg+"="+v)
			} else {
				out = append(out, arg+" unset")
			}
		case "bigout":
			n, err := strconv.Atoi(arg)
			if err != nil {
				return res, sdk.Permanent(fmt.Errorf("bigout:%s: %w", arg, err))
			}
			out = append(out, strings.Repeat("x", n))
		case "sneak":
			u := sdk.ToolUse{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{arg}, Outcome: sdk.OutcomeOK}
			if err := cb.ReportToolUse(ctx, u); err != nil {
				return res, err
			}
			out = append(out, "read "+arg)
		case "defy":
			call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{arg}}
			if _, err := cb.CheckToolUse(ctx, call); err != nil {
				return res, err
			}
			u := sdk.ToolUse{CallID: sdk.NewID("call"), Tool: "Read", Kind: sdk.KindRead, Paths: []string{arg}, Outcome: sdk.OutcomeOK}
			if err := cb.ReportToolUse(ctx, u); err != nil {
				return res, err
			}
			out = append(out, "read "+arg)
		case "tools":
			n, err := strconv.Atoi(arg)
			if err != nil {
				return res, sdk.Permanent(fmt.Errorf("tools:%s: %w", arg, err))
			}
			u := FloodToolUse()
			call := sdk.ToolCall{CallID: u.CallID, Tool: u.Tool, Kind: u.Kind, Paths: u.Paths}
			if v, err := cb.CheckToolUse(ctx, call); err != nil {
				return res, err
			} else if !v.Allow {
				u.Outcome, u.Error, n = sdk.OutcomeDenied, v.Reason, 1
			}
			for range n {
				if err := cb.ReportToolUse(ctx, u); err != nil {
					return res, err
				}
			}
		case "checks":
			n, err := strconv.Atoi(arg)
			if err != nil || n < 1 {
				return res, sdk.Permanent(fmt.Errorf("checks:%s: want a positive count", arg))
			}
			call := BenchCall()
			rtts := make([]time.Duration, n)
			for i := range n {
				start := time.Now()
				if _, err := cb.CheckToolUse(ctx, call); err != nil {
					return res, err
				}
				rtts[i] = time.Since(start)
			}
			slices.Sort(rtts)
			res.Metrics["p50_ns"] = float64(rtts[n/2])
			res.Metrics["p99_ns"] = float64(rtts[n*99/100])
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return res, sdk.Permanent(err)
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return res, ctx.Err()
			}
		case "hang":
			select {}
		case "crash":
			os.Exit(2)
		case "panic":
			panic("scripted panic")
		case "fail":
			return res, errors.New(arg)
		case "permanent":
			return res, sdk.Permanent(errors.New(arg))
		case "progress":
			f, _ := strconv.ParseFloat(arg, 64)
			if err := cb.ReportProgress(ctx, sdk.Progress{Fraction: f, Message: step, Cost: res.Cost}); err != nil {
				return res, err
			}
		case "cost":
			c, _ := strconv.ParseFloat(arg, 64)
			res.Cost += c
		case "metric":
			name, v, _ := strings.Cut(arg, "=")
			res.Metrics[name], _ = strconv.ParseFloat(v, 64)
		case "pid":
			out = append(out, strconv.Itoa(os.Getpid()))
		case "child":
			// Deliberately not sdk.Command: tests use this to check that
			// stopping a plugin takes its whole process group.
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return res, err
			}
			out = append(out, strconv.Itoa(cmd.Process.Pid))
		case "setsidchild":
			// A child that leaves the plugin's process group: only the
			// plugin's cgroup still holds it.
			cmd := exec.Command("sleep", "300")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := cmd.Start(); err != nil {
				return res, err
			}
			out = append(out, strconv.Itoa(cmd.Process.Pid))
		case "seen":
			out = append(out, strings.Join(a.Seen(), ","))
		case "enter":
			a.mu.Lock()
			a.running++
			a.runningMax = max(a.runningMax, a.running)
			res.Metrics["running_max"] = float64(a.runningMax)
			a.mu.Unlock()
		case "leave":
			a.mu.Lock()
			a.running--
			a.mu.Unlock()
		case "sdkchild":
			cmd := sdk.Command(context.WithoutCancel(ctx), "sleep", "300")
			if err := cmd.Start(); err != nil {
				return res, err
			}
			out = append(out, strconv.Itoa(cmd.Process.Pid))
		case "wait":
			for {
				if _, err := os.Stat(arg); err == nil {
					break
				}
				select {
				case <-time.After(5 * time.Millisecond):
				case <-ctx.Done():
					return res, ctx.Err()
				}
			}
		case "cat":
			b, err := os.ReadFile(arg)
			if err != nil {
				return res, err
			}
			out = append(out, string(b))
		case "ls":
			entries, err := os.ReadDir(arg)
			if err != nil {
				return res, err
			}
			names := make([]string, 0, len(entries))
			for _, e := range entries {
				names = append(names, e.Name())
			}
			out = append(out, strings.Join(names, ","))
		case "dial":
			network, addr, _ := strings.Cut(arg, ":")
			line, err := dial(ctx, network, addr)
			if err != nil {
				return res, err
			}
			out = append(out, "dialed"+line)
		case "touch":
			if err := os.WriteFile(arg, nil, 0o644); err != nil {
				return res, err
			}
		case "failuntil":
			n, _ := strconv.Atoi(arg)
			if t.Attempt < n {
				return res, fmt.Errorf("attempt %d fails, as scripted", t.Attempt)
			}
		case "attempt":
			out = append(out, fmt.Sprintf("attempt=%d key=%s", t.Attempt, t.IdempotencyKey))
		case "prompt":
			out = append(out, t.Prompt)
		case "context":
			out = append(out, t.Context)
		case "feedback":
			out = append(out, t.Feedback)
		case "upstream":
			var ups []string
			for _, u := range t.Upstream {
				ups = append(ups, fmt.Sprintf("%s@%d", u.Task, u.Version))
			}
			out = append(out, strings.Join(ups, ","))
		case "set":
			sec, val, _ := strings.Cut(arg, "=")
			if err := rcb.SetState(ctx, sec, json.RawMessage(val)); err != nil {
				return res, err
			}
		case "get":
			v, err := rcb.State(ctx, arg)
			if err != nil {
				return res, err
			}
			out = append(out, string(v))
		case "checkpoint":
			n, err := rcb.Checkpoint(ctx, arg)
			if err != nil {
				return res, err
			}
			out = append(out, fmt.Sprintf("checkpoint=%d", n))
		case "files":
			fs, err := rcb.Files(ctx)
			if err != nil {
				return res, err
			}
			for _, f := range fs {
				b, err := os.ReadFile(f.Path)
				if err != nil {
					return res, err
				}
				out = append(out, fmt.Sprintf("%s=%d", f.Name, len(b)))
			}
		case "roundmetric":
			name, vals, _ := strings.Cut(arg, "=")
			list := strings.Split(vals, ",")
			round := 1
			if i := strings.LastIndexByte(t.IdempotencyKey, '/'); i >= 0 {
				round, _ = strconv.Atoi(t.IdempotencyKey[i+1:])
			}
			res.Metrics[name], _ = strconv.ParseFloat(list[min(max(round, 1), len(list))-1], 64)
		case "append":
			file, text, _ := strings.Cut(arg, "=")
			if err := appendLine(file, text); err != nil {
				return res, err
			}
		case "stopmark":
			file, text, _ := strings.Cut(arg, "=")
			defer func() {
				if ctx.Err() != nil {
					_ = appendLine(file, fmt.Sprintf("%s %s %d", text, t.ID, os.Getpid()))
				}
			}()
		case "mark":
			file, text, _ := strings.Cut(arg, "=")
			if err := appendLine(file, fmt.Sprintf("%s %s %d", text, t.ID, os.Getpid())); err != nil {
				return res, err
			}
		case "ckfile":
			file, label, _ := strings.Cut(arg, ":")
			n, err := rcb.Checkpoint(ctx, label)
			if err != nil {
				return res, err
			}
			if err := appendLine(file, strconv.FormatUint(n, 10)); err != nil {
				return res, err
			}
		case "chunks":
			o, err := chunks(ctx, rcb, arg)
			if err != nil {
				return res, err
			}
			out = append(out, o)
		default:
			return res, sdk.Permanent(fmt.Errorf("testagent: unknown step %q", step))
		}
	}
	art.KeyDecisions = []string{"ran " + strconv.Quote(t.Prompt)}
	res.Output = strings.Join(out, " ")
	res.Artifact = art
	return res, nil
}

// runSteps are the steps that reach the task's run.
var runSteps = []string{"set", "get", "checkpoint", "files", "chunks", "ckfile"}

func appendLine(file, text string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// chunks does the chunks step: "FILE:N" or "FILE:N:K".
func chunks(ctx context.Context, rcb sdk.RunCallbacks, arg string) (string, error) {
	parts := strings.Split(arg, ":")
	if len(parts) < 2 {
		return "", sdk.Permanent(fmt.Errorf("chunks:%s: want FILE:N[:K]", arg))
	}
	n, _ := strconv.Atoi(parts[1])
	crashAfter := -1
	if len(parts) > 2 {
		crashAfter, _ = strconv.Atoi(parts[2])
	}
	done, err := rcb.DoneChunks(ctx, parts[0])
	if err != nil {
		return "", err
	}
	var did []string
	for c := range n {
		if slices.Contains(done, c) {
			continue
		}
		if err := rcb.MarkChunk(ctx, parts[0], c); err != nil {
			return "", err
		}
		did = append(did, strconv.Itoa(c))
		if len(did) == crashAfter {
			os.Exit(2)
		}
	}
	skipped := make([]string, len(done))
	for i, c := range done {
		skipped[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf("did=%s skipped=%s", strings.Join(did, ","), strings.Join(skipped, ",")), nil
}

// FloodToolUse is the tool use the tools step reports: about 512 bytes on
// the wire, like a search that touched a few files.
func FloodToolUse() sdk.ToolUse {
	// The files a grep read: the same paths, and the same cost to the
	// host, as the benchmarks had before tool kinds.
	paths := make([]string, 8)
	for i := range paths {
		paths[i] = fmt.Sprintf("services/billing/internal/ledger/reconcile/batch_%02d.go", i)
	}
	return sdk.ToolUse{
		CallID:       "call-0123456789abcdef",
		Tool:         "Grep",
		Kind:         sdk.KindRead,
		Paths:        paths,
		Outcome:      sdk.OutcomeOK,
		Technologies: []string{"go"},
		Duration:     1500 * time.Microsecond,
		At:           time.Unix(1_700_000_000, 0),
	}
}

// BenchCall is the pre-tool-use question the checks step asks.
func BenchCall() sdk.ToolCall {
	return sdk.ToolCall{
		CallID: "call-0123456789abcdef",
		Tool:   "Read",
		Kind:   sdk.KindRead,
		Paths:  []string{"services/billing/internal/ledger/reconcile/batch_00.go"},
		Input:  map[string]any{"file_path": "services/billing/internal/ledger/reconcile/batch_00.go"},
	}
}

// ExportState implements sdk.StateExporter: the paths the session read.
func (a *Agent) ExportState(context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(a.seen)
}

// ImportState implements sdk.StateExporter.
func (a *Agent) ImportState(_ context.Context, b []byte) error {
	var seen []string
	if err := json.Unmarshal(b, &seen); err != nil {
		return fmt.Errorf("testagent: state is not a JSON list of paths: %w", err)
	}
	a.mu.Lock()
	a.seen = seen
	a.mu.Unlock()
	return nil
}

// Seen returns the paths the session has read, imported ones included.
func (a *Agent) Seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.seen)
}

var (
	_ sdk.Agent         = (*Agent)(nil)
	_ sdk.StateExporter = (*Agent)(nil)
)
