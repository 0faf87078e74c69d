package config

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
)

// Model is an agent block's `model { ... }`: the settings of the bundled
// model agent (plugins/model). They reach the plugin as HEARTH_MODEL_*
// variables added to the block's env; the API key reaches it through
// pass_env, from the variable APIKeyEnv names, and is never in the config
// or the store.
type Model struct {
	// Provider is "anthropic" or "openai" (any OpenAI-compatible server).
	Provider string
	// Model is the provider's model name.
	Model string
	// BaseURL reaches a proxy or a local server.
	BaseURL string
	// APIKeyEnv names the variable that holds the key; "" means none (a
	// local server).
	APIKeyEnv string
	// Prices are dollars per million tokens.
	Prices ModelPrices
	// ContextWindow and MaxOutputTokens are in tokens; 0 means the
	// agent's defaults.
	ContextWindow, MaxOutputTokens int
	// Tools the model may use; nil means the agent's default (read, list,
	// search). "shell" is given only when listed.
	Tools []string
	// SystemPrompt replaces the agent's own.
	SystemPrompt string
	// MCP are the MCP servers whose tools the model is offered
	// (model_mcp.go).
	MCP []ModelMCP
}

// ModelPrices are what a provider charges, in dollars per million tokens.
type ModelPrices struct {
	Input, CachedInput, CacheWrite, Output float64
}

// ModelTools are the tools a model block may name.
var ModelTools = []string{"read", "list", "search", "edit", "write", "shell"}

// ModelProviders are the providers a model block may name.
var ModelProviders = []string{"anthropic", "openai"}

type rawModel struct {
	Provider        *string       `hcl:"provider,optional"`
	Model           string        `hcl:"model"`
	BaseURL         *string       `hcl:"base_url,optional"`
	APIKeyEnv       *string       `hcl:"api_key_env,optional"`
	ContextWindow   *int          `hcl:"context_window,optional"`
	MaxOutputTokens *int          `hcl:"max_output_tokens,optional"`
	Tools           []string      `hcl:"tools,optional"`
	SystemPrompt    *string       `hcl:"system_prompt,optional"`
	Prices          *rawPrices    `hcl:"prices,block"`
	MCP             []rawModelMCP `hcl:"mcp,block"`
	Body            hcl.Body      `hcl:",body"`
	DefRange        hcl.Range     `hcl:",def_range"`
}

type rawPrices struct {
	Input       *float64 `hcl:"input,optional"`
	CachedInput *float64 `hcl:"cached_input,optional"`
	CacheWrite  *float64 `hcl:"cache_write,optional"`
	Output      *float64 `hcl:"output,optional"`
	Body        hcl.Body `hcl:",body"`
}

// model decodes an agent's model block into a.Model, a.Env and a.PassEnv.
func (v *validator) model(ra *rawAgent, a *Agent) {
	rm := ra.Model
	at := func(name string) hcl.Range { return hclspot.Attr(rm.Body, name, rm.DefRange) }
	m := &Model{Provider: "anthropic", Model: rm.Model}
	if rm.Provider != nil {
		m.Provider = *rm.Provider
	}
	if !slices.Contains(ModelProviders, m.Provider) {
		v.errorf(at("provider"), "Unknown model provider", "provider must be %q (the Messages API) or %q (Chat Completions: OpenAI, or a local server such as Ollama, vLLM or LM Studio with base_url); got %q.", "anthropic", "openai", m.Provider)
	}
	if strings.TrimSpace(m.Model) == "" {
		v.errorf(at("model"), "No model", "model names the provider's model, such as \"claude-sonnet-4-5\" or \"gpt-4.1\".")
	}
	if rm.BaseURL != nil {
		m.BaseURL = *rm.BaseURL
		if !strings.HasPrefix(m.BaseURL, "http://") && !strings.HasPrefix(m.BaseURL, "https://") {
			v.errorf(at("base_url"), "Invalid base_url", "base_url must be an http:// or https:// URL, such as \"http://localhost:11434/v1\"; got %q.", m.BaseURL)
		}
	}
	m.APIKeyEnv = "ANTHROPIC_API_KEY"
	if m.Provider == "openai" {
		m.APIKeyEnv = "OPENAI_API_KEY"
	}
	if rm.APIKeyEnv != nil {
		m.APIKeyEnv = *rm.APIKeyEnv
	}
	v.apiKey(at("api_key_env"), ra.Name, m.APIKeyEnv, m.BaseURL, "reads its model's key from")
	positive := func(p *int, name string, dst *int) {
		if p == nil {
			return
		}
		*dst = *p
		if *p < 1 {
			v.errorf(at(name), "Invalid "+name, "%s is a number of tokens and must be at least 1 (got %d); remove it for the agent's default.", name, *p)
		}
	}
	positive(rm.ContextWindow, "context_window", &m.ContextWindow)
	positive(rm.MaxOutputTokens, "max_output_tokens", &m.MaxOutputTokens)
	if m.ContextWindow > 0 && m.MaxOutputTokens >= m.ContextWindow {
		v.errorf(at("max_output_tokens"), "Output larger than the window", "max_output_tokens (%d) must be below context_window (%d).", m.MaxOutputTokens, m.ContextWindow)
	}
	if rm.Tools != nil {
		m.Tools = slices.Clone(rm.Tools)
		for _, t := range m.Tools {
			if !slices.Contains(ModelTools, t) {
				v.errorf(at("tools"), "Unknown model tool", "The model agent has no tool %q; choose among %s (shell runs any command the model writes).", t, strings.Join(ModelTools, ", "))
			}
		}
	}
	if rm.SystemPrompt != nil {
		m.SystemPrompt = *rm.SystemPrompt
	}
	if p := rm.Prices; p != nil {
		pat := func(name string) hcl.Range { return hclspot.Attr(p.Body, name, hclspot.Block(p.Body, rm.DefRange)) }
		for _, f := range []struct {
			name string
			src  *float64
			dst  *float64
		}{{"input", p.Input, &m.Prices.Input}, {"cached_input", p.CachedInput, &m.Prices.CachedInput}, {"cache_write", p.CacheWrite, &m.Prices.CacheWrite}, {"output", p.Output, &m.Prices.Output}} {
			if f.src == nil {
				continue
			}
			*f.dst = *f.src
			if *f.src < 0 {
				v.errorf(pat(f.name), "Invalid price", "%s is dollars per million tokens and cannot be negative (got %g).", f.name, *f.src)
			}
		}
	}
	v.modelMCP(rm, m)
	a.Model = m
	v.blockEnv(ra, a, "model", m.Env(), m.APIKeyEnv)
}

