package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/internal/latency"
	"github.com/hearth-dev/hearth/sdk"
)

// bearer adds the daemon's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkMCPSubmit submits the same warm task (gotour "symbol strings
// Builder", on the session that read strings) to one daemon three ways
// in the same run: through its Go client (the raw layer: gRPC on the
// unix socket), through MCP over HTTP (/mcp, streamable HTTP), and
// through MCP over stdio (hearth mcp, a process that reaches the daemon
// through its Go client). Each reports p50 and p99 of the whole call.
func BenchmarkMCPSubmit(b *testing.B) {
	root, _ := filepath.Abs("../..")
	s := serve(b, map[string]string{"HEARTH_CONFIG": filepath.Join(root, "examples", "mcp", "hearth.hcl")})
	defer s.stop(b)
	ctx := context.Background()
	c, err := client.Dial(ctx, client.Options{DataDir: s.dataDir})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	task := hearth.Task{Agent: "gotour", Prompt: "symbol strings Builder", Hints: sdk.Hints{Directories: []string{"strings"}, Technologies: []string{"go"}}}
	if _, err := c.Submit(ctx, task); err != nil { // warm the session
		b.Fatal(err)
	}
	args := map[string]any{"agent": task.Agent, "prompt": task.Prompt, "directories": task.Hints.Directories, "technologies": task.Hints.Technologies}
	viaMCP := func(b *testing.B, t gomcp.Transport) func() error {
		cs, err := gomcp.NewClient(&gomcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return func() error {
			r, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "submit_task", Arguments: args})
			if err == nil && r.IsError {
				b.Fatalf("submit_task: %+v", r.Content)
			}
			return err
		}
	}
	b.Run("go-client", func(b *testing.B) {
		latency.Measure(b, func() error { _, err := c.Submit(ctx, task); return err })
	})
	b.Run("mcp-http", func(b *testing.B) {
		token, err := os.ReadFile(s.tokenFile)
		if err != nil {
			b.Fatal(err)
		}
		hc := &http.Client{Transport: bearer{strings.TrimSpace(string(token))}}
		latency.Measure(b, viaMCP(b, &gomcp.StreamableClientTransport{Endpoint: "http://" + s.http + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}))
	})
	b.Run("mcp-stdio", func(b *testing.B) {
		argv, _ := json.Marshal([]string{"mcp"})
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "HEARTH_TEST_MAIN="+string(argv), "HEARTH_DATA_DIR="+s.dataDir, "GORACE=atexit_sleep_ms=0")
		latency.Measure(b, viaMCP(b, &gomcp.CommandTransport{Command: cmd}))
	})
}
