// Package model is a bundled hearth agent that answers tasks with a
// language model: Anthropic's Messages API or any OpenAI-compatible Chat
// Completions server (OpenAI, Ollama, vLLM, llama.cpp's server, LM
// Studio), each through its official Go SDK.
//
// A session is a conversation. Each task is a new user turn in the
// session's conversation, so a task placed on a warm session finds what
// earlier tasks read already in the model's context, and the provider's
// prompt cache serves that prefix at the cached-input price. The exported
// state is the conversation, so a dormant session is rehydrated into the
// same one. When the conversation nears the context window, the turns of
// earlier tasks are replaced by a summary built from what each task did
// (what it read, changed and answered), and the compaction is reported as
// the task's progress, which the host records as an event.
//
// The model's tools (read, list, search, edit, write; shell only when the
// settings name it) run through sdk.Tools: each use is put to the host's
// guards first, a denial goes back to the model as the tool's error with
// the guard's reason, and each use is reported, so the session's
// fingerprint is what the model read. Results longer than the limit are
// cut, with a note to the model.
//
// Each result carries the task's tokens (Metrics: input_tokens,
// cached_input_tokens, cache_write_tokens, output_tokens), its tool_calls,
// model_calls, model_seconds and compactions, and its cost in dollars at
// the configured prices (Result.Cost).
//
// Settings come from the environment (SettingsFromEnv), which a config's
// model block fills in; see the README.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Version of the agent.
const Version = "0.1.0"

// compactAt is the share of the room left for the prompt (the window less
// the response) that a conversation may fill before it is compacted.
const compactAt = 0.8

const defaultSystemPrompt = `You are a careful engineer working in a repository, through tools that read, list and search its files (and, where given, change them or run commands). Read what a question needs before you answer; do not read a file again when its content is already in this conversation. Answer plainly and briefly, naming the files your answer rests on.`

// Agent is the model agent. One Agent is one session: one conversation.
// Use New or NewFromEnv.
type Agent struct {
	s        Settings
	err      error // a settings error, reported by every task
	provider Provider
	now      func() time.Time

	// mu serializes tasks: a conversation has one turn at a time.
	mu   sync.Mutex
	conv []Message
	recs []record
	// promptTokens is the size of the last prompt, as the provider
	// counted it, covering conv[:counted].
	promptTokens int64
	counted      int

	// mcp is the MCP servers' tools (mcp.go).
	mcp mcpSet
}

// Option adjusts an Agent.
type Option func(*Agent)

// WithHTTPClient makes the providers' SDKs use c (a test's client, a
// proxy's).
func WithHTTPClient(c *http.Client) Option {
	return func(a *Agent) { a.provider = a.newProvider(c) }
}

// WithClock makes the agent time model calls with now.
func WithClock(now func() time.Time) Option { return func(a *Agent) { a.now = now } }

// New returns a session of the agent with settings s. Bad settings are
// not an error here, where a plugin's main cannot report one: every task
// fails with them, permanently, saying what to fix.
func New(s Settings, opts ...Option) *Agent {
	a := &Agent{s: s.withDefaults(), now: time.Now}
	a.err = a.s.validate()
	for _, o := range opts {
		o(a)
	}
	if a.provider == nil {
		a.provider = a.newProvider(nil)
	}
	return a
}

// NewFromEnv returns a session configured by the environment (see
// SettingsFromEnv): what the bundled agent and hearth-model serve.
func NewFromEnv() *Agent {
	s, err := SettingsFromEnv(os.LookupEnv)
	a := New(s)
	if err != nil {
		a.err = err
	}
	return a
}

func (a *Agent) newProvider(hc *http.Client) Provider {
	if a.s.Provider == ProviderOpenAI {
		return newOpenAI(a.s, hc)
	}
	return newAnthropic(a.s, hc)
}

// Describe implements sdk.Agent.
func (a *Agent) Describe(context.Context) (sdk.Info, error) {
	desc := "answers tasks with a language model"
	if a.s.Model != "" {
		desc = fmt.Sprintf("answers tasks with %s (%s)", a.s.Model, a.s.Provider)
	}
	return sdk.Info{Name: "model", Version: Version, Description: desc, Capacity: 1}, nil
}

