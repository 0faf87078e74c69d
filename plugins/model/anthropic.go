package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider speaks Anthropic's Messages API through the official
// SDK, which retries rate limits (429) and overloads (529) after the
// retry-after the API sends.
type anthropicProvider struct {
	client anthropic.Client
	model  string
	keyEnv string
}

func newAnthropic(s Settings, hc *http.Client) *anthropicProvider {
	base := apiBase(ProviderAnthropic, s.BaseURL)
	if s.BaseURL == "" {
		// Set explicitly so that ANTHROPIC_BASE_URL in the plugin's
		// environment, which the SDK would read, changes nothing.
		base = "https://api.anthropic.com/"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxRetries(s.MaxRetries),
		// The agent makes the call's span itself, as for every provider
		// (trace.go); the SDK's own would be a second span carrying the
		// same usage, which a backend summing tokens over spans counts
		// twice.
		option.WithoutOpenTelemetry(),
	}
	if s.APIKey != "" {
		opts = append(opts, option.WithAPIKey(s.APIKey))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: s.Model, keyEnv: s.APIKeyEnv}
}

// Complete implements Provider. Cache breakpoints go on the system prompt,
// the last tool and the last block of the conversation: the API caches the
// prefix up to each, so the next request of the same conversation (the
// next turn of the tool loop, or the next task on a warm session) reads
// everything before its new turns from the cache.
func (p *anthropicProvider) Complete(ctx context.Context, r Request) (Response, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model),
		MaxTokens: int64(r.MaxTokens),
	}
	if r.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: r.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for i, t := range r.Tools {
		tp := anthropic.ToolParam{
			Name:        t.Name,
			Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: t.Properties, Required: t.Required},
		}
		if i == len(r.Tools)-1 {
			tp.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	for i, m := range r.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				blocks = append(blocks, anthropic.NewTextBlock(b.Text))
			case BlockToolUse:
				blocks = append(blocks, anthropic.NewToolUseBlock(b.ID, json.RawMessage(b.Input), b.Name))
			case BlockToolResult:
				blocks = append(blocks, anthropic.NewToolResultBlock(b.ID, b.Text, b.IsError))
			}
		}
		if i == len(r.Messages)-1 && len(blocks) > 0 {
			if cc := blocks[len(blocks)-1].GetCacheControl(); cc != nil {
				*cc = anthropic.NewCacheControlEphemeralParam()
			}
		}
		if m.Role == RoleAssistant {
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		} else {
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		}
	}
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return Response{}, p.classify(ctx, err)
	}
	out := Response{
		ID:         msg.ID,
		StopReason: string(msg.StopReason),
		Usage: Usage{
			Input:       msg.Usage.InputTokens,
			CachedInput: msg.Usage.CacheReadInputTokens,
			CacheWrite:  msg.Usage.CacheCreationInputTokens,
			Output:      msg.Usage.OutputTokens,
		},
	}
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			out.Content = append(out.Content, Block{Type: BlockText, Text: c.Text})
		case "tool_use":
			in := c.Input
			if len(in) == 0 || string(in) == "null" {
				in = json.RawMessage("{}")
			}
			out.Content = append(out.Content, Block{Type: BlockToolUse, ID: c.ID, Name: c.Name, Input: Input(in)})
		}
	}
	return out, nil
}

func (p *anthropicProvider) classify(ctx context.Context, err error) error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return classifyStatus(apiErr.StatusCode, fmt.Sprintf("anthropic %s", p.model), p.keyEnv, err)
	}
	return classifyTransport(ctx, err)
}

var _ Provider = (*anthropicProvider)(nil)
