package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientLinksNoEngine holds the promise of the restructure: an
// orchestrator that only talks to a daemon links none of the engine's
// heavy dependencies (Badger, go-plugin, expr, HCL).
func TestClientLinksNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, heavy := range []string{"github.com/dgraph-io/badger", "github.com/hashicorp/go-plugin", "github.com/expr-lang/expr", "github.com/hashicorp/hcl"} {
			if strings.HasPrefix(dep, heavy) {
				t.Errorf("the client links %s", dep)
			}
		}
	}
}