// Run implements sdk.Agent: the task is the conversation's next user turn,
// and the model's tool uses are carried out until it answers.
func (a *Agent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Result{}, err
	}
	if a.err != nil {
		return sdk.Result{}, sdk.Permanent(fmt.Errorf("model: the agent's settings: %w", a.err))
	}
	a.mu.Lock()
	defer a.mu.Unlock()

	// A task that fails leaves the conversation as it found it: a turn cut
	// short (a tool use with no result) would make every later request
	// invalid.
	start := len(a.conv)
	saved := struct {
		conv           []Message
		recs           []record
		tokens         int64
		counted, start int
	}{a.conv, a.recs, a.promptTokens, a.counted, start}
	ok := false
	defer func() {
		if !ok {
			a.conv, a.recs, a.promptTokens, a.counted = saved.conv[:saved.start:saved.start], saved.recs, saved.tokens, min(saved.counted, saved.start)
		}
	}()

	a.conv = append(a.conv, Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: promptOf(t)}}})
	tools := sdk.NewTools(cb, a.s.Root)
	var (
		usage      Usage
		toolCalls  int
		calls      int
		compacts   int
		modelTime  time.Duration
		rec        = record{Prompt: t.Prompt}
		denials    []string
		answer     string
		specsGiven = specs(a.s.Tools)
	)
	if len(a.s.MCP) > 0 {
		more, err := a.mcpTools(ctx)
		if err != nil {
			return sdk.Result{}, err
		}
		specsGiven = append(slices.Clip(specsGiven), more...)
	}
	for {
		if calls == a.s.MaxTurns {
			return sdk.Result{}, sdk.Permanent(fmt.Errorf("model: the model made %d calls without answering; raise max_turns, or narrow the task", calls))
		}
		if n, err := a.compact(ctx, cb, &start); err != nil {
			return sdk.Result{}, err
		} else if n {
			compacts++
		}
		began := a.now()
		resp, err := a.complete(ctx, Request{System: a.s.SystemPrompt, Tools: specsGiven, Messages: a.conv, MaxTokens: a.s.MaxOutputTokens})
		modelTime += a.now().Sub(began)
		if err != nil {
			return sdk.Result{}, err
		}
		calls++
		usage.Add(resp.Usage)
		a.promptTokens, a.counted = resp.Usage.Prompt(), len(a.conv)
		if len(resp.Content) == 0 {
			resp.Content = []Block{{Type: BlockText, Text: "(no answer)"}}
		}
		a.conv = append(a.conv, Message{Role: RoleAssistant, Content: resp.Content})
		var uses []Block
		var text []string
		for _, b := range resp.Content {
			switch b.Type {
			case BlockToolUse:
				uses = append(uses, b)
			case BlockText:
				text = append(text, b.Text)
			}
		}
		if len(uses) == 0 {
			answer = strings.TrimSpace(strings.Join(text, "\n\n"))
			break
		}
		results := make([]Block, 0, len(uses))
		for _, u := range uses {
			res, out, err := a.runTool(ctx, tools, u)
			if err != nil {
				return sdk.Result{}, err
			}
			toolCalls++
			results = append(results, res)
			if out.read != "" && !slices.Contains(rec.Read, out.read) {
				rec.Read = append(rec.Read, out.read)
			}
			if out.modified != "" && !slices.Contains(rec.Modified, out.modified) {
				rec.Modified = append(rec.Modified, out.modified)
			}
			if out.denied != "" {
				denials = append(denials, out.denied)
			}
		}
		a.conv = append(a.conv, Message{Role: RoleUser, Content: results})
		// Progress reports are informative; one that fails must not fail
		// the task.
		_ = cb.ReportProgress(ctx, sdk.Progress{
			Fraction: min(0.9, float64(calls)/float64(a.s.MaxTurns)),
			Message:  fmt.Sprintf("model call %d: %d tool uses", calls, len(uses)),
			Cost:     a.s.Prices.Cost(usage),
		})
	}
	rec.Answer = answer
	a.recs = append(a.recs, rec)
	ok = true

	res := sdk.Result{
		Output: answer,
		Cost:   a.s.Prices.Cost(usage),
		Metrics: map[string]float64{
			"input_tokens":        float64(usage.Input + usage.CacheWrite),
			"cached_input_tokens": float64(usage.CachedInput),
			"cache_write_tokens":  float64(usage.CacheWrite),
			"output_tokens":       float64(usage.Output),
			"tool_calls":          float64(toolCalls),
			"model_calls":         float64(calls),
			"model_seconds":       modelTime.Seconds(),
			"compactions":         float64(compacts),
		},
		Artifact: sdk.ContextArtifact{ModifiedFiles: rec.Modified, PotentialGotchas: denials},
	}
	if answer != "" {
		res.Artifact.KeyDecisions = []string{oneLine(answer, 400)}
	}
	return res, nil
}

