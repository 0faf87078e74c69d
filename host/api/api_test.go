package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

func TestSubmitReusesAWarmSessionThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	task := func(path string) hearth.Task {
		return hearth.Task{Agent: "coder", Prompt: "read:" + path + ";echo:done", Hints: sdk.Hints{Files: []string{path}}}
	}
	first, err := d.c.Submit(ctx, task("src/models/user.go"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Decision.Action != hearth.ActionSpawned || first.Result.Output != "done" || first.Session == "" {
		t.Fatalf("first task: got %+v", first)
	}
	// Place runs nothing, and says it would reuse the warm session.
	place, err := d.c.Place(ctx, "coder", sdk.Hints{Files: []string{"src/models/user.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if place.Action != hearth.ActionReused || place.Session != first.Session || len(place.Candidates) != 1 || place.Candidates[0].Score("file") != 1 {
		t.Errorf("placement: got %+v; want the warm session with a full file score", place)
	}
	second, err := d.c.Submit(ctx, task("src/models/user.go"))
	if err != nil {
		t.Fatal(err)
	}
	if second.Decision.Action != hearth.ActionReused || second.Session != first.Session || second.Decision.Score <= second.Decision.Threshold {
		t.Errorf("second task: got %s on %s (score %.2f), want reused %s above the threshold", second.Decision.Action, second.Session, second.Decision.Score, first.Session)
	}
	// The same decision, read back through the daemon's session view.
	sd, err := d.c.Session(ctx, first.Session, 10)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Status != "live" || sd.Tasks != 2 || len(sd.Files) != 1 || sd.Files[0] != "src/models/user.go" || len(sd.Decisions) != 2 {
		t.Errorf("session: got %+v", sd.SessionInfo)
	}
	list, err := d.c.Sessions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != first.Session {
		t.Errorf("sessions: got %+v, %v", list, err)
	}
}

func TestErrorsKeepTheirKindAcrossTheSocket(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder"), config.DefaultExternal("claude-code", config.ExternalClaudeCode)}})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want error
		code codes.Code
	}{
		{"unknown agent", func() error { _, err := d.c.Submit(ctx, hearth.Task{Agent: "codr", Prompt: "x"}); return err }, hearth.ErrUnknownAgent, codes.NotFound},
		{"unknown run", func() error { _, err := d.c.ShowRun(ctx, "nope", client.ShowOptions{}); return err }, hearth.ErrUnknownRun, codes.NotFound},
		{"unknown session", func() error { _, err := d.c.Session(ctx, "nope", 0); return err }, hearth.ErrUnknownSession, codes.NotFound},
		{"task for an external agent", func() error { _, err := d.c.Submit(ctx, hearth.Task{Agent: "claude-code", Prompt: "x"}); return err }, hearth.ErrExternalAgent, codes.FailedPrecondition},
		{"a failing task", func() error {
			_, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "permanent:out of paper"})
			return err
		}, nil, codes.Unknown},
		{"a plugin that crashes", func() error {
			_, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "crash"})
			return err
		}, hearth.ErrPluginExited, codes.Aborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v; want it to wrap %v", err, tc.want)
			}
			if st, _ := status.FromError(err); st.Code() != tc.code {
				t.Errorf("code %v; want %v (%v)", st.Code(), tc.code, err)
			}
		})
	}
	// The daemon's message is the host's, with the fix it suggests.
	_, err := d.c.Submit(ctx, hearth.Task{Agent: "codr", Prompt: "x"})
	if !contains(err.Error(), `no such agent "codr"`, "configured agents: claude-code, coder") {
		t.Errorf("message %q", err)
	}
}

// pipelineFile is a config holding one pipeline for the daemon's coder
// agent: a -> (b, c) -> d.
func pipelineFile(t testing.TB, dir, extra string) string {
	return writeFile(t, dir, "pipeline.hcl", `
agent "coder" {
  command = ["/bin/true"]
}
pipeline "build" {
  agent    = "coder"
  parallel = 2
  `+extra+`
  task "a" {
    prompt = "read:src/a.go;echo:a"
  }
  task "b" {
    prompt     = "echo:b;cost:0.5"
    depends_on = ["a"]
  }
  task "c" {
    prompt     = "echo:c;metric:quality=0.9;metric:input_tokens=1200;metric:cached_input_tokens=800;metric:output_tokens=150;metric:tool_calls=3"
    depends_on = ["a"]
  }
  task "d" {
    prompt     = "echo:d"
    depends_on = ["b", "c"]
  }
}
`)
}

func TestRunsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	// The file's agent block is not the daemon's: the daemon runs the
	// pipeline with its own agent of that name.
	file := pipelineFile(t, t.TempDir(), "")
	rs, err := d.c.StartRun(ctx, hearth.RunSpec{RunOptions: hearth.RunOptions{Config: file}})
	if err != nil {
		t.Fatal(err)
	}
	if started, err := d.c.Run(ctx, rs.ID()); err != nil || started.Pipeline != "build" || started.Tasks != 4 {
		t.Errorf("started: %+v, %v", started, err)
	}
	var succeeded []string
	for e := range rs.Events() {
		if e.Kind == hearth.EventRunTask && e.To == string(hearth.TaskSucceeded) {
			succeeded = append(succeeded, e.Task)
		}
	}
	info, err := rs.Wait(ctx)
	if err != nil || info.Status != hearth.RunCompleted || info.Succeeded != 4 || info.Cost != 0.5 {
		t.Fatalf("stopped: %+v, %v", info, err)
	}
	// Every task's success reached the stream before the end, in
	// dependency order.
	if len(succeeded) != 4 || succeeded[0] != "a" || succeeded[3] != "d" {
		t.Errorf("succeeded events %v; want a first, d last", succeeded)
	}
	v, err := d.c.ShowRun(ctx, rs.ID()[:len(rs.ID())-2], client.ShowOptions{Outputs: true, Checkpoints: true, Events: 5})
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != rs.ID() || len(v.TaskList) != 4 || len(v.Outputs) != 4 || len(v.Checkpoints) < 5 || len(v.Events) != 5 || v.Config != file {
		t.Errorf("show: %d tasks, %d outputs, %d checkpoints, %d events, config %q", len(v.TaskList), len(v.Outputs), len(v.Checkpoints), len(v.Events), v.Config)
	}

	// Fork from the checkpoint after a: the original is untouched.
	at := uint64(0)
	for _, cp := range v.Checkpoints {
		if cp.Task == "a" {
			at = cp.Seq
		}
	}
	fork, err := d.c.ForkRun(ctx, rs.ID(), at, hearth.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finfo, err := fork.Wait(ctx)
	if err != nil || finfo.ForkedFrom != rs.ID() || finfo.Status != hearth.RunCompleted {
		t.Errorf("fork: %+v, %v", finfo, err)
	}
	again, err := d.c.ShowRun(ctx, rs.ID(), client.ShowOptions{Checkpoints: true})
	if err != nil || len(again.Checkpoints) != len(v.Checkpoints) {
		t.Errorf("the origin changed: %d checkpoints, was %d (%v)", len(again.Checkpoints), len(v.Checkpoints), err)
	}
	runs, err := d.c.Runs(ctx)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	// Delete the fork; its events remain.
	id, err := d.c.DeleteRun(ctx, fork.ID())
	if err != nil || id != fork.ID() {
		t.Fatalf("delete: %q, %v", id, err)
	}
	if _, err := d.c.ShowRun(ctx, fork.ID(), client.ShowOptions{}); !errors.Is(err, hearth.ErrUnknownRun) {
		t.Errorf("show a deleted run: %v", err)
	}
	evs, err := d.c.RunEvents(ctx, fork.ID(), 1)
	if err != nil || len(evs) != 1 || evs[0].Kind != hearth.EventRunDeleted {
		t.Errorf("a deleted run's last event: %+v, %v", evs, err)
	}
}

func TestPauseResumeAndCancelThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	gate := filepath.Join(t.TempDir(), "go")
	file := writeFile(t, t.TempDir(), "p.hcl", `
pipeline "slow" {
  agent = "coder"
  task "first" {
    prompt = "wait:`+gate+`;echo:1"
  }
  task "second" {
    prompt     = "echo:2"
    depends_on = ["first"]
  }
}
agent "coder" {
  command = ["/bin/true"]
}
`)
	rs, err := d.c.StartRun(ctx, hearth.RunSpec{RunOptions: hearth.RunOptions{Config: file}})
	if err != nil {
		t.Fatal(err)
	}
	for e := range rs.Events() {
		if e.Kind == hearth.EventRunTask && e.Task == "first" && e.To == string(hearth.TaskRunning) {
			break
		}
	}
	// A watcher that goes away mid-stream leaves the run running.
	wctx, wcancel := context.WithCancel(ctx)
	w, err := d.c.WatchRun(wctx, rs.ID())
	if err != nil {
		t.Fatal(err)
	}
	wcancel()
	if _, err := w.Wait(ctx); err == nil {
		t.Error("a cancelled watch ended without an error")
	}
	// Pausing interrupts the task in flight; it runs again on resume.
	info, err := d.c.PauseRun(ctx, rs.ID())
	if err != nil || info.Status != hearth.RunPaused {
		t.Fatalf("pause: %+v, %v", info, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Wait(ctx); err == nil {
		t.Error("the paused run's stream ended without its RunError")
	} else if re := (*hearth.RunError)(nil); !errors.As(err, &re) || re.Status != hearth.RunPaused {
		t.Errorf("stream end: %v; want a RunError saying paused", err)
	}
	resumed, err := d.c.ResumeRun(ctx, rs.ID(), hearth.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err = resumed.Wait(ctx)
	if err != nil || info.Status != hearth.RunCompleted || info.Succeeded != 2 {
		t.Fatalf("resumed: %+v, %v", info, err)
	}
	if _, err := d.c.CancelRun(ctx, rs.ID()); !errors.Is(err, hearth.ErrIllegalTransition) {
		t.Errorf("cancel a completed run: %v; want an illegal transition", err)
	}
}

func TestEventsStreamLiveAndEndsWithItsClient(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	es, err := d.c.Subscribe(ctx, hearth.EventFilter{Kinds: []hearth.EventKind{hearth.EventDecision, hearth.EventToolUsed}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.c.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: "read:a.go;read:b.go"})
	if err != nil {
		t.Fatal(err)
	}
	var decision *hearth.Decision
	tools := 0
	for decision == nil || tools < 2 {
		select {
		case e := <-es.Events():
			switch e.Kind {
			case hearth.EventDecision:
				decision = e.Decision
			case hearth.EventToolUsed:
				tools++
			default:
				t.Errorf("the filter let %s through", e.Kind)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("got decision %v and %d tool uses; want the task's", decision, tools)
		}
	}
	if decision.Task != out.TaskID || decision.Action != hearth.ActionSpawned {
		t.Errorf("decision %+v", decision)
	}
	// The client goes away: the stream closes, and the daemon forgets it
	// (goleak checks nothing is left once the test's daemon closes).
	cancel()
	for range es.Events() {
	}
	if err := es.Err(); err != nil {
		t.Errorf("a stream its client ended: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Agents: []*config.Agent{testAgent("coder")}}
	cfg.Guards = mustGuards(t, `
guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "any(paths, glob(#, '**/*.pem'))"
  message   = "no keys"
}`)
	d := startDaemon(t, cfg)
	ctx := context.Background()
	out, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "read:a.go;read:keys/server.pem"})
	if err != nil || !contains(out.Result.Output, "denied keys/server.pem: no keys") {
		t.Fatalf("got %+v, %v; want the key's read denied", out, err)
	}
	if _, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "permanent:no ink"}); err == nil {
		t.Fatal("a failing task succeeded")
	}
	// A task that reports what its model calls used, as the model agent
	// does; the agent has no model block, so the model is "".
	if _, err := d.c.Submit(ctx, hearth.Task{Agent: "coder", Prompt: "metric:input_tokens=1200;metric:cached_input_tokens=300;metric:cache_write_tokens=200;metric:output_tokens=80;cost:0.25"}); err != nil {
		t.Fatal(err)
	}
	body := httpGet(t, "http://"+d.l.HTTP+"/metrics", d.token)
	for _, want := range []string{
		`hearth_decisions_total{action="spawned",agent="coder",outcome="spawn-no-candidates"} 1`,
		`hearth_decisions_total{action="reused",agent="coder",outcome="reuse"} 2`,
		`hearth_guard_fired_total{action="deny",guard="no-secrets",hook="pre_tool_use"} 1`,
		`hearth_tool_uses_total{agent="coder",outcome="ok"} 1`,
		`hearth_tool_uses_total{agent="coder",outcome="denied"} 1`,
		`hearth_task_duration_seconds_count{agent="coder",result="succeeded"} 2`,
		`hearth_tokens_total{agent="coder",model="",outcome="succeeded",type="input"} 1200`,
		`hearth_tokens_total{agent="coder",model="",outcome="succeeded",type="cached_input"} 300`,
		`hearth_tokens_total{agent="coder",model="",outcome="succeeded",type="cache_write"} 200`,
		`hearth_tokens_total{agent="coder",model="",outcome="succeeded",type="output"} 80`,
		`hearth_cost_total{agent="coder",model="",outcome="succeeded"} 0.25`,
		`hearth_plugin_spawns_total{agent="coder"} 1`,
		`hearth_sessions{agent="coder",status="live"} 1`,
		`hearth_task_duration_seconds_count{agent="coder",result="failed"} 1`,
		`hearth_store_bytes{part="vlog"}`,
	} {
		if !contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// mustGuards compiles guard blocks as a config file would.
func mustGuards(t testing.TB, src string) []*guard.Rule {
	t.Helper()
	cfg, err := config.Parse([]byte(src), "guards.hcl", config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Guards
}

func TestSocketIsOwnerOnlyAndNotShared(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	fi, err := os.Stat(d.l.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v; want a socket, 0600", fi.Mode())
	}
	// A second daemon on the same socket is refused, naming it.
	srv := api.NewServer(api.Options{Engine: d.h})
	if _, err := srv.Listen(config.Server{Socket: d.l.Socket}, d.dir); !errors.Is(err, api.ErrSocketInUse) {
		t.Errorf("second listener: %v; want ErrSocketInUse", err)
	}
	// A socket left by a daemon that died is taken over.
	dir := shortTempDir(t)
	stale := filepath.Join(dir, "stale.sock")
	ul, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ul.(*net.UnixListener).SetUnlinkOnClose(false)
	ul.Close()
	l, err := api.NewServer(api.Options{Engine: d.h}).Listen(config.Server{Socket: stale}, d.dir)
	if err != nil {
		t.Fatalf("listen over a stale socket: %v", err)
	}
	c := dial(t, client.Options{Socket: stale})
	if _, err := c.Status(context.Background()); err != nil {
		t.Error(err)
	}
	l.Close(context.Background())
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
	// A file that is not a socket is never taken for one.
	precious := writeFile(t, dir, "hearth.hcl", "agent \"a\" {}\n")
	if _, err := api.NewServer(api.Options{Engine: d.h}).Listen(config.Server{Socket: precious}, d.dir); err == nil || !contains(err.Error(), "is not a socket") {
		t.Errorf("listen on a regular file: %v", err)
	}
	if b, err := os.ReadFile(precious); err != nil || len(b) == 0 {
		t.Errorf("the file at the socket path was touched: %q, %v", b, err)
	}
	// No daemon: Dial says so at once.
	if _, err := client.Dial(context.Background(), client.Options{Socket: stale}); !errors.Is(err, client.ErrNoDaemon) {
		t.Errorf("dial without a daemon: %v", err)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	st, err := d.c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.DataDir != d.dir || st.PID != os.Getpid() || len(st.Agents) != 1 || st.Agents[0].Name != "coder" || st.Version != "test" {
		t.Errorf("status %+v", st)
	}
	b, _ := json.Marshal(st)
	if !contains(string(b), `"data_dir"`, `"agents"`) {
		t.Errorf("status JSON %s", b)
	}
}

// TestStartRunRefusesAFileWithGuardsTheDaemonLacks: a run from a file is
// guarded by the daemon's guards; a file that counts on its own must
// not run unguarded.
func TestStartRunRefusesAFileWithGuardsTheDaemonLacks(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	file := pipelineFile(t, t.TempDir(), "")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	guarded := writeFile(t, t.TempDir(), "guarded.hcl", string(b)+`
guard "no-more-work" {
  hook      = "task_admission"
  condition = "true"
  message   = "closed for the day"
}
`)
	_, err = d.c.StartRun(context.Background(), hearth.RunSpec{RunOptions: hearth.RunOptions{Config: guarded}})
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !contains(err.Error(), "guards the daemon does not run", "no-more-work", "--config "+guarded) {
		t.Fatalf("got %v; want the run refused, naming the guard and the fix", err)
	}
	runs, err := d.c.Runs(context.Background())
	if err != nil || len(runs) != 0 {
		t.Errorf("runs after the refusal: %+v, %v", runs, err)
	}
}

// TestLargeOutputsReadThroughTheDaemon: outputs up to hearth.MaxOutput are
// readable through the daemon, several in one reply (issue 14: outputs
// over 32 MiB in all could not be read).
func TestLargeOutputsReadThroughTheDaemon(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	ctx := context.Background()
	big := fmt.Sprintf("bigout:%d", hearth.MaxOutput-1000)
	file := writeFile(t, t.TempDir(), "big.hcl", `
agent "coder" {
  command = ["/bin/true"]
}
pipeline "big" {
  agent = "coder"
  task "a" { prompt = "`+big+`" }
  task "b" { prompt = "`+big+`" }
  task "c" { prompt = "`+big+`" }
}
`)
	rs, err := d.c.StartRun(ctx, hearth.RunSpec{RunOptions: hearth.RunOptions{Config: file}})
	if err != nil {
		t.Fatal(err)
	}
	for range rs.Events() {
	}
	if info, err := rs.Wait(ctx); err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("run: %+v, %v", info, err)
	}
	outs, err := d.c.RunOutputs(ctx, rs.ID())
	if err != nil {
		t.Fatalf("reading three outputs of nearly %d MiB through the daemon: %v", hearth.MaxOutput>>20, err)
	}
	for _, o := range outs {
		if len(o.Output) != hearth.MaxOutput-1000 {
			t.Errorf("%s: %d bytes", o.Task, len(o.Output))
		}
	}
}
