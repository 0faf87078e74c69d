package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// stream writes a Messages API response as the server-sent events a
// request with "stream": true gets: message_start (with the input's
// usage), for each content block a content_block_start, its deltas
// (text_delta, or input_json_delta for a tool use's input) and a
// content_block_stop, then message_delta (the stop reason and the output
// tokens) and message_stop. A ping follows message_start, as the API
// sends one. Text comes in pieces of a few words, a tool's input in two,
// so that a client that joins deltas is tested on joining them.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, content []map[string]any, stop string, u Usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) bool {
		b, _ := json.Marshal(data)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return r.Context().Err() == nil
	}
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": u.Input, "output_tokens": 1,
			"cache_creation_input_tokens": u.CacheWrite, "cache_read_input_tokens": u.CachedInput,
		},
	}}) || !send("ping", map[string]any{"type": "ping"}) {
		return
	}
	for i, c := range content {
		start := map[string]any{}
		for k, v := range c {
			start[k] = v
		}
		var deltas []map[string]any
		switch c["type"] {
		case "text":
			start["text"] = ""
			for _, piece := range pieces(str(c["text"]), 8) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
			}
		case "tool_use":
			start["input"] = map[string]any{}
			in, _ := json.Marshal(c["input"])
			half := len(in) / 2
			deltas = append(deltas,
				map[string]any{"type": "input_json_delta", "partial_json": string(in[:half])},
				map[string]any{"type": "input_json_delta", "partial_json": string(in[half:])})
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}) {
			return
		}
		for _, d := range deltas {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output}}) {
		return
	}
	send("message_stop", map[string]any{"type": "message_stop"})
}

// pieces cuts s after every n-th space, keeping every byte.
func pieces(s string, n int) []string {
	var out []string
	for s != "" {
		cut, spaces := len(s), 0
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				if spaces++; spaces == n {
					cut = i + 1
					break
				}
			}
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// countTokens serves POST /v1/messages/count_tokens: the request's input
// tokens, counted as a message request's are (four bytes of JSON a
// token), without calling the model.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	authorized := s.Key != "" && (r.Header.Get("x-api-key") == s.Key || r.Header.Get("Authorization") == "Bearer "+s.Key)
	s.mu.Lock()
	s.counts++
	s.mu.Unlock()
	if !authorized {
		anthropicError(w, Failure{Status: http.StatusUnauthorized})
		return
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		anthropicError(w, Failure{Status: http.StatusBadRequest})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": tokens(body)})
}

// CountRequests is how many token-counting requests the server answered;
// they are not model calls, so Requests leaves them out.
func (s *Server) CountRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// hello answers Claude Code's reachability check (HEAD /api/hello).
func hello(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

// queryOf is a request's query string, as sent.
func queryOf(r *http.Request) string { return strings.TrimSpace(r.URL.RawQuery) }
