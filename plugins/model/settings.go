package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The environment variables a model agent reads its settings from. A
// config's `model` block sets them (host/config); a hand-written agent
// block may set them in its env map instead. The API key itself is never
// among them: APIKeyEnv names the variable that holds it, which reaches
// the plugin through the block's pass_env.
const (
	EnvProvider         = "HEARTH_MODEL_PROVIDER"
	EnvName             = "HEARTH_MODEL_NAME"
	EnvBaseURL          = "HEARTH_MODEL_BASE_URL"
	EnvAPIKeyEnv        = "HEARTH_MODEL_API_KEY_ENV"
	EnvPriceInput       = "HEARTH_MODEL_PRICE_INPUT"
	EnvPriceCachedInput = "HEARTH_MODEL_PRICE_CACHED_INPUT"
	EnvPriceCacheWrite  = "HEARTH_MODEL_PRICE_CACHE_WRITE"
	EnvPriceOutput      = "HEARTH_MODEL_PRICE_OUTPUT"
	EnvContextWindow    = "HEARTH_MODEL_CONTEXT_WINDOW"
	EnvMaxOutputTokens  = "HEARTH_MODEL_MAX_OUTPUT_TOKENS"
	EnvTools            = "HEARTH_MODEL_TOOLS"
	EnvSystemPrompt     = "HEARTH_MODEL_SYSTEM_PROMPT"
	EnvMaxRetries       = "HEARTH_MODEL_MAX_RETRIES"
	EnvMaxTurns         = "HEARTH_MODEL_MAX_TURNS"
	EnvToolResultLimit  = "HEARTH_MODEL_TOOL_RESULT_LIMIT"
	EnvRoot             = "HEARTH_MODEL_ROOT"
	// EnvMCP holds the MCP servers, as a JSON list of MCPServer.
	EnvMCP               = "HEARTH_MODEL_MCP"
	defaultContextWindow = 200_000
	defaultMaxOutput     = 4096
	defaultMaxRetries    = 4
	defaultMaxTurns      = 40
	defaultResultLimit   = 16 << 10
)

// Providers the agent speaks.
const (
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic"
	// ProviderOpenAI is the OpenAI-compatible Chat Completions API, which
	// also reaches Ollama, vLLM, llama.cpp's server and LM Studio by
	// base URL.
	ProviderOpenAI = "openai"
)

// Tool names the model may be given.
const (
	ToolRead   = "read"
	ToolList   = "list"
	ToolSearch = "search"
	ToolEdit   = "edit"
	ToolWrite  = "write"
	ToolShell  = "shell"
)

// DefaultTools are the tools a model gets when its settings name none:
// reading the workspace, never changing it.
var DefaultTools = []string{ToolRead, ToolList, ToolSearch}

var allTools = []string{ToolRead, ToolList, ToolSearch, ToolEdit, ToolWrite, ToolShell}

// Prices are what a provider charges, in dollars per million tokens.
type Prices struct {
	// Input is the price of input tokens read neither from nor into the
	// provider's prompt cache.
	Input float64 `json:"input"`
	// CachedInput is the price of input tokens read from the cache.
	CachedInput float64 `json:"cached_input"`
	// CacheWrite is the price of input tokens written to the cache
	// (Anthropic charges 1.25x input for them); zero means Input.
	CacheWrite float64 `json:"cache_write,omitempty"`
	// Output is the price of output tokens.
	Output float64 `json:"output"`
}

// Cost returns what u cost at p, in dollars.
func (p Prices) Cost(u Usage) float64 {
	write := p.CacheWrite
	if write == 0 {
		write = p.Input
	}
	return (float64(u.Input)*p.Input + float64(u.CachedInput)*p.CachedInput +
		float64(u.CacheWrite)*write + float64(u.Output)*p.Output) / 1e6
}

