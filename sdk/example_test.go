package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

// wordCounter is a complete agent: it reads each hinted file through
// sdk.Tools, which asks the host first (a guard may say no), reads, and
// reports the read; it counts words and says what it learned.
type wordCounter struct{ root string }

func (wordCounter) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "wordcount", Version: "1.0.0", Technologies: []string{"text"}}, nil
}

func (a wordCounter) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	tools := sdk.NewTools(cb, a.root)
	words := 0
	for _, f := range t.Hints.Files {
		b, err := tools.Read(ctx, f)
		if errors.Is(err, sdk.ErrDenied) {
			continue // a guard said no: skip the file
		}
		if err != nil {
			return sdk.Result{}, err
		}
		words += len(strings.Fields(string(b)))
	}
	return sdk.Result{
		Output:   fmt.Sprint(words),
		Metrics:  map[string]float64{"word_count": float64(words)},
		Artifact: sdk.ContextArtifact{KeyDecisions: []string{"counted words with strings.Fields"}},
	}, nil
}

// An agent is tested through the real plugin protocol with sdktest, with no
// binary to build.
func Example() {
	root, err := os.MkdirTemp("", "wordcount")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello hearth"), 0o644)
	_ = os.WriteFile(filepath.Join(root, "notes.md"), []byte("one two three"), 0o644)

	h, err := conformance.Start(wordCounter{root: root}, conformance.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	res, err := h.Run(context.Background(), sdk.Task{
		ID:    "t1",
		Hints: sdk.Hints{Files: []string{"a.txt", "notes.md"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("output:", res.Output)
	fmt.Println("learned:", res.Artifact.KeyDecisions[0])
	first := h.Recorder.ToolUses("t1")[0]
	fmt.Println("first use:", first.Tool, first.Kind, first.Paths[0], first.Outcome)
	fmt.Println("asked first:", h.Recorder.Calls("t1")[0].Call.CallID == first.CallID)
	// Output:
	// output: 5
	// learned: counted words with strings.Fields
	// first use: Read read a.txt ok
	// asked first: true
}

// A task that belongs to a run is given RunCallbacks: the run's state,
// checkpoints, files and chunks. Check for it with a type assertion.
func ExampleRunCallbacks() {
	agent := runReader{}
	h, err := conformance.Start(agent, conformance.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	run := conformance.NewRun()
	run.Set("topic", "warm sessions")
	h.Recorder.SetRun(run)

	for _, t := range []sdk.Task{{Prompt: "alone"}, {Run: "run-1", Prompt: "in a run"}} {
		res, err := h.Run(context.Background(), t)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Output)
	}
	// Output:
	// alone: no run
	// in a run: topic "warm sessions"
}

type runReader struct{}

func (runReader) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "reader", Version: "1.0.0"}, nil
}

func (runReader) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	rcb, ok := cb.(sdk.RunCallbacks)
	if !ok {
		return sdk.Result{Output: t.Prompt + ": no run"}, nil
	}
	topic, err := rcb.State(ctx, "topic")
	if err != nil {
		return sdk.Result{}, err
	}
	return sdk.Result{Output: fmt.Sprintf("%s: topic %s", t.Prompt, topic)}, nil
}

// What the tasks a task depends on learned comes beside its prompt: as
// structured data in Upstream, and rendered as text in Context. The
// prompt is exactly as written.
func ExampleTask_upstream() {
	t := sdk.Task{
		Prompt: "symbol net/http Server",
		Upstream: []sdk.Upstream{{
			Task: "overview", Version: 1,
			Artifact: sdk.ContextArtifact{KeyDecisions: []string{"net/http is package http: 60 files"}},
		}},
		Context: "# Context from Previous Steps\n...",
	}
	fmt.Println(strings.Fields(t.Prompt)[0])
	for _, u := range t.Upstream {
		fmt.Printf("%s v%d: %s\n", u.Task, u.Version, u.Artifact.KeyDecisions[0])
	}
	// Output:
	// symbol
	// overview v1: net/http is package http: 60 files
}

// An agent binary's main is one call to Serve.
func ExampleServe() {
	if os.Getenv(plugin.Handshake.MagicCookieKey) == "" {
		return // run by hand, not by a host: nothing to serve
	}
	plugin.Serve(wordCounter{})
}
