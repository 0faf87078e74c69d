package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hearth-dev/hearth/sdk"
)

// MCPServer is an MCP server whose tools the model is offered beside the
// built-in ones: a program the agent starts (Command, on stdio) or a
// server it reaches (URL, streamable HTTP).
//
// The server is started by the plugin process, so it runs as the plugin
// does: confined with it (Landlock, the plugin's environment) and killed
// with it. Its tools reach the model as mcp__NAME__TOOL, the name Claude
// Code gives them, so that guards and guards.path_fields written for
// Claude Code's MCP tools apply as they are.
type MCPServer struct {
	// Name names the server in its tools' names: one word.
	Name string `json:"name"`
	// Command is the program and its arguments.
	Command []string `json:"command,omitempty"`
	// URL is the server's streamable-HTTP endpoint.
	URL string `json:"url,omitempty"`
	// PathFields are the input fields of its tools that hold paths,
	// beside the common ones (path, paths, file_path, source,
	// destination, ...): what the session's fingerprint learns from a
	// call, and what the host is told the call touches.
	PathFields []string `json:"path_fields,omitempty"`
}

// mcpPrefix starts the name of every MCP tool the model is offered.
const mcpPrefix = "mcp__"

// mcpTool is one tool of an MCP server, as the model is offered it.
type mcpTool struct {
	server *mcpConn
	name   string // the server's own name for it
	spec   ToolSpec
	kind   sdk.ToolKind
}

// mcpConn is the agent's connection to one MCP server.
type mcpConn struct {
	cfg MCPServer
	cs  *gomcp.ClientSession
}

// mcpSet is the agent's MCP servers, connected on its first task and
// kept for the session's life.
type mcpSet struct {
	once  sync.Once
	err   error
	conns []*mcpConn
	tools map[string]*mcpTool // by the model's name for it
	specs []ToolSpec
}

// mcpTools connects to the settings' MCP servers, once, and returns the
// specs of their tools. A server that cannot be reached fails every task,
// permanently, saying which and why.
func (a *Agent) mcpTools(ctx context.Context) ([]ToolSpec, error) {
	m := &a.mcp
	m.once.Do(func() {
		m.tools = make(map[string]*mcpTool)
		for _, srv := range a.s.MCP {
			c, err := connectMCP(ctx, srv, a.s.Root)
			if err != nil {
				m.err = sdk.Permanent(err)
				return
			}
			m.conns = append(m.conns, c)
			for t, err := range c.cs.Tools(ctx, nil) {
				if err != nil {
					m.err = sdk.Permanent(fmt.Errorf("model: MCP server %q: listing its tools: %w", srv.Name, err))
					return
				}
				mt := &mcpTool{server: c, name: t.Name, kind: mcpKind(t), spec: ToolSpec{Name: mcpPrefix + srv.Name + "__" + t.Name, Description: t.Description}}
				mt.spec.Properties, mt.spec.Required = schemaParts(t.InputSchema)
				m.tools[mt.spec.Name] = mt
				m.specs = append(m.specs, mt.spec)
			}
		}
		// A fixed order keeps the request's prefix, and so the provider's
		// cache, the same from task to task.
		slices.SortFunc(m.specs, func(x, y ToolSpec) int { return strings.Compare(x.Name, y.Name) })
	})
	return m.specs, m.err
}

// connectMCP starts or reaches srv.
func connectMCP(ctx context.Context, srv MCPServer, root string) (*mcpConn, error) {
	client := gomcp.NewClient(&gomcp.Implementation{Name: "hearth-model", Version: Version}, nil)
	var t gomcp.Transport
	switch {
	case len(srv.Command) > 0:
		// Not the task's context: the server lives as long as the
		// session. sdk.Command kills it with the plugin.
		cmd := sdk.Command(context.Background(), srv.Command[0], srv.Command[1:]...)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		t = &gomcp.CommandTransport{Command: cmd}
	case srv.URL != "":
		t = &gomcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: http.DefaultClient, DisableStandaloneSSE: true}
	default:
		return nil, fmt.Errorf("model: MCP server %q has neither a command nor a url; give it one", srv.Name)
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		what := srv.URL
		if len(srv.Command) > 0 {
			what = strings.Join(srv.Command, " ")
		}
		return nil, fmt.Errorf("model: MCP server %q (%s) could not be started or reached: %w; check its command or url, and that the agent's confinement grants what it needs", srv.Name, what, err)
	}
	return &mcpConn{cfg: srv, cs: cs}, nil
}

// mcpKind is what a tool does, for the host's guards and the session's
// fingerprint: told by its name where that says it lists or searches,
// else by whether the server says it only reads.
func mcpKind(t *gomcp.Tool) sdk.ToolKind {
	n := strings.ToLower(t.Name)
	switch {
	case strings.Contains(n, "list") || strings.Contains(n, "tree"):
		return sdk.KindList
	case strings.Contains(n, "search") || strings.Contains(n, "find") || strings.Contains(n, "grep"):
		return sdk.KindSearch
	case t.Annotations != nil && t.Annotations.ReadOnlyHint:
		return sdk.KindRead
	}
	// A tool that may change things is taken to write what it names.
	return sdk.KindWrite
}

