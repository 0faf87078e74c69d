package mcp

import (
	"context"
	"encoding/json"
	"strings"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs.
const (
	sessionsURI = "hearth://sessions"
	runsURI     = "hearth://runs"
)

// resources adds the sessions and runs as resources: the lists, and one
// session or run by ID. Each reads as JSON, the same as the tools'
// structured content.
func (s *server) resources(srv *gomcp.Server) {
	srv.AddResource(&gomcp.Resource{URI: sessionsURI, Name: "sessions", Title: "Agent sessions", MIMEType: "application/json",
		Description: "hearth's agent sessions, live and dormant, most recently active first, each with what it knows (its fingerprint)."},
		func(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
			all, err := s.svc.Sessions(ctx)
			if err != nil {
				return nil, err
			}
			return jsonResource(req.Params.URI, all)
		})
	srv.AddResource(&gomcp.Resource{URI: runsURI, Name: "runs", Title: "Pipeline runs", MIMEType: "application/json",
		Description: "The pipeline runs, most recently active first, with their status and progress."},
		func(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
			all, err := s.svc.Runs(ctx)
			if err != nil {
				return nil, err
			}
			return jsonResource(req.Params.URI, all)
		})
	srv.AddResourceTemplate(&gomcp.ResourceTemplate{URITemplate: sessionsURI + "/{id}", Name: "session", Title: "One agent session", MIMEType: "application/json",
		Description: "One session by ID: what it knows, its latest events and the placement decisions that involved it."},
		func(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
			id, ok := idOf(req.Params.URI, sessionsURI)
			if !ok {
				return nil, gomcp.ResourceNotFoundError(req.Params.URI)
			}
			d, err := s.svc.Session(ctx, id, eventsOr(0))
			if err != nil {
				return nil, s.toolError("", err)
			}
			return jsonResource(req.Params.URI, d)
		})
	srv.AddResourceTemplate(&gomcp.ResourceTemplate{URITemplate: runsURI + "/{id}", Name: "run", Title: "One pipeline run", MIMEType: "application/json",
		Description: "One run by ID (or a prefix no other run shares): its tasks, state, files and history."},
		func(ctx context.Context, req *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
			id, ok := idOf(req.Params.URI, runsURI)
			if !ok {
				return nil, gomcp.ResourceNotFoundError(req.Params.URI)
			}
			d, err := s.svc.Run(ctx, id)
			if err != nil {
				return nil, s.toolError("", err)
			}
			return jsonResource(req.Params.URI, d)
		})
}

// idOf is the ID in uri, under prefix.
func idOf(uri, prefix string) (string, bool) {
	id, ok := strings.CutPrefix(uri, prefix+"/")
	return id, ok && id != "" && !strings.Contains(id, "/")
}

func jsonResource(uri string, v any) (*gomcp.ReadResourceResult, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &gomcp.ReadResourceResult{Contents: []*gomcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
