package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/testagent"
	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/plugin"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

func TestRoundTrip(t *testing.T) {
	h := sdktest.New(t, testagent.New("scripted", 2), conformance.Options{})
	ctx := context.Background()

	info, err := h.Agent.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "scripted" || info.Capacity != 2 || !h.Agent.ExportsState() || h.Agent.Protocol() != plugin.ProtocolVersion {
		t.Fatalf("Describe: got %+v, exports state %v, protocol %d; want name scripted, capacity 2, exports state, protocol %d",
			info, h.Agent.ExportsState(), h.Agent.Protocol(), plugin.ProtocolVersion)
	}

	task := sdk.Task{
		ID:             "t1",
		Run:            "run-1",
		Name:           "research",
		Prompt:         "echo:hello;read:src/a.go;read:src/b.go;progress:0.5;cost:0.25;metric:quality=0.9",
		Hints:          sdk.Hints{Files: []string{"src/a.go"}, Directories: []string{"src"}, Technologies: []string{"go"}},
		IdempotencyKey: "idem-1",
		Attempt:        2,
		Metadata:       map[string]string{"k": "v"},
	}
	res, err := h.Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "hello" || res.Cost != 0.25 || res.Metrics["quality"] != 0.9 {
		t.Errorf("Result: got %+v, want output hello, cost 0.25, quality 0.9", res)
	}
	uses := h.Recorder.ToolUses("t1")
	if len(uses) != 2 {
		t.Fatalf("tool uses: recorded %d, want 2", len(uses))
	}
	if got := uses[1]; got.Tool != "Read" || got.Kind != sdk.KindRead || got.Outcome != sdk.OutcomeOK || !slices.Equal(got.Paths, []string{"src/b.go"}) || got.At.IsZero() {
		t.Errorf("tool use 2: got %+v, want an OK Read (kind read) of src/b.go with a time", got)
	}
	if n := h.Recorder.Syncs("t1"); n != 1 {
		t.Errorf("syncs: got %d, want 1 (the stream is made durable once, at its end)", n)
	}
	calls := h.Recorder.Calls("t1")
	if len(calls) != 2 || calls[0].Call.Input["file_path"] != "src/a.go" || calls[0].Call.CallID != uses[0].CallID || calls[0].Call.Kind != sdk.KindRead {
		t.Errorf("calls: got %+v, want two Read calls with their kind, input and call IDs matching the reports", calls)
	}
	if p := h.Recorder.Progress("t1"); len(p) != 1 || p[0].Fraction != 0.5 {
		t.Errorf("progress: got %+v, want one report at 0.5", p)
	}
	if art := res.Artifact; !slices.Equal(art.ModifiedFiles, []string{"src/a.go", "src/b.go"}) || len(art.KeyDecisions) != 1 {
		t.Errorf("artifact: got %+v, want both files and a key decision", art)
	}
}

func TestTaskFieldsReachTheAgent(t *testing.T) {
	var got sdk.Task
	a := &funcAgent{run: func(_ context.Context, tk sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
		got = tk
		return sdk.Result{}, nil
	}}
	h := sdktest.New(t, a, conformance.Options{})
	want := sdk.Task{
		ID: "t9", Run: "r", Name: "n", Session: "s", Prompt: "# not context\np",
		Hints: sdk.Hints{Files: []string{"f"}, Directories: []string{"d"}, Technologies: []string{"go"}},
		Upstream: []sdk.Upstream{
			{Task: "a", Version: 2, Session: "s1", CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
				Artifact: sdk.ContextArtifact{KeyDecisions: []string{"k"}, ModifiedFiles: []string{"m"}, NewPatterns: []string{"n"}, PotentialGotchas: []string{"g"}}},
			{Task: "b", Version: 1},
		},
		Context: "# Context from Previous Steps\n- k\n", Feedback: "say more",
		IdempotencyKey: "k", Attempt: 3, Metadata: map[string]string{"a": "b"},
	}
	if _, err := h.Run(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("task: got %+v, want %+v", got, want)
	}
}

func TestErrorsKeepTheirKind(t *testing.T) {
	h := sdktest.New(t, testagent.New("scripted", 1), conformance.Options{})
	ctx := context.Background()
	tests := []struct {
		prompt string
		is     error
		text   string
	}{
		{"fail:disk full", nil, "disk full"},
		{"permanent:bad input", sdk.ErrPermanent, "bad input"},
		{"panic", sdk.ErrAgentPanicked, "scripted panic"},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			_, err := h.Run(ctx, sdk.Task{Prompt: tt.prompt})
			if err == nil || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("got %v, want an error containing %q", err, tt.text)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v, want errors.Is %v", err, tt.is)
			}
			if tt.is == nil && (errors.Is(err, sdk.ErrPermanent) || errors.Is(err, sdk.ErrAgentPanicked)) {
				t.Errorf("got %v, want a plain (retryable) failure", err)
			}
		})
	}
	// The session survives a recovered panic.
	if _, err := h.Run(ctx, sdk.Task{Prompt: "echo:alive"}); err != nil {
		t.Errorf("after a panic: %v", err)
	}
}

