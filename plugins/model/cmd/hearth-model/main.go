// Command hearth-model serves the model agent as a standalone plugin
// binary, for hosts that run it by path instead of as a bundled agent. Its
// settings come from the environment (see the agent's README):
//
//	agent "ask" {
//	  command = ["./hearth-model"]
//	  model {
//	    provider    = "anthropic"
//	    model       = "claude-sonnet-4-5"
//	    api_key_env = "ANTHROPIC_API_KEY"
//	  }
//	}
package main

import (
	"github.com/hearth-dev/hearth/plugins/model"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

func main() {
	plugin.Serve(model.NewFromEnv())
}
