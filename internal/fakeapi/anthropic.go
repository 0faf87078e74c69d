package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic serves POST /v1/messages.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	rec, fail := s.begin("anthropic", r, body, s.Key != "" && (r.Header.Get("x-api-key") == s.Key || r.Header.Get("Authorization") == "Bearer "+s.Key))
	if fail != nil {
		anthropicError(w, *fail)
		return
	}
	var req struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		Stream    bool              `json:"stream"`
		System    json.RawMessage   `json:"system"`
		Tools     []json.RawMessage `json:"tools"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		s.setStatus(rec, http.StatusBadRequest)
		anthropicError(w, Failure{Status: http.StatusBadRequest})
		return
	}
	var units []unit
	add := func(raw json.RawMessage) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		_, bp := m["cache_control"]
		delete(m, "cache_control")
		b, _ := json.Marshal(m)
		units = append(units, unit{json: b, breakpoint: bp})
		if bp {
			rec.Breakpoints++
		}
		return m
	}
	for _, t := range req.Tools {
		add(t)
	}
	var sys []json.RawMessage
	if len(req.System) > 0 && req.System[0] == '[' {
		_ = json.Unmarshal(req.System, &sys)
	} else if len(req.System) > 0 {
		b, _ := json.Marshal(map[string]any{"type": "text", "text": json.RawMessage(req.System)})
		sys = append(sys, b)
	}
	for _, b := range sys {
		add(b)
	}
	for _, m := range req.Messages {
		t := Turn{Role: m.Role}
		var blocks []json.RawMessage
		if len(m.Content) > 0 && m.Content[0] == '"' {
			var text string
			_ = json.Unmarshal(m.Content, &text)
			b, _ := json.Marshal(map[string]any{"type": "text", "text": text})
			blocks = append(blocks, b)
		} else {
			_ = json.Unmarshal(m.Content, &blocks)
		}
		for _, raw := range blocks {
			b := add(raw)
			blk := Block{Type: str(b["type"]), Text: str(b["text"]), ID: str(b["id"]), Name: str(b["name"])}
			if in, ok := b["input"].(map[string]any); ok {
				blk.Input = in
			}
			if blk.Type == "tool_result" {
				blk.ID = str(b["tool_use_id"])
				blk.IsError, _ = b["is_error"].(bool)
				blk.Text = resultText(b["content"])
			}
			t.Blocks = append(t.Blocks, blk)
		}
		rec.Turns = append(rec.Turns, t)
	}
	voc := vocabularyOf(toolNames(req.Tools), body)
	calls, answer, hang := think(rec.Turns, voc)
	if hang {
		s.hangUntilCancelled(r, rec)
		return
	}
	read, write, total := s.cached(units, false)
	s.mu.Lock()
	var content []map[string]any
	stop := "end_turn"
	if answer != "" {
		content = append(content, map[string]any{"type": "text", "text": answer})
	}
	for _, c := range calls {
		stop = "tool_use"
		c = voc.encode(c)
		content = append(content, map[string]any{"type": "tool_use", "id": s.nextID("toolu"), "name": c.name, "input": c.input})
	}
	out, _ := json.Marshal(content)
	rec.Usage = Usage{Input: total - read - write, CachedInput: read, CacheWrite: write, Output: tokens(out)}
	id := s.nextID("msg")
	s.mu.Unlock()
	s.wait(r, rec.Usage)
	w.Header().Set("request-id", "req_"+id)
	if req.Stream {
		s.stream(w, r, id, req.Model, content, stop, rec.Usage)
		return
	}
	resp := mustJSON(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                rec.Usage.Input,
			"output_tokens":               rec.Usage.Output,
			"cache_creation_input_tokens": rec.Usage.CacheWrite,
			"cache_read_input_tokens":     rec.Usage.CachedInput,
		},
	})
	if s.SpacedArguments {
		// encoding/json compacts every object it writes: the inputs are
		// spaced in the encoded body.
		for _, c := range calls {
			resp = bytes.Replace(resp, []byte(`"input":`+string(mustJSON(c.input))), []byte(`"input":`+string(s.arguments(c.input))), 1)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(resp, '\n'))
}

func (s *Server) setStatus(rec *Recorded, status int) {
	s.mu.Lock()
	rec.Status = status
	s.mu.Unlock()
}

// anthropicError writes an error as the Messages API does.
func anthropicError(w http.ResponseWriter, f Failure) {
	kind, msg := "api_error", "internal error"
	switch f.Status {
	case 400:
		kind, msg = "invalid_request_error", "the request is malformed"
	case 401:
		kind, msg = "authentication_error", "invalid x-api-key"
	case 403:
		kind, msg = "permission_error", "your API key does not have permission to use the specified resource"
	case 404:
		kind, msg = "not_found_error", "model not found"
	case 429:
		kind, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case 529:
		kind, msg = "overloaded_error", "Overloaded"
	}
	if f.RetryAfter != "" {
		w.Header().Set("retry-after", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// resultText is a tool result's content: a string, or text blocks.
func resultText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				parts = append(parts, str(m["text"]))
			}
		}
		return strings.Join(parts, "")
	}
	return fmt.Sprint(v)
}