func TestCancellationReachesTheAgent(t *testing.T) {
	started := make(chan struct{})
	a := &funcAgent{run: func(ctx context.Context, _ sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
		close(started)
		<-ctx.Done()
		return sdk.Result{}, ctx.Err()
	}}
	h := sdktest.New(t, a, conformance.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.Run(ctx, sdk.Task{Prompt: "wait"})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestConcurrentTasksAreRoutedToTheirHost(t *testing.T) {
	h := sdktest.New(t, testagent.New("scripted", 8), conformance.Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("t%d", i)
			prompt := strings.Repeat(fmt.Sprintf("read:f%d.go;", i), i+1)
			if _, err := h.Run(context.Background(), sdk.Task{ID: id, Prompt: prompt}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range 8 {
		uses := h.Recorder.ToolUses(fmt.Sprintf("t%d", i))
		if len(uses) != i+1 {
			t.Errorf("task t%d: got %d tool uses, want %d", i, len(uses), i+1)
		}
		for _, u := range uses {
			if u.Paths[0] != fmt.Sprintf("f%d.go", i) {
				t.Errorf("task t%d received %s, which another task reported", i, u.Paths[0])
			}
		}
	}
}

func TestDuplicateTaskIDIsRefused(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	a := &funcAgent{run: func(_ context.Context, tk sdk.Task, _ sdk.Callbacks) (sdk.Result, error) {
		if tk.Prompt == "block" {
			close(started)
			<-release
		}
		return sdk.Result{}, nil
	}}
	h := sdktest.New(t, a, conformance.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := h.Run(context.Background(), sdk.Task{ID: "same", Prompt: "block"})
		errc <- err
	}()
	<-started
	_, err := h.Run(context.Background(), sdk.Task{ID: "same", Prompt: "echo"})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("got %v, want a refusal naming the running task", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Error(err)
	}
}

func TestState(t *testing.T) {
	ctx := context.Background()
	h := sdktest.New(t, testagent.New("scripted", 1), conformance.Options{})
	if _, err := h.Run(ctx, sdk.Task{Prompt: "read:a.go;read:b.go"}); err != nil {
		t.Fatal(err)
	}
	state, err := h.Agent.(sdk.StateExporter).ExportState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fresh := testagent.New("scripted", 1)
	h2 := sdktest.New(t, fresh, conformance.Options{})
	if err := h2.Agent.(sdk.StateExporter).ImportState(ctx, state); err != nil {
		t.Fatal(err)
	}
	if got := fresh.Seen(); !slices.Equal(got, []string{"a.go", "b.go"}) {
		t.Errorf("rehydrated state: got %v, want [a.go b.go]", got)
	}
	if err := h2.Agent.(sdk.StateExporter).ImportState(ctx, []byte("garbage")); err == nil || errors.Is(err, sdk.ErrAgentPanicked) {
		t.Errorf("malformed state: got %v, want the agent's error", err)
	}

	stateless := sdktest.New(t, &funcAgent{}, conformance.Options{})
	if _, err := stateless.Agent.(sdk.StateExporter).ExportState(ctx); !errors.Is(err, sdk.ErrStateNotSupported) {
		t.Errorf("stateless ExportState: got %v, want ErrStateNotSupported", err)
	}
	if _, err := stateless.Agent.Describe(ctx); err != nil || stateless.Agent.ExportsState() {
		t.Errorf("stateless agent: Describe %v, ExportsState %v; want no error and false", err, stateless.Agent.ExportsState())
	}
}

func TestDeniedToolUse(t *testing.T) {
	h := sdktest.New(t, testagent.New("scripted", 1), conformance.Options{Policy: conformance.DenyAll})
	res, err := h.Run(context.Background(), sdk.Task{ID: "t", Prompt: "read:.env"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "sdktest denies every tool use") {
		t.Errorf("output: got %q, want the denial's reason", res.Output)
	}
	if uses := h.Recorder.ToolUses("t"); len(uses) != 1 || uses[0].Outcome != sdk.OutcomeDenied {
		t.Errorf("tool uses: got %+v, want one denied Read", uses)
	}
}

func TestHarnessCloseIsIdempotent(t *testing.T) {
	h, err := conformance.Start(testagent.New("scripted", 1), conformance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Agent.Describe(context.Background()); err == nil {
		t.Error("Describe after Close: got nil error, want a closed connection")
	}
}

// funcAgent is an Agent built from a function; it exports no state.
type funcAgent struct {
	run func(context.Context, sdk.Task, sdk.Callbacks) (sdk.Result, error)
}

func (a *funcAgent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "func", Version: "1"}, nil
}

func (a *funcAgent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if a.run == nil {
		return sdk.Result{}, nil
	}
	return a.run(ctx, t, cb)
}
