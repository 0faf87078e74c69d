package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/host/mcp"
)

// mcpPath is where the daemon serves MCP over streamable HTTP.
const mcpPath = "/mcp"

// mcpHandler serves hearth's MCP server (package host/mcp) over the
// engine, for agents that orchestrate agents: at mcpPath, behind the
// token like every route (HTTPHandler checks it; the dashboard's cookie
// is not enough, see httpAuth.signedIn).
//
// A tool call lasts as long as its task, and a client's notification
// stream as long as its session: the server's write timeout, which
// bounds the dashboard's responses, would cut them, so it is lifted for
// these requests. When the daemon shuts down, requests in flight end
// and every MCP session is closed, so that nothing of them outlives it.
func (s *Server) mcpHandler() http.Handler {
	srv := mcp.New(s.api, mcp.Options{})
	h := mcp.Handler(srv)
	var closer sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		closer.Do(func() {
			go func() {
				<-s.closing
				for ss := range srv.Sessions() {
					_ = ss.Close()
				}
			}()
		})
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-s.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
