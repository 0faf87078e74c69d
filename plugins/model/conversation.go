package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hearth-dev/hearth/internal/text"
)

// A conversation is kept in the agent's own terms, the same for every
// provider: a session's exported state is readable whichever API it
// speaks, and each provider translates it into its wire format per
// request.

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Kinds of block.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Block is one piece of a message: text, a tool use the model asked for,
// or a tool's result.
type Block struct {
	Type string `json:"type"`
	// Text is a text block's text, or a tool result's content.
	Text string `json:"text,omitempty"`
	// ID identifies a tool use; a tool result names the use it answers.
	ID string `json:"id,omitempty"`
	// Name is a tool use's tool.
	Name string `json:"name,omitempty"`
	// Input is a tool use's input, a JSON object, byte for byte as the
	// provider sent it.
	Input Input `json:"input,omitempty"`
	// IsError marks a tool result that is an error (a denial among them).
	IsError bool `json:"is_error,omitempty"`
}

// Input is a tool use's input, a JSON object, kept byte for byte as the
// provider wrote it. A restored session must send its earlier turns
// exactly as the live one did: a provider caches the prompt's prefix by
// its text (OpenAI-compatible servers by the very bytes of a tool call's
// arguments), and `{"path": "x"}` sent back as `{"path":"x"}` is another
// prefix, billed again in full. encoding/json compacts an embedded
// object when it encodes one, so in exported state an Input is a JSON
// string holding the bytes; it decodes from that, or from the object
// that state version 1 held.
type Input []byte

// MarshalJSON encodes the bytes as a JSON string.
func (in Input) MarshalJSON() ([]byte, error) { return json.Marshal(string(in)) }

// UnmarshalJSON takes a JSON string of the bytes, or (state version 1)
// the object itself.
func (in *Input) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*in = Input(s)
		return nil
	}
	*in = append(Input(nil), b...)
	return nil
}

// Message is one turn of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Usage counts one response's tokens. Input counts the input tokens billed
// at the full price: for Anthropic its input_tokens, for OpenAI
// prompt_tokens less the cached ones.
type Usage struct {
	Input       int64 `json:"input"`
	CachedInput int64 `json:"cached_input"`
	CacheWrite  int64 `json:"cache_write"`
	Output      int64 `json:"output"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.Input += v.Input
	u.CachedInput += v.CachedInput
	u.CacheWrite += v.CacheWrite
	u.Output += v.Output
}

// Prompt is the size of the prompt the usage was counted on, in tokens.
func (u Usage) Prompt() int64 { return u.Input + u.CachedInput + u.CacheWrite }

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Properties is the JSON Schema of the input object's properties.
	Properties map[string]any
	Required   []string
}

// Request is one call to a model.
type Request struct {
	System    string
	Tools     []ToolSpec
	Messages  []Message
	MaxTokens int
}

// Response is the model's answer to a Request.
type Response struct {
	Content []Block
	// StopReason is the provider's reason as it gave it ("end_turn",
	// "tool_use", "stop", "tool_calls", "max_tokens", "length").
	StopReason string
	Usage      Usage
	// ID is the provider's ID of the response, as its support asks for.
	ID string
}

// Provider calls a model.
type Provider interface {
	// Complete sends r and returns the model's response. A rate limit or
	// overload is retried after the provider's retry-after; an error that
	// retrying will not fix wraps sdk.ErrPermanent.
	Complete(ctx context.Context, r Request) (Response, error)
}

// record is what one finished task of the session did: the session's
// artifacts, from which a compacted conversation's summary is built.
type record struct {
	Prompt   string   `json:"prompt"`
	Read     []string `json:"read,omitempty"`
	Modified []string `json:"modified,omitempty"`
	Answer   string   `json:"answer"`
}

// stateVersion is the version of the exported state's layout: 2 keeps
// each tool use's input as the bytes the provider sent (Input); 1, which
// held it as an object, still imports.
const stateVersion = 2

// state is a session's exported state: its conversation.
type state struct {
	Version  int       `json:"version"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Records  []record  `json:"records,omitempty"`
	// PromptTokens is the size of the last prompt sent, as the provider
	// counted it: where the next compaction check starts.
	PromptTokens int64 `json:"prompt_tokens,omitempty"`
	// Counted is how many messages PromptTokens covers.
	Counted int `json:"counted,omitempty"`
}

// decodeState reads exported state, checking that it is a conversation
// that can continue.
func decodeState(b []byte) (state, error) {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("model: the session state is not a model agent's conversation: %w", err)
	}
	if s.Version != stateVersion && s.Version != 1 {
		return s, fmt.Errorf("model: session state version %d is not one this agent reads (1 or %d); the session cannot be rehydrated, start a new one", s.Version, stateVersion)
	}
	if err := checkConversation(s.Messages); err != nil {
		return s, fmt.Errorf("model: the session state's conversation is broken: %w", err)
	}
	if s.Counted < 0 || s.Counted > len(s.Messages) {
		s.Counted, s.PromptTokens = 0, 0
	}
	return s, nil
}

// checkConversation checks that msgs alternate user and assistant turns,
// beginning with the user's, and that every tool use is answered.
func checkConversation(msgs []Message) error {
	var pending map[string]bool
	for i, m := range msgs {
		want := RoleUser
		if i%2 == 1 {
			want = RoleAssistant
		}
		if m.Role != want {
			return fmt.Errorf("message %d is %q's, want %q's", i, m.Role, want)
		}
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
			case BlockToolUse:
				if m.Role != RoleAssistant || b.ID == "" || b.Name == "" {
					return fmt.Errorf("message %d: a tool use needs an id and a name, in an assistant turn", i)
				}
				if pending == nil {
					pending = map[string]bool{}
				}
				pending[b.ID] = true
			case BlockToolResult:
				if m.Role != RoleUser || !pending[b.ID] {
					return fmt.Errorf("message %d: a tool result answers no tool use", i)
				}
				delete(pending, b.ID)
			default:
				return fmt.Errorf("message %d: unknown block type %q", i, b.Type)
			}
		}
		if m.Role == RoleUser && len(pending) > 0 {
			return fmt.Errorf("message %d: tool uses left unanswered", i)
		}
	}
	if len(msgs)%2 == 1 {
		return errors.New("the conversation ends with the user's turn: a task was cut short")
	}
	return nil
}

// estimateTokens guesses the tokens of msgs: four bytes a token, the rule
// of thumb for English and code.
func estimateTokens(msgs []Message) int64 {
	var n int
	for _, m := range msgs {
		for _, b := range m.Content {
			n += len(b.Text) + len(b.Input) + len(b.Name) + 16
		}
	}
	return int64(n+3) / 4
}

// summary renders the session's records as the text that replaces the
// compacted turns.
func summary(recs []record) string {
	var b strings.Builder
	b.WriteString("Summary of this session's earlier work (older turns were compacted to fit the context window; read a file again if you need its exact content):\n")
	for i, r := range recs {
		fmt.Fprintf(&b, "\n%d. Task: %s\n", i+1, oneLine(r.Prompt, 300))
		if len(r.Read) > 0 {
			fmt.Fprintf(&b, "   Read: %s\n", strings.Join(r.Read, ", "))
		}
		if len(r.Modified) > 0 {
			fmt.Fprintf(&b, "   Changed: %s\n", strings.Join(r.Modified, ", "))
		}
		fmt.Fprintf(&b, "   Answer: %s\n", oneLine(r.Answer, 600))
	}
	return b.String()
}

// oneLine folds s onto one line of at most n bytes, and "..." when it
// was cut, never inside a character.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = text.Prefix(s, n) + "..."
	}
	return s
}
