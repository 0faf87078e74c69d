package model_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/fakeapi"
	"github.com/hearth-dev/hearth/internal/nodetest"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// mcpConfig is a config whose model agent "ask" is offered the reference
// MCP filesystem server (npm @modelcontextprotocol/server-filesystem),
// allowed into ws and outside, under a guard that keeps it out of
// secrets. The agent reaches only ws and the server's own files when
// confined (confinement "require"), or everything ("off").
func mcpConfig(t testing.TB, f *fakeapi.Server, provider, ws, outside, confinement string) *config.Config {
	t.Helper()
	t.Setenv("FAKE_MODEL_KEY", testKey)
	base := f.URL + "/"
	if provider == "openai" {
		base = f.URL + "/v1/"
	}
	server := append(nodetest.FilesystemServer(t), ws, outside)
	src := fmt.Sprintf(`
agent "ask" {
  command       = [%q]
  env           = { %s = "1", GORACE = "atexit_sleep_ms=0" }
  workspace     = %q
  start_timeout = "30s"
  confinement   = %q
  read_paths    = [%q]
  model {
    provider    = %q
    model       = "test-model"
    base_url    = %q
    api_key_env = "FAKE_MODEL_KEY"
    mcp "fs" {
      command = %s
    }
  }
}

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*')"
  message   = "secrets are off limits"
}
`, os.Args[0], envServe, ws, confinement, nodetest.Dir(), provider, base, hclList(server))
	cfg, err := config.Parse([]byte(src), filepath.Join(t.TempDir(), "hearth.hcl"), config.Options{Bundled: plugins.Names()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func hclList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// outsideDir is a directory outside the agent's workspace and grants,
// with a file in it.
func outsideDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("OUTSIDE-CONTENT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sentToModel reports whether any request to the model held s.
func sentToModel(f *fakeapi.Server, s string) bool {
	for _, r := range f.Requests() {
		if strings.Contains(string(r.Body), s) {
			return true
		}
	}
	return false
}

// TestMCPFilesystemUnderGuard has the model, scripted against both
// providers' fake APIs, call the reference filesystem server through the
// model agent under hearth: a file of the workspace is read and reaches
// the model and the session's fingerprint; a secret the guard covers is
// refused by the host before the server is called, and the refusal
// reaches the model as the tool's error.
func TestMCPFilesystemUnderGuard(t *testing.T) {
	nodetest.Need(t)
	forEachProvider(t, func(t *testing.T, provider string) {
		f, ws := fake(t), workspace(t)
		cfg := mcpConfig(t, f, provider, ws, outsideDir(t), "auto")
		var log syncBuffer
		h := startHost(t, cfg, t.TempDir(), &log)
		defer h.Close(context.Background())

		prompt := fmt.Sprintf("What is in alpha? tool:mcp__fs__read_text_file:path=%s tool:mcp__fs__read_text_file:path=%s",
			filepath.Join(ws, "pkg/alpha/alpha.go"), filepath.Join(ws, "secrets/.env"))
		out, err := h.Submit(context.Background(), hearth.Task{Agent: "ask", Prompt: prompt, Hints: sdk.Hints{Directories: []string{"pkg/alpha"}}})
		if err != nil {
			t.Fatalf("submit: %v\n%s", err, log.String())
		}
		if !sentToModel(f, "Alpha says hello") {
			t.Errorf("the file the server read never reached the model")
		}
		if sentToModel(f, "do-not-read") {
			t.Errorf("the secret reached the model")
		}
		if !sentToModel(f, "secrets are off limits") {
			t.Errorf("the guard's refusal did not reach the model as the tool's error")
		}
		if !strings.Contains(out.Result.Output, "Could not use mcp__fs__read_text_file") {
			t.Errorf("the answer does not say the secret's read failed: %s", out.Result.Output)
		}
		if tools := f.Requests()[0].String(); !strings.Contains(tools, "mcp__fs__list_directory") || !strings.Contains(tools, `"read"`) {
			t.Errorf("the model was not offered the server's tools beside the built-in ones: %.500s", tools)
		}
		d, err := h.Session(context.Background(), out.Session, 50)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(d.Files, "pkg/alpha/alpha.go") || slices.Contains(d.Files, "secrets/.env") {
			t.Errorf("the session's fingerprint: files %q, want pkg/alpha/alpha.go and not the refused secret", d.Files)
		}
		var denied, done bool
		for _, e := range d.Events {
			if u := e.ToolUse; u != nil && u.Tool == "mcp__fs__read_text_file" {
				denied = denied || u.Outcome == sdk.OutcomeDenied
				done = done || u.Outcome == sdk.OutcomeOK
			}
		}
		if !denied || !done {
			t.Errorf("the session's events record the MCP calls: denied %v, done %v", denied, done)
		}
	})
}

// TestMCPServerConfinedWithAgent: an MCP server the model agent starts
// is started by its plugin process, so it runs under the plugin's
// Landlock sandbox. The filesystem server is told it may read a
// directory outside the agent's grants: confined, the kernel refuses it
// the file (and the model sees that error); with confinement off, the
// same call reads it, so the refusal is the confinement's.
func TestMCPServerConfinedWithAgent(t *testing.T) {
	nodetest.Need(t)
	if st := process.Landlock(); !st.Available() {
		t.Skipf("this kernel has no Landlock (%s): nothing confines the plugin", st.Reason)
	}
	for _, tc := range []struct {
		confinement string
		reads       bool
	}{{"require", false}, {"off", true}} {
		t.Run(tc.confinement, func(t *testing.T) {
			f, ws, outside := fake(t), workspace(t), outsideDir(t)
			var log syncBuffer
			h := startHost(t, mcpConfig(t, f, "anthropic", ws, outside, tc.confinement), t.TempDir(), &log)
			defer h.Close(context.Background())
			prompt := "tool:mcp__fs__read_text_file:path=" + filepath.Join(outside, "notes.txt")
			out, err := h.Submit(context.Background(), hearth.Task{Agent: "ask", Prompt: prompt})
			if err != nil {
				t.Fatalf("submit: %v\n%s", err, log.String())
			}
			if got := sentToModel(f, "OUTSIDE-CONTENT"); got != tc.reads {
				t.Errorf("confinement %s: the file outside the grants reached the model: %v, want %v; answer: %s", tc.confinement, got, tc.reads, out.Result.Output)
			}
			if !tc.reads && !strings.Contains(out.Result.Output, "Could not use") {
				t.Errorf("the refused read is not in the answer: %s", out.Result.Output)
			}
		})
	}
}
