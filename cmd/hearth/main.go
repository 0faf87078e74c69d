// Command hearth is the hearth host's command line: it runs agents as
// plugins, places tasks on warm sessions, and shows what it did.
//
// This package only wires: flags, signals and output. The words it speaks
// are package hearth's; the work happens in host/engine, in-process or
// behind a daemon.
package main

import (
	"context"
	"os"

	"github.com/hearth-dev/hearth/plugins"
)

func main() {
	// A re-executed hearth serving a bundled agent never reaches the CLI.
	plugins.ServeIfRequested()
	m := NewMain()
	os.Exit(m.Run(context.Background(), os.Args[1:]))
}