// promptOf is the user turn of task t: what upstream tasks learned, the
// prompt as written, and why the task was sent back.
func promptOf(t sdk.Task) string {
	var parts []string
	if t.Context != "" {
		parts = append(parts, t.Context)
	}
	parts = append(parts, t.Prompt)
	if t.Feedback != "" {
		parts = append(parts, "This task was sent back: "+t.Feedback)
	}
	return strings.Join(parts, "\n\n")
}

// compact replaces the turns of the session's earlier tasks
// (a.conv[:*start]) with a summary built from their records, when the
// conversation nears the context window. It reports the compaction as the
// task's progress, which the host records as an event. It moves *start to
// where the current task's turns begin afterwards.
func (a *Agent) compact(ctx context.Context, cb sdk.Callbacks, start *int) (bool, error) {
	est := estimateTokens(a.conv)
	if a.counted > 0 && a.counted <= len(a.conv) {
		est = a.promptTokens + estimateTokens(a.conv[a.counted:])
	}
	room := float64(a.s.ContextWindow-a.s.MaxOutputTokens) * compactAt
	if float64(est) <= room || *start < 2 || len(a.recs) == 0 {
		return false, nil
	}
	sum := summary(a.recs)
	head := []Message{
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: sum}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "Understood: I will work from this summary and read files again where I need their content."}}},
	}
	dropped := *start
	before := est
	a.conv = append(head, a.conv[*start:]...)
	*start = len(head)
	a.counted, a.promptTokens = 0, 0
	after := estimateTokens(a.conv)
	msg := fmt.Sprintf("compacted the conversation: %d earlier messages (%d tasks, ~%d tokens in all) replaced by a summary; ~%d tokens now, context window %d", dropped, len(a.recs), before, after, a.s.ContextWindow)
	cb.Logger().Info("compacted the conversation", "dropped_messages", dropped, "tokens_before", before, "tokens_after", after)
	if err := cb.ReportProgress(ctx, sdk.Progress{Message: msg}); err != nil && ctx.Err() != nil {
		return true, ctx.Err()
	}
	return true, nil
}

// ExportState implements sdk.StateExporter: the conversation, and what
// each task did.
func (a *Agent) ExportState(context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(state{
		Version: stateVersion, Provider: a.s.Provider, Model: a.s.Model,
		Messages: a.conv, Records: a.recs, PromptTokens: a.promptTokens, Counted: a.counted,
	})
}

// ImportState implements sdk.StateExporter: the session continues the
// exported conversation.
func (a *Agent) ImportState(_ context.Context, b []byte) error {
	st, err := decodeState(b)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.conv, a.recs, a.promptTokens, a.counted = st.Messages, st.Records, st.PromptTokens, st.Counted
	if st.Provider != a.s.Provider || st.Model != a.s.Model {
		// The conversation is the agent's own, so it carries over; the new
		// model's count of it is its own, so start from an estimate.
		a.promptTokens, a.counted = 0, 0
	}
	return nil
}

var (
	_ sdk.Agent         = (*Agent)(nil)
	_ sdk.StateExporter = (*Agent)(nil)
)