// Env returns the variables that carry m to the model agent (see
// plugins/model's README).
func (m *Model) Env() map[string]string {
	env := map[string]string{
		"HEARTH_MODEL_PROVIDER":    m.Provider,
		"HEARTH_MODEL_NAME":        m.Model,
		"HEARTH_MODEL_API_KEY_ENV": m.APIKeyEnv,
	}
	set := func(k, v string) {
		if v != "" {
			env[k] = v
		}
	}
	price := func(k string, p float64) {
		if p != 0 {
			env[k] = strconv.FormatFloat(p, 'g', -1, 64)
		}
	}
	count := func(k string, n int) {
		if n != 0 {
			env[k] = strconv.Itoa(n)
		}
	}
	set("HEARTH_MODEL_BASE_URL", m.BaseURL)
	set("HEARTH_MODEL_SYSTEM_PROMPT", m.SystemPrompt)
	set("HEARTH_MODEL_MCP", m.mcpEnv())
	if m.Tools != nil {
		env["HEARTH_MODEL_TOOLS"] = strings.Join(m.Tools, ",")
	}
	price("HEARTH_MODEL_PRICE_INPUT", m.Prices.Input)
	price("HEARTH_MODEL_PRICE_CACHED_INPUT", m.Prices.CachedInput)
	price("HEARTH_MODEL_PRICE_CACHE_WRITE", m.Prices.CacheWrite)
	price("HEARTH_MODEL_PRICE_OUTPUT", m.Prices.Output)
	count("HEARTH_MODEL_CONTEXT_WINDOW", m.ContextWindow)
	count("HEARTH_MODEL_MAX_OUTPUT_TOKENS", m.MaxOutputTokens)
	return env
}

// apiKey checks an agent block's api_key_env (a model block's or a
// claude_code block's): no key needs a local server, the variable is a
// name and not the key, and a variable not set where hearth runs is a
// warning, not an error: only a task that calls the model needs the
// key, and it fails saying so. how says what the block does with it
// ("reads its model's key from").
func (v *validator) apiKey(at hcl.Range, agent, env, baseURL, how string) {
	switch {
	case env == "" && baseURL == "":
		v.errorf(at, "No API key", "api_key_env = \"\" means no key, which only a local server accepts; set base_url to it, or name the variable that holds the key.")
	case strings.ContainsAny(env, "= "):
		v.errorf(at, "Invalid api_key_env", "api_key_env names the environment variable that holds the key, such as \"ANTHROPIC_API_KEY\"; the key itself never goes in the config.")
	case env != "":
		getenv := v.opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if getenv(env) == "" {
			v.warnf(at, "API key not set", "Agent %q %s %s, which is not set in hearth's environment: its tasks will fail until it is. Export it where hearth runs (export %s=...), or point base_url at a local server with api_key_env = \"\".", agent, how, env, env)
		}
	}
}