// schemaParts returns an input schema's properties and required names.
func schemaParts(schema any) (map[string]any, []string) {
	b, err := json.Marshal(schema)
	if err != nil {
		return map[string]any{}, nil
	}
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	_ = json.Unmarshal(b, &s)
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s.Properties, s.Required
}

// runMCP carries out the model's use u of an MCP tool through the host,
// as every tool: the host is asked first with the call's input and the
// paths it names (a denial comes back as the tool's error, with the
// guard's reason, and the server is never called), and the use is
// reported after with those paths, so that the session's fingerprint
// learns what it touched.
func (a *Agent) runMCP(ctx context.Context, tools *sdk.Tools, u Block) (Block, outcome, error) {
	res := Block{Type: BlockToolResult, ID: u.ID}
	var out outcome
	fail := func(format string, args ...any) (Block, outcome, error) {
		res.Text, res.IsError = fmt.Sprintf(format, args...), true
		return res, out, nil
	}
	mt := a.mcp.tools[u.Name]
	if mt == nil {
		return fail("there is no tool %q here", u.Name)
	}
	input := json.RawMessage(u.Input)
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var args map[string]any
	if err := json.Unmarshal(input, &args); err != nil {
		return fail("the input is not a JSON object: %v", err)
	}
	paths := inputPaths(input, mt.server.cfg.PathFields, a.s.Root)
	var text string
	err := tools.Do(ctx, sdk.ToolCall{Tool: u.Name, Kind: mt.kind, Paths: paths, RawInput: input}, func() ([]string, error) {
		r, err := mt.server.cs.CallTool(ctx, &gomcp.CallToolParams{Name: mt.name, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: %w", mt.server.cfg.Name, err)
		}
		var parts []string
		for _, c := range r.Content {
			switch c := c.(type) {
			case *gomcp.TextContent:
				parts = append(parts, c.Text)
			default:
				b, _ := json.Marshal(c)
				parts = append(parts, string(b))
			}
		}
		text = strings.Join(parts, "\n")
		if r.IsError {
			return nil, errors.New(text)
		}
		return nil, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return res, out, ctx.Err()
		}
		var denied *sdk.DeniedError
		if errors.As(err, &denied) {
			out.denied = denied.Error()
			return fail("denied by the host: %s", denied.Error())
		}
		return fail("%s", cut(err.Error(), a.s.ToolResultLimit))
	}
	if mt.kind == sdk.KindRead && len(paths) == 1 {
		out.read = paths[0]
	}
	if mt.kind == sdk.KindWrite && len(paths) > 0 {
		out.modified = paths[len(paths)-1]
	}
	res.Text = cut(text, a.s.ToolResultLimit)
	return res, out, nil
}

// commonPathFields are the input fields read as paths in every MCP
// tool's input, beside a server's own PathFields.
var commonPathFields = []string{"path", "paths", "file_path", "filepath", "file", "files", "source", "destination", "directory", "dir", "uri"}

// inputPaths is the paths an MCP call's input names, for the host's
// question and report: the strings (or lists of strings) under the
// common path fields and fields, at the top level, and every file:// URI
// at any depth. A path inside root is given relative to it, as the
// built-in tools give theirs.
//
// This is the agent's own reading, for the fingerprint. The guards do not
// rely on it: the host reads the call's input itself (host/guard), under
// guards.path_fields.
func inputPaths(input json.RawMessage, fields []string, root string) []string {
	var top map[string]any
	if json.Unmarshal(input, &top) != nil {
		return nil
	}
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		if root != "" && filepath.IsAbs(p) {
			if rel, err := filepath.Rel(root, p); err == nil && filepath.IsLocal(rel) {
				p = filepath.ToSlash(rel)
			}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	// In the order of the names, and keys in sorted order below: the
	// same input gives the same paths in the same order (the last is
	// what a write modified: a copy's destination after its source).
	keys := slices.Sorted(maps.Keys(top))
	for _, n := range append(slices.Clone(commonPathFields), fields...) {
		for _, k := range keys {
			if !strings.EqualFold(n, k) {
				continue
			}
			for _, s := range stringsIn(top[k]) {
				if p, ok := fileURIPath(s); ok {
					s = p
				}
				add(s)
			}
		}
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 {
			return
		}
		switch v := v.(type) {
		case string:
			if p, ok := fileURIPath(v); ok {
				add(p)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], depth+1)
			}
		case []any:
			for _, x := range v {
				walk(x, depth+1)
			}
		}
	}
	walk(top, 0)
	return out
}

// stringsIn is v when it is a string, or the strings of a list.
func stringsIn(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// fileURIPath is the path of a file:// URI.
func fileURIPath(s string) (string, bool) {
	if !strings.HasPrefix(strings.ToLower(s), "file:") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.Path == "" {
		return "", false
	}
	return u.Path, true
}
