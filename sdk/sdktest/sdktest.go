// Package sdktest is what an agent author's Go tests use: New serves an
// agent in the test's process through the real plugin protocol, with a
// recording host, and closes it when the test ends. The harness, the
// recording host and the contract's checks are package conformance's,
// which does not import package testing, so that the hearth binary runs
// the checks (`hearth agents test`) without linking a test kit.
//
//	h := sdktest.New(t, &Counter{}, conformance.Options{})
//	res, err := h.Run(ctx, sdk.Task{Prompt: "count", Hints: sdk.Hints{Files: []string{"a.txt"}}})
//	uses := h.Recorder.ToolUses(...)
//
// and the contract, for any agent:
//
//	if err := conformance.TestAgent(ctx, func() sdk.Agent { return &Counter{} }, tasks...); err != nil {
//		t.Fatal(err)
//	}
package sdktest

import (
	"testing"

	"github.com/hearth-dev/hearth/sdk"
	"github.com/hearth-dev/hearth/sdk/conformance"
)

// New is conformance.Start for tests: it fails t on error and closes the
// harness when the test ends, failing t if that fails.
func New(t testing.TB, a sdk.Agent, opts conformance.Options) *conformance.Harness {
	t.Helper()
	h, err := conformance.Start(a, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}
