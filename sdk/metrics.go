package sdk

// The Result.Metrics keys a host reads a task's model usage from: its
// /metrics count tokens by agent, model and outcome with them, the
// dashboard sums them per run, and the task's span carries them as the
// OpenTelemetry GenAI conventions' usage attributes. An agent that calls
// a model reports them; the bundled model agent does (plugins/model).
const (
	// MetricInputTokens: input tokens billed at the full price, cache
	// writes included.
	MetricInputTokens = "input_tokens"
	// MetricCachedInputTokens: input tokens read from the provider's
	// prompt cache.
	MetricCachedInputTokens = "cached_input_tokens"
	// MetricCacheWriteTokens: input tokens written to the cache (counted
	// in MetricInputTokens too).
	MetricCacheWriteTokens = "cache_write_tokens"
	// MetricOutputTokens: output tokens.
	MetricOutputTokens = "output_tokens"
)
