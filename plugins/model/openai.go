package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiProvider speaks the OpenAI-compatible Chat Completions API through
// the official SDK: OpenAI itself, or Ollama, vLLM, llama.cpp's server and
// LM Studio by base URL. Those cache a repeated prompt prefix on their own
// (no breakpoints to place), and report it as cached_tokens.
type openaiProvider struct {
	client openai.Client
	model  string
	keyEnv string
}

func newOpenAI(s Settings, hc *http.Client) *openaiProvider {
	base := apiBase(ProviderOpenAI, s.BaseURL)
	if s.BaseURL == "" {
		// Set explicitly so that OPENAI_BASE_URL in the plugin's
		// environment, which the SDK would read, changes nothing.
		base = "https://api.openai.com/v1/"
	}
	key := s.APIKey
	if key == "" {
		// Local servers want no key, but the SDK sends one; a placeholder
		// keeps it from reading OPENAI_API_KEY on its own.
		key = "none"
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(key),
		option.WithMaxRetries(s.MaxRetries),
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return &openaiProvider{client: openai.NewClient(opts...), model: s.Model, keyEnv: s.APIKeyEnv}
}

// Complete implements Provider.
func (p *openaiProvider) Complete(ctx context.Context, r Request) (Response, error) {
	params := openai.ChatCompletionNewParams{
		Model:               shared.ChatModel(p.model),
		MaxCompletionTokens: openai.Int(int64(r.MaxTokens)),
	}
	if r.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(r.System))
	}
	for _, t := range r.Tools {
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": t.Properties, "required": t.Required},
		}))
	}
	for _, m := range r.Messages {
		params.Messages = append(params.Messages, openaiMessages(m)...)
	}
	resp, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return Response{}, p.classify(ctx, err)
	}
	if len(resp.Choices) == 0 {
		return Response{}, fmt.Errorf("model: openai %s answered with no choices", p.model)
	}
	c := resp.Choices[0]
	cached := resp.Usage.PromptTokensDetails.CachedTokens
	out := Response{
		ID:         resp.ID,
		StopReason: c.FinishReason,
		Usage: Usage{
			Input:       resp.Usage.PromptTokens - cached,
			CachedInput: cached,
			Output:      resp.Usage.CompletionTokens,
		},
	}
	if c.Message.Content != "" {
		out.Content = append(out.Content, Block{Type: BlockText, Text: c.Message.Content})
	}
	for _, tc := range c.Message.ToolCalls {
		if tc.Type != "function" {
			continue
		}
		in := Input(tc.Function.Arguments)
		if strings.TrimSpace(tc.Function.Arguments) == "" {
			in = Input("{}")
		}
		out.Content = append(out.Content, Block{Type: BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: in})
	}
	return out, nil
}

// openaiMessages translates one turn: an assistant turn is one message
// with its tool calls; a user turn is a tool message per result, then the
// text, which the API wants in that order.
func openaiMessages(m Message) []openai.ChatCompletionMessageParamUnion {
	var text []string
	if m.Role == RoleAssistant {
		a := openai.ChatCompletionAssistantMessageParam{}
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				text = append(text, b.Text)
			case BlockToolUse:
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       b.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: string(b.Input)},
					},
				})
			}
		}
		if len(text) > 0 {
			a.Content.OfString = openai.String(strings.Join(text, "\n\n"))
		}
		return []openai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}
	}
	var out []openai.ChatCompletionMessageParamUnion
	for _, b := range m.Content {
		switch b.Type {
		case BlockToolResult:
			content := b.Text
			if b.IsError {
				// Chat Completions has no error flag on a tool message.
				content = "error: " + content
			}
			out = append(out, openai.ToolMessage(content, b.ID))
		case BlockText:
			text = append(text, b.Text)
		}
	}
	if len(text) > 0 {
		out = append(out, openai.UserMessage(strings.Join(text, "\n\n")))
	}
	return out
}

func (p *openaiProvider) classify(ctx context.Context, err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return classifyStatus(apiErr.StatusCode, fmt.Sprintf("openai %s", p.model), p.keyEnv, err)
	}
	return classifyTransport(ctx, err)
}

var _ Provider = (*openaiProvider)(nil)
