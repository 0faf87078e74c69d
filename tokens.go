package hearth

import "github.com/hearth-dev/hearth/sdk"

// Tokens are what a task's model calls used, as its result's metrics
// report them (sdk.MetricInputTokens and the others; the model agent
// reports them), and the model that used them. The host counts them in
// /metrics by agent, model and outcome, and its spans carry them as the
// OpenTelemetry GenAI conventions' usage attributes.
type Tokens struct {
	// Model is the agent's model (its model block's), "" when the host
	// does not know it.
	Model string `json:"model,omitempty"`
	// Input is the input billed at the full price, cache writes
	// included; CachedInput the input read from the provider's cache;
	// CacheWrite the input written to it (counted in Input too).
	Input       int64 `json:"input"`
	CachedInput int64 `json:"cached_input,omitempty"`
	CacheWrite  int64 `json:"cache_write,omitempty"`
	Output      int64 `json:"output"`
}

// TokensOf reads the token metrics of a result of model's; nil when the
// metrics report none.
func TokensOf(metrics map[string]float64, model string) *Tokens {
	t := Tokens{Model: model}
	ok := false
	for _, f := range []struct {
		key string
		to  *int64
	}{
		{sdk.MetricInputTokens, &t.Input}, {sdk.MetricCachedInputTokens, &t.CachedInput},
		{sdk.MetricCacheWriteTokens, &t.CacheWrite}, {sdk.MetricOutputTokens, &t.Output},
	} {
		if v, has := metrics[f.key]; has {
			*f.to, ok = int64(v), true
		}
	}
	if !ok {
		return nil
	}
	return &t
}
