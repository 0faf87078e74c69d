package sdk_test

import (
	"context"
	"fmt"
	"os"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/sdktest"
)

// wordCounter is a complete agent: it asks before reading each hinted
// file, reports the reads, and counts words.
type wordCounter struct{}

func (wordCounter) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{Name: "wordcount", Version: "1.0.0", Technologies: []string{"text"}}, nil
}

func (wordCounter) Run(ctx context.Context, t sdk.Task, h sdk.Host) (sdk.Result, error) {
	words := 0
	for _, f := range t.Hints.Files {
		v, err := h.CheckToolUse(ctx, sdk.ToolCall{Tool: "Read", Paths: []string{f}})
		if err != nil {
			return sdk.Result{}, err
		}
		if !v.Allow {
			continue // a guard said no: skip the file
		}
		words += len(f) // stands in for reading the file
		if err := h.ReportToolUse(ctx, sdk.ToolUse{Tool: "Read", Paths: []string{f}}); err != nil {
			return sdk.Result{}, err
		}
	}
	return sdk.Result{Output: fmt.Sprint(words), Metrics: map[string]float64{"word_count": float64(words)}}, nil
}

func (wordCounter) Summarize(context.Context, string) (sdk.ContextArtifact, error) {
	return sdk.ContextArtifact{KeyDecisions: []string{"counted words"}}, nil
}

// An agent is tested through the real plugin protocol with sdktest, with no
// binary to build.
func Example() {
	h, err := sdktest.Start(wordCounter{}, sdktest.Options{})
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
	fmt.Println("tool uses acknowledged:", res.ToolUses)
	fmt.Println("first read:", h.Host.ToolUses("t1")[0].Paths[0])
	// Output:
	// output: 13
	// tool uses acknowledged: 2
	// first read: a.txt
}

// An agent binary's main is one call to Serve.
func ExampleServe() {
	if os.Getenv(sdk.Handshake.MagicCookieKey) == "" {
		return // run by hand, not by a host: nothing to serve
	}
	sdk.Serve(wordCounter{})
}
