package claude

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Claude Code's headless output (--output-format stream-json --verbose)
// is one JSON object a line. The lines the agent reads:
//
//	{"type":"system","subtype":"init","session_id":...,"claude_code_version":...}
//	{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,
//	 "retry_delay_ms":538,"error_status":429,"error":"rate_limit"}
//	{"type":"assistant","message":{"id":...,"content":[text|tool_use|thinking...],"usage":{...}}}
//	{"type":"user","message":{"content":[{"type":"tool_result",...}]}}
//	{"type":"result","subtype":"success"|"error_max_turns"|"error_during_execution",
//	 "is_error":false,"result":"...","num_turns":4,"total_cost_usd":0.09,
//	 "usage":{...},"model_usage_since_last_result":{MODEL:{"costUSD":...}},
//	 "api_error_status":null,"errors":[...],"permission_denials":[...]}
//
// Other lines (hook_started, hook_response, stream events, lines a newer
// Claude Code adds) are skipped: a new version must not break the agent.
// An assistant message with several content blocks may come as several
// lines with the same message id and usage; usage is the result's, once.

// MaxLine bounds one line of Claude Code's output: an assistant message
// that writes a large file carries the whole file.
const MaxLine = 32 << 20

// line is one line of the stream, with the fields the agent reads.
type line struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	// system/init
	SessionID string `json:"session_id"`
	Version   string `json:"claude_code_version"`
	Model     string `json:"model"`

	// system/api_retry
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	RetryDelay  int64  `json:"retry_delay_ms"`
	ErrorStatus *int   `json:"error_status"`
	Error       string `json:"error"`

	// assistant, user
	Message *message `json:"message"`

	// result
	IsError        bool                  `json:"is_error"`
	Result         string                `json:"result"`
	NumTurns       int                   `json:"num_turns"`
	TotalCost      float64               `json:"total_cost_usd"`
	DurationMS     int64                 `json:"duration_ms"`
	DurationAPIMS  int64                 `json:"duration_api_ms"`
	Usage          usage                 `json:"usage"`
	ModelUsage     map[string]modelUsage `json:"model_usage_since_last_result"`
	APIErrorStatus *int                  `json:"api_error_status"`
	Errors         []string              `json:"errors"`
	Denials        []denial              `json:"permission_denials"`
}

type message struct {
	ID      string  `json:"id"`
	Content []block `json:"content"`
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	ID      string          `json:"id"`
	Input   json.RawMessage `json:"input"`
	IsError bool            `json:"is_error"`
}

type usage struct {
	Input      int64 `json:"input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	Output     int64 `json:"output_tokens"`
}

type modelUsage struct {
	CostUSD float64 `json:"costUSD"`
}

type denial struct {
	ToolName string `json:"tool_name"`
}

// parseLine reads one line of the stream. A line that is not a JSON
// object is an error saying where it broke; a line of a type the agent
// does not read is returned with its type alone.
func parseLine(b []byte) (*line, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("claude code wrote a line that is not JSON (%v): %q", err, firstLine(string(b)))
	}
	if l.Type == "" {
		return nil, fmt.Errorf("claude code wrote a line without a type: %q", firstLine(string(b)))
	}
	return &l, nil
}

// cost is what the task cost, as Claude Code priced it: the models' cost
// since the last result, or, from a Claude Code that does not say it,
// the session's total less what earlier tasks cost (before).
func (l *line) cost(before float64) float64 {
	if l.ModelUsage != nil {
		var c float64
		for _, m := range l.ModelUsage {
			c += m.CostUSD
		}
		return c
	}
	return max(0, l.TotalCost-before)
}

// describe says in a few words what an assistant message does, for the
// task's progress: the tools it calls, or the start of its text.
func (m *message) describe() string {
	var tools, text []string
	for _, b := range m.Content {
		switch b.Type {
		case "tool_use":
			tools = append(tools, b.Name+" "+toolTarget(b.Input))
		case "text":
			if t := strings.TrimSpace(b.Text); t != "" {
				text = append(text, t)
			}
		}
	}
	if len(tools) > 0 {
		return strings.TrimSpace(strings.Join(tools, ", "))
	}
	return firstLine(strings.Join(text, " "))
}

// toolTarget is the field of a tool's input that says what it works on.
func toolTarget(in json.RawMessage) string {
	var f struct {
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
		Command  string `json:"command"`
		Pattern  string `json:"pattern"`
	}
	_ = json.Unmarshal(in, &f)
	for _, s := range []string{f.FilePath, f.Command, f.Path, f.Pattern} {
		if s != "" {
			return firstLine(s)
		}
	}
	return ""
}
