package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

// specs describes the tools named to the model, in a fixed order so that
// the request's prefix, and so the provider's cache, stays the same.
func specs(names []string) []ToolSpec {
	path := map[string]any{"type": "string", "description": "a path relative to the workspace root"}
	all := []ToolSpec{
		{Name: ToolRead, Description: "Read a file of the workspace.", Properties: map[string]any{"path": path}, Required: []string{"path"}},
		{Name: ToolList, Description: "List a directory of the workspace (\".\" is the root); directories end in /.", Properties: map[string]any{"path": path}, Required: []string{"path"}},
		{Name: ToolSearch, Description: "Search the files under a directory for lines matching a regular expression (Go syntax).", Properties: map[string]any{
			"path":    path,
			"pattern": map[string]any{"type": "string", "description": "the regular expression"},
			"glob":    map[string]any{"type": "string", "description": "only files whose name matches, such as *.go"},
		}, Required: []string{"path", "pattern"}},
		{Name: ToolEdit, Description: "Replace text that occurs exactly once in a file.", Properties: map[string]any{
			"path":       path,
			"old_string": map[string]any{"type": "string"},
			"new_string": map[string]any{"type": "string"},
		}, Required: []string{"path", "old_string", "new_string"}},
		{Name: ToolWrite, Description: "Write a file, replacing its content.", Properties: map[string]any{
			"path":    path,
			"content": map[string]any{"type": "string"},
		}, Required: []string{"path", "content"}},
		{Name: ToolShell, Description: "Run a shell command in the workspace root; returns its output and exit code.", Properties: map[string]any{
			"command": map[string]any{"type": "string"},
		}, Required: []string{"command"}},
	}
	var out []ToolSpec
	for _, s := range all {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// toolInput is every tool's input, as the model sends it.
type toolInput struct {
	Path      string `json:"path"`
	Pattern   string `json:"pattern"`
	Glob      string `json:"glob"`
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
	Content   string `json:"content"`
	Command   string `json:"command"`
}

// outcome is what a tool use did, for the task's record and artifact.
type outcome struct {
	read, modified string
	denied         string
}

// runTool carries out the model's tool use u through the host's tools:
// each is asked about first (a denial comes back as the tool's error, with
// the guard's reason) and reported after. It returns the tool result for
// the model, and an error only when the task must stop (its context is
// done).
func (a *Agent) runTool(ctx context.Context, tools *sdk.Tools, u Block) (Block, outcome, error) {
	res := Block{Type: BlockToolResult, ID: u.ID}
	var out outcome
	fail := func(format string, args ...any) (Block, outcome, error) {
		res.Text, res.IsError = fmt.Sprintf(format, args...), true
		return res, out, nil
	}
	if strings.HasPrefix(u.Name, mcpPrefix) {
		return a.runMCP(ctx, tools, u)
	}
	if !slices.Contains(a.s.Tools, u.Name) {
		return fail("there is no tool %q here; the tools are %s", u.Name, strings.Join(a.s.Tools, ", "))
	}
	var in toolInput
	if err := json.Unmarshal(u.Input, &in); err != nil {
		return fail("the input is not a JSON object with the tool's fields: %v", err)
	}
	if u.Name != ToolShell {
		if in.Path == "" {
			return fail("path is missing")
		}
		if !filepath.IsLocal(filepath.FromSlash(in.Path)) && in.Path != "." {
			return fail("path %q is not inside the workspace; give a path relative to its root, without ..", in.Path)
		}
	}
	var (
		text string
		err  error
	)
	switch u.Name {
	case ToolRead:
		var b []byte
		if b, err = tools.Read(ctx, in.Path); err == nil {
			text, out.read = string(b), in.Path
		}
	case ToolList:
		var es []fs.DirEntry
		es, err = tools.List(ctx, in.Path)
		text = listing(es)
	case ToolSearch:
		var ms []sdk.Match
		ms, err = tools.Search(ctx, in.Path, in.Pattern, sdk.SearchOptions{Glob: in.Glob, MaxMatches: 500})
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
		}
		if err == nil && len(ms) == 0 {
			b.WriteString("no matches")
		}
		text = b.String()
	case ToolEdit:
		if err = tools.Edit(ctx, in.Path, in.OldString, in.NewString); err == nil {
			text, out.modified = "edited "+in.Path, in.Path
		}
	case ToolWrite:
		if err = tools.Write(ctx, in.Path, []byte(in.Content)); err == nil {
			text, out.modified = fmt.Sprintf("wrote %s (%d bytes)", in.Path, len(in.Content)), in.Path
		}
	case ToolShell:
		var r sdk.ExecResult
		if r, err = tools.Exec(ctx, "sh", "-c", in.Command); err == nil {
			text = fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, out, ctx.Err()
		}
		var denied *sdk.DeniedError
		if errors.As(err, &denied) {
			out.denied = denied.Error()
			return fail("denied by the host: %s", denied.Error())
		}
		return fail("%v", err)
	}
	res.Text = cut(text, a.s.ToolResultLimit)
	return res, out, nil
}

func listing(es []fs.DirEntry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// cut keeps at most limit bytes of s, at a rune boundary, and says so at
// the end, so that the model knows it did not see everything.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := len(text.Prefix(s, limit))
	return s[:n] + fmt.Sprintf("\n[cut: showing the first %d of %d bytes; search for what you need, or read a smaller file]", n, len(s))
}
