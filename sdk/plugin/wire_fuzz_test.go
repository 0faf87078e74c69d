package plugin

import (
	"testing"

	"github.com/hearth-dev/hearth/sdk/internal/agentpb"
)

// FuzzToolCallFromWire feeds the host's decoding of a plugin's pre-tool-use
// question arbitrary input JSON: an error or a call, never a panic, and a
// call that decodes survives the trip back to the wire.
func FuzzToolCallFromWire(f *testing.F) {
	f.Add("Read", []byte(`{"file_path":"src/a.go"}`))
	f.Add("Bash", []byte(`{"command":"rm -rf /","timeout":5,"nested":{"a":[1,2,{"b":null}]}}`))
	f.Add("", []byte(`[]`))
	f.Add("x", []byte(`{"a":`))
	f.Add("x", []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, tool string, input []byte) {
		c, err := toolCallFromWire(&agentpb.ToolCall{Tool: tool, InputJson: input})
		if err != nil {
			return
		}
		if err := c.DecodeInput(); err != nil {
			return
		}
		if _, err := toolCallToWire("t", c); err != nil {
			t.Fatalf("a decoded call does not encode again: %v", err)
		}
	})
}