// Settings configure one model agent.
type Settings struct {
	// Provider is ProviderAnthropic or ProviderOpenAI.
	Provider string
	// Model is the provider's model name ("claude-sonnet-4-5", "gpt-4.1",
	// "qwen2.5-coder:7b").
	Model string
	// BaseURL reaches another endpoint than the provider's own: a proxy,
	// or a local OpenAI-compatible server ("http://localhost:11434/v1").
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key. Empty
	// means no key, which only a local server (BaseURL set) accepts.
	APIKeyEnv string
	// APIKey is the key, read from APIKeyEnv; never exported, logged or
	// stored.
	APIKey string
	// Prices price the tokens for Result.Cost.
	Prices Prices
	// ContextWindow is the model's context window in tokens; the
	// conversation is compacted when it nears it.
	ContextWindow int
	// MaxOutputTokens bounds each model response.
	MaxOutputTokens int
	// Tools are the tools the model may use (ToolRead...). ToolShell runs
	// any command the model writes, so it is given only when named.
	Tools []string
	// SystemPrompt is the conversation's system prompt; empty means the
	// agent's own.
	SystemPrompt string
	// MaxRetries is how many times a rate-limited or overloaded request is
	// retried, after the provider's retry-after; 0 means 4.
	MaxRetries int
	// MaxTurns bounds the model calls of one task.
	MaxTurns int
	// ToolResultLimit is the most bytes of a tool's result the model is
	// shown; a longer one is cut, with a note saying so.
	ToolResultLimit int
	// Root is the workspace the tools work in; empty means the current
	// directory (the host starts a plugin in its agent's workspace).
	Root string
	// MCP are the MCP servers whose tools the model is offered beside
	// Tools (mcp.go).
	MCP []MCPServer
}

// SettingsFromEnv reads the settings from the environment, as getenv
// (os.LookupEnv in a plugin) returns it.
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	s := Settings{
		Provider:     get(EnvProvider),
		Model:        get(EnvName),
		BaseURL:      get(EnvBaseURL),
		SystemPrompt: get(EnvSystemPrompt),
		Root:         get(EnvRoot),
	}
	if s.Provider == "" {
		s.Provider = ProviderAnthropic
	}
	if v, ok := lookup(EnvAPIKeyEnv); ok {
		s.APIKeyEnv = v
	} else {
		s.APIKeyEnv = DefaultKeyEnv(s.Provider)
	}
	var errs []error
	num := func(k string, f *float64) {
		if v := get(k); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 {
				errs = append(errs, fmt.Errorf("%s = %q: want a price in dollars per million tokens, such as 3 or 0.3", k, v))
			}
			*f = x
		}
	}
	num(EnvPriceInput, &s.Prices.Input)
	num(EnvPriceCachedInput, &s.Prices.CachedInput)
	num(EnvPriceCacheWrite, &s.Prices.CacheWrite)
	num(EnvPriceOutput, &s.Prices.Output)
	integer := func(k string, f *int) {
		if v := get(k); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				errs = append(errs, fmt.Errorf("%s = %q: want a whole number", k, v))
			}
			*f = x
		}
	}
	integer(EnvContextWindow, &s.ContextWindow)
	integer(EnvMaxOutputTokens, &s.MaxOutputTokens)
	integer(EnvMaxRetries, &s.MaxRetries)
	integer(EnvMaxTurns, &s.MaxTurns)
	integer(EnvToolResultLimit, &s.ToolResultLimit)
	if v := get(EnvTools); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				s.Tools = append(s.Tools, t)
			}
		}
	}
	if v := get(EnvMCP); v != "" {
		if err := json.Unmarshal([]byte(v), &s.MCP); err != nil {
			errs = append(errs, fmt.Errorf("%s: want a JSON list of MCP servers, such as [{\"name\":\"fs\",\"command\":[\"mcp-server-filesystem\",\"/src\"]}]: %v", EnvMCP, err))
		}
	}
	if s.APIKeyEnv != "" {
		s.APIKey = get(s.APIKeyEnv)
	}
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	return s, s.validate()
}

// DefaultKeyEnv is the variable that holds provider's key when the
// settings name none: ANTHROPIC_API_KEY or OPENAI_API_KEY.
func DefaultKeyEnv(provider string) string {
	if provider == ProviderOpenAI {
		return "OPENAI_API_KEY"
	}
	return "ANTHROPIC_API_KEY"
}

