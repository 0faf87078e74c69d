package api_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
)

// FuzzHTTPHandler sends the daemon's HTTP side arbitrary requests (method,
// path, body, with and without the token): it never answers 500 and never
// panics. (It found GET /0%87, which answered 500.)
func FuzzHTTPHandler(f *testing.F) {
	cfg := &config.Config{DataDir: filepath.Join(shortTempDir(f), "data"), Matcher: config.DefaultMatcher(),
		Agents: []*config.Agent{config.DefaultExternal("claude-code", config.ExternalClaudeCode)},
		Hooks:  config.Hooks{Agent: "claude-code", WhenUnreachable: config.HookAllow}}
	h, err := engine.New(engine.Options{Config: cfg})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = h.Close(context.Background()) })
	const addr, token = "127.0.0.1:7411", "tok"
	handler := api.NewServer(api.Options{Engine: h}).HTTPHandler(token, addr)
	for _, s := range []struct {
		method, path string
		body         []byte
	}{
		{"GET", "/", nil}, {"GET", "/0%87", nil}, {"GET", "/api/snapshot", nil}, {"GET", "/api/runs/x", nil},
		{"GET", "/api/runs/%ff", nil}, {"POST", "/hooks/claude-code", []byte(`{"session_id":"s","hook_event_name":"PreToolUse"}`)},
		{"GET", "/metrics", nil}, {"GET", "/healthz", nil}, {"GET", "/app.js/../../x", nil}, {"PUT", "/api/snapshot", nil},
		{"GET", "/login?code=AAAA", nil}, {"GET", "/login?token=x", nil},
	} {
		f.Add(s.method, s.path, s.body, true)
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte, withToken bool) {
		req, err := http.NewRequest(method, "http://"+addr+"/", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.URL.Path, req.URL.RawPath = "", ""
		if err := req.URL.UnmarshalBinary([]byte("http://" + addr + "/" + trimSlash(path))); err != nil {
			return
		}
		req.Host = addr
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Content-Type", "application/json")
		if withToken {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if req.URL.Path == "/api/events" {
			return // a stream: it does not end by itself
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", method, req.URL.String(), rec.Code, rec.Body.String())
		}
	})
}

func trimSlash(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	return p
}
