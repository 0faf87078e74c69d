// Command hearth-gotour serves the gotour agent as a standalone plugin
// binary, for hosts that run it by path instead of as a bundled agent:
//
//	agent "gotour" {
//	  command = ["./hearth-gotour"]
//	}
package main

import (
	"github.com/hearth-dev/hearth/plugins/gotour"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

func main() {
	plugin.Serve(gotour.New(""))
}
