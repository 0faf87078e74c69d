package model_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/latency"
	"github.com/hearth-dev/hearth/internal/nodetest"
)

// BenchmarkMCPToolCall runs tasks that each make one call of the
// reference filesystem server's read_text_file through the model agent
// under a host (a real plugin, the fake Anthropic API, the server under
// node), with the pre_tool_use guard of mcpConfig and without any guard,
// in the same run. An op is a whole task: two model calls and the MCP
// call, asked about and reported.
func BenchmarkMCPToolCall(b *testing.B) {
	nodetest.Need(b)
	for _, guarded := range []bool{false, true} {
		name := "no-guard"
		if guarded {
			name = "guard"
		}
		b.Run(name, func(b *testing.B) {
			f, ws := fake(b), workspace(b)
			cfg := mcpConfig(b, f, "anthropic", ws, outsideDir(b), "auto")
			if !guarded {
				cfg.Guards = nil
			}
			var log syncBuffer
			h := startHost(b, cfg, b.TempDir(), &log)
			defer h.Close(context.Background())
			task := hearth.Task{Agent: "ask", Prompt: "tool:mcp__fs__read_text_file:path=" + filepath.Join(ws, "pkg/alpha/alpha.go")}
			if _, err := h.Submit(context.Background(), task); err != nil {
				b.Fatal(err, log.String())
			}
			latency.Measure(b, func() error {
				out, err := h.Submit(context.Background(), task)
				if err == nil && !strings.Contains(out.Result.Output, "alpha.go") {
					b.Fatalf("answer: %s", out.Result.Output)
				}
				return err
			})
		})
	}
}