// withDefaults fills what s leaves unset.
func (s Settings) withDefaults() Settings {
	if s.Provider == "" {
		s.Provider = ProviderAnthropic
	}
	if s.ContextWindow == 0 {
		s.ContextWindow = defaultContextWindow
	}
	if s.MaxOutputTokens == 0 {
		s.MaxOutputTokens = defaultMaxOutput
	}
	if s.MaxRetries == 0 {
		s.MaxRetries = defaultMaxRetries
	}
	if s.MaxTurns == 0 {
		s.MaxTurns = defaultMaxTurns
	}
	if s.ToolResultLimit == 0 {
		s.ToolResultLimit = defaultResultLimit
	}
	if s.Tools == nil {
		s.Tools = DefaultTools
	}
	if s.SystemPrompt == "" {
		s.SystemPrompt = defaultSystemPrompt
	}
	return s
}

// validate says what is wrong with s, and how to fix it.
func (s Settings) validate() error {
	var errs []error
	switch s.Provider {
	case ProviderAnthropic, ProviderOpenAI:
	default:
		errs = append(errs, fmt.Errorf("model provider %q is not known; use %q or %q (any OpenAI-compatible server is %q with a base_url)", s.Provider, ProviderAnthropic, ProviderOpenAI, ProviderOpenAI))
	}
	if s.Model == "" {
		errs = append(errs, fmt.Errorf("no model named; set the model block's model (%s), such as \"claude-sonnet-4-5\" or \"gpt-4.1\"", EnvName))
	}
	switch {
	case s.APIKeyEnv == "" && s.BaseURL == "":
		errs = append(errs, fmt.Errorf("no api_key_env for %s's own endpoint; name the variable that holds the key (%s)", s.Provider, EnvAPIKeyEnv))
	case s.APIKeyEnv != "" && s.APIKey == "":
		errs = append(errs, fmt.Errorf("the API key variable %s is not set in the agent's environment; export it where hearth runs and list it in the agent block's pass_env (a model block does that)", s.APIKeyEnv))
	}
	for _, t := range s.Tools {
		if !slices.Contains(allTools, t) {
			errs = append(errs, fmt.Errorf("tool %q is not one the model agent has; choose among %s", t, strings.Join(allTools, ", ")))
		}
	}
	seen := map[string]bool{}
	for _, m := range s.MCP {
		switch {
		case m.Name == "" || strings.ContainsAny(m.Name, " _/") || seen[m.Name]:
			errs = append(errs, fmt.Errorf("MCP server name %q: want one word, without _ or /, unique among the agent's servers", m.Name))
		case (len(m.Command) > 0) == (m.URL != ""):
			errs = append(errs, fmt.Errorf("MCP server %q: give it a command or a url, not both or neither", m.Name))
		}
		seen[m.Name] = true
	}
	if s.ContextWindow != 0 && s.MaxOutputTokens >= s.ContextWindow {
		errs = append(errs, fmt.Errorf("max_output_tokens %d is not below context_window %d; lower it", s.MaxOutputTokens, s.ContextWindow))
	}
	return errors.Join(errs...)
}

// apiBase is the base URL the provider's SDK is given for base: the
// SDKs append the API's path to it, Anthropic's "v1/messages", OpenAI's
// "chat/completions". People write a server's URL both ways, with the
// version and without ("http://localhost:8080/v1", as local servers
// document it, and "http://localhost:8080"), so both work: for Anthropic
// a trailing /v1 is dropped (else the request goes to /v1/v1/messages);
// for OpenAI a URL with no path gets /v1 (the path every compatible
// server serves), and any other path is kept as it is (a proxy's own).
// The result ends in "/".
func apiBase(provider, base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return base // validated where it was configured; the SDK says the rest
	}
	p := strings.TrimRight(u.Path, "/")
	switch provider {
	case ProviderAnthropic:
		p = strings.TrimSuffix(p, "/v1")
	case ProviderOpenAI:
		if p == "" {
			p = "/v1"
		}
	}
	u.Path, u.RawPath = p+"/", ""
	return u.String()
}
