package config

import (
	"encoding/json"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
)

// ModelMCP is a model block's `mcp "NAME" { ... }`: an MCP server whose
// tools the model agent offers its model beside the built-in ones, named
// mcp__NAME__TOOL. Every call goes through the host like the built-in
// tools': guards see its input, the session's fingerprint what it
// touched. The agent starts Command itself, so the server runs confined
// with it: grant what it needs (its program, its files) in the agent's
// confine block.
type ModelMCP struct {
	Name string `json:"name"`
	// Command starts the server on stdio; URL reaches it over
	// streamable HTTP. One of the two.
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// PathFields are the input fields of its tools that hold paths,
	// beside the common ones.
	PathFields []string `json:"path_fields,omitempty"`
}

type rawModelMCP struct {
	Name       string    `hcl:"name,label"`
	Command    []string  `hcl:"command,optional"`
	URL        *string   `hcl:"url,optional"`
	PathFields []string  `hcl:"path_fields,optional"`
	Body       hcl.Body  `hcl:",body"`
	DefRange   hcl.Range `hcl:",def_range"`
}

// modelMCP decodes a model block's mcp blocks into m.MCP.
func (v *validator) modelMCP(rm *rawModel, m *Model) {
	seen := map[string]bool{}
	for _, r := range rm.MCP {
		at := func(name string) hcl.Range { return hclspot.Attr(r.Body, name, r.DefRange) }
		s := ModelMCP{Name: r.Name, Command: r.Command, PathFields: r.PathFields}
		if r.URL != nil {
			s.URL = *r.URL
		}
		switch {
		case r.Name == "" || strings.ContainsAny(r.Name, " _/"):
			v.errorf(r.DefRange, "Invalid MCP server name", "An mcp block's label names the server in its tools' names (mcp__NAME__TOOL): one word without _ or /, such as \"fs\"; got %q.", r.Name)
		case seen[r.Name]:
			v.errorf(r.DefRange, "MCP server declared twice", "The model block declares mcp %q twice; give each server its own name.", r.Name)
		}
		seen[r.Name] = true
		switch {
		case len(s.Command) == 0 && s.URL == "":
			v.errorf(r.DefRange, "MCP server without a command or url", "mcp %q needs command, the program that serves it on stdio (such as [\"mcp-server-filesystem\", \"/src\"]), or url, its streamable-HTTP endpoint.", r.Name)
		case len(s.Command) > 0 && s.URL != "":
			v.errorf(at("url"), "MCP server with a command and a url", "mcp %q has both; keep command to have the agent start it, or url to reach a running one.", r.Name)
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			v.errorf(at("url"), "Invalid MCP url", "url must be an http:// or https:// URL, such as \"http://127.0.0.1:8931/mcp\"; got %q.", s.URL)
		case len(s.Command) > 0 && s.Command[0] == "":
			v.errorf(at("command"), "Empty MCP command", "command's first element is the program to run.")
		}
		m.MCP = append(m.MCP, s)
	}
}

// mcpEnv is m's MCP servers as the model agent reads them
// (HEARTH_MODEL_MCP), or "" for none.
func (m *Model) mcpEnv() string {
	if len(m.MCP) == 0 {
		return ""
	}
	b, _ := json.Marshal(m.MCP)
	return string(b)
}
