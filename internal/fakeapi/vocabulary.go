package fakeapi

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// vocabulary is how a client names the scripted model's tools. The model
// thinks in the model agent's words (read, list, search, write, shell);
// a request's tools say which words its client understands:
//
//   - the model agent's own (plugins/model): read {path}, list {path},
//     search {path, pattern}, write {path, content}, shell {command},
//     paths relative to the workspace;
//   - Claude Code's, recognised by its Read and Bash tools: read is Read
//     {file_path}, write is Write {file_path, content}, with absolute
//     paths (the workspace is the "Primary working directory" Claude
//     Code states in the conversation); list is Bash `ls DIR`, search is
//     Bash `grep -rn -- PATTERN DIR`, shell is Bash with the command, as
//     today's Claude Code has no LS, Glob or Grep tool unless asked.
type vocabulary struct {
	claude bool
	cwd    string
	tools  []string
}

var primaryDir = regexp.MustCompile(`Primary working directory: ([^\s"\\]+)`)

// vocabularyOf reads the vocabulary of a request from the names of its
// tools and, for Claude Code, the workspace its body states.
func vocabularyOf(tools []string, body []byte) vocabulary {
	v := vocabulary{tools: tools}
	if slices.Contains(tools, "Read") && slices.Contains(tools, "Bash") {
		v.claude = true
		if m := primaryDir.FindSubmatch(body); m != nil {
			v.cwd = string(m[1])
		}
	}
	return v
}

// offers reports whether the client can make the model's call name. The
// model agent's client is sent any call, offered or not (its tests check
// that it refuses what it did not offer); Claude Code's only what it
// offers.
func (v vocabulary) offers(name string) bool {
	if !v.claude {
		return true
	}
	switch name {
	case "read":
		return slices.Contains(v.tools, "Read")
	case "write":
		return slices.Contains(v.tools, "Write")
	}
	return slices.Contains(v.tools, "Bash")
}

// aside reports whether a user text is the client's own addition rather
// than the person's prompt: Claude Code's system reminders.
func (v vocabulary) aside(text string) bool {
	return v.claude && strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

func (v vocabulary) abs(p string) string {
	if filepath.IsAbs(p) || v.cwd == "" {
		return p
	}
	return filepath.Join(v.cwd, p)
}

func (v vocabulary) rel(p string) string {
	if v.cwd != "" {
		if r, err := filepath.Rel(v.cwd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return p
}

// encode says the model's call in the client's words.
func (v vocabulary) encode(c call) call {
	if !v.claude {
		return c
	}
	s := func(k string) string { x, _ := c.input[k].(string); return x }
	switch c.name {
	case "read":
		return call{"Read", map[string]any{"file_path": v.abs(s("path"))}}
	case "write":
		return call{"Write", map[string]any{"file_path": v.abs(s("path")), "content": s("content")}}
	case "list":
		return call{"Bash", map[string]any{"command": "ls " + shellQuote(v.abs(s("path"))), "description": "List the directory"}}
	case "search":
		return call{"Bash", map[string]any{"command": "grep -rn -- " + shellQuote(s("pattern")) + " " + shellQuote(v.abs(s("path"))), "description": "Search the directory"}}
	}
	return call{"Bash", map[string]any{"command": s("command"), "description": "Run the command"}}
}

// decode reads a tool use of the conversation in the model's words; ok
// is false for a tool the model never calls.
func (v vocabulary) decode(name string, in map[string]any) (string, map[string]any, bool) {
	if !v.claude {
		return name, in, true
	}
	s := func(k string) string { x, _ := in[k].(string); return x }
	switch name {
	case "Read":
		return "read", map[string]any{"path": v.rel(s("file_path"))}, true
	case "Write":
		return "write", map[string]any{"path": v.rel(s("file_path")), "content": s("content")}, true
	case "Bash":
		cmd := s("command")
		if dir, ok := strings.CutPrefix(cmd, "ls "); ok {
			if d, ok := shellUnquote(dir); ok {
				return "list", map[string]any{"path": v.rel(d)}, true
			}
		}
		if rest, ok := strings.CutPrefix(cmd, "grep -rn -- "); ok {
			words := shellWords(rest)
			if len(words) == 2 {
				return "search", map[string]any{"path": v.rel(words[1]), "pattern": words[0]}, true
			}
		}
		return "shell", map[string]any{"command": cmd}, true
	}
	return "", nil, false
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=,:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shellUnquote(s string) (string, bool) {
	w := shellWords(s)
	if len(w) != 1 {
		return "", false
	}
	return w[0], true
}

// shellWords splits what shellQuote joined.
func shellWords(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		var b strings.Builder
		for s != "" && s[0] != ' ' {
			if s[0] == '\'' {
				end := strings.IndexByte(s[1:], '\'')
				if end < 0 {
					return nil
				}
				b.WriteString(s[1 : 1+end])
				s = s[2+end:]
				if strings.HasPrefix(s, `\''`) {
					b.WriteByte('\'')
					s = s[2:]
				}
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
	}
	return out
}

// toolNames are the names of a request's tools.
func toolNames(tools []json.RawMessage) []string {
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		// Anthropic's {"name"}, or OpenAI's {"function": {"name"}}.
		var n struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t, &n)
		if n.Name == "" {
			n.Name = n.Function.Name
		}
		if n.Name != "" {
			names = append(names, n.Name)
		}
	}
	return names
}
