// Command hearth-workshop serves the workshop agent as a standalone plugin
// binary, for hosts that run it by path instead of as a bundled agent:
//
//	agent "writer" {
//	  command = ["./hearth-workshop"]
//	}
package main

import (
	"github.com/hearth-dev/hearth/plugins/workshop"
	"github.com/hearth-dev/hearth/sdk/plugin"
)

func main() {
	plugin.Serve(workshop.New(nil))
}
