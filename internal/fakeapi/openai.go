package fakeapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// openai serves POST /v1/chat/completions.
func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	rec, fail := s.begin("openai", r, body, r.Header.Get("Authorization") == "Bearer "+s.Key && s.Key != "")
	if fail != nil {
		openaiError(w, *fail)
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Tools    []json.RawMessage `json:"tools"`
		Stream   bool              `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" || len(req.Messages) == 0 || req.Stream {
		s.setStatus(rec, http.StatusBadRequest)
		openaiError(w, Failure{Status: http.StatusBadRequest})
		return
	}
	// The tools are one unit: the API puts them ahead of the messages.
	units := []unit{{json: mustJSON(req.Tools)}}
	var whole struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &whole)
	msgs := whole.Messages
	for i, m := range req.Messages {
		units = append(units, unit{json: msgs[i]})
		var text string
		if len(m.Content) > 0 && m.Content[0] == '"' {
			_ = json.Unmarshal(m.Content, &text)
		} else if len(m.Content) > 0 && m.Content[0] == '[' {
			var parts []map[string]any
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				text += str(p["text"])
			}
		}
		switch m.Role {
		case "system", "developer":
			continue
		case "tool":
			// Consecutive tool messages answer one assistant turn.
			b := Block{Type: "tool_result", ID: m.ToolCallID, Text: text}
			if n := len(rec.Turns); n > 0 && rec.Turns[n-1].Role == "user" && len(rec.Turns[n-1].Blocks) > 0 && rec.Turns[n-1].Blocks[0].Type == "tool_result" {
				rec.Turns[n-1].Blocks = append(rec.Turns[n-1].Blocks, b)
			} else {
				rec.Turns = append(rec.Turns, Turn{Role: "user", Blocks: []Block{b}})
			}
		case "assistant":
			t := Turn{Role: "assistant"}
			if text != "" {
				t.Blocks = append(t.Blocks, Block{Type: "text", Text: text})
			}
			for _, tc := range m.ToolCalls {
				var in map[string]any
				_ = json.Unmarshal([]byte(tc.Function.Arguments), &in)
				t.Blocks = append(t.Blocks, Block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: in})
			}
			rec.Turns = append(rec.Turns, t)
		default:
			rec.Turns = append(rec.Turns, Turn{Role: "user", Blocks: []Block{{Type: "text", Text: text}}})
		}
	}
	calls, answer, hang := think(rec.Turns, vocabularyOf(toolNames(req.Tools), body))
	if hang {
		s.hangUntilCancelled(r, rec)
		return
	}
	read, _, total := s.cached(units, true)
	s.mu.Lock()
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	if answer != "" {
		msg["content"] = answer
	}
	var tcs []map[string]any
	for _, c := range calls {
		finish = "tool_calls"
		tcs = append(tcs, map[string]any{"id": s.nextID("call"), "type": "function",
			"function": map[string]any{"name": c.name, "arguments": string(s.arguments(c.input))}})
	}
	if tcs != nil {
		msg["tool_calls"] = tcs
	}
	out := tokens(mustJSON(msg))
	rec.Usage = Usage{Input: total - read, CachedInput: read, Output: out}
	id := s.nextID("chatcmpl")
	s.mu.Unlock()
	s.wait(r, rec.Usage)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage": map[string]any{
			"prompt_tokens": total, "completion_tokens": out, "total_tokens": total + out,
			"prompt_tokens_details":     map[string]any{"cached_tokens": read, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	})
}

// openaiError writes an error as the Chat Completions API does.
func openaiError(w http.ResponseWriter, f Failure) {
	kind, code, msg := "server_error", "server_error", "The server had an error while processing your request."
	switch f.Status {
	case 400:
		kind, code, msg = "invalid_request_error", "invalid_request", "the request is malformed"
	case 401:
		kind, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case 404:
		kind, code, msg = "invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."
	case 429:
		kind, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests."
	}
	if f.RetryAfter != "" {
		w.Header().Set("retry-after", f.RetryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": code}})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
