// Package nodetest finds what tests run under Node: node itself, and the
// npm packages pinned in testdata/package.json (the official MCP
// TypeScript SDK, whose client the tests of hearth's MCP server drive,
// and the reference filesystem server, which the model agent's tests run
// as an MCP server). .ci/run installs them with
//
//	npm ci --prefix internal/nodetest/testdata
//
// into testdata/node_modules, where Go's tools do not look. The tests'
// own Node scripts live beside them, in testdata, so that their imports
// resolve there.
package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// install is the command that installs the packages.
const install = "npm ci --prefix internal/nodetest/testdata (.ci/run does)"

// Dir is the directory of package.json, node_modules and the scripts.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Need returns node's path once node and the pinned packages are there.
// Without them it skips the test, or fails it when CI=true.
func Need(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not on the PATH", "apt-get install nodejs npm, then "+install)
	}
	for _, pkg := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/server-filesystem"} {
		if _, err := os.Stat(filepath.Join(Dir(), "node_modules", pkg, "package.json")); err != nil {
			testenv.Missing(t, fmt.Sprintf("npm package %s is not installed", pkg), install)
		}
	}
	return node
}

// Script is the path of a script in testdata.
func Script(name string) string { return filepath.Join(Dir(), name) }

// FilesystemServer is the command line that starts the reference MCP
// filesystem server on stdio, allowed into dirs.
func FilesystemServer(t testing.TB, dirs ...string) []string {
	node := Need(t)
	return append([]string{node, filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")}, dirs...)
}
