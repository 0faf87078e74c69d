package matcher

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// decodeBlock parses src as a file holding one matcher block and decodes
// it as hearth's config does.
func decodeBlock(t *testing.T, src string) (Config, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "m.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse: %v", diags)
	}
	var raw struct {
		Matcher *Block `hcl:"matcher,block"`
	}
	diags = gohcl.DecodeBody(f.Body, nil, &raw)
	c, d := raw.Matcher.Decode(nil)
	return c, append(diags, d...)
}

// TestBlockDecode: the matcher block sets what it names and leaves the
// rest at the defaults; each problem is reported at the spot it is
// about, file:line:col, with what to do.
func TestBlockDecode(t *testing.T) {
	c, diags := decodeBlock(t, "matcher {\n  threshold = 0.5\n  top_k = 3\n  weights {\n    directory = 0.40\n    tech = 0.10\n  }\n}\n")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := DefaultConfig()
	want.Threshold, want.TopK = 0.5, 3
	want.Weights.Directory, want.Weights.Tech = 0.40, 0.10
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	if c, diags := decodeBlock(t, ""); diags.HasErrors() || c.Threshold != 0.6 || c != DefaultConfig() {
		t.Errorf("no block: got %+v, %v; want the defaults", c, diags)
	}

	for _, tc := range []struct {
		name, src, at, detail string
	}{
		{"unknown weight", "matcher {\n  weights {\n    directry = 0.3\n  }\n}\n", "m.hcl:3:5", `Did you mean "directory"?`},
		{"not a number", "matcher {\n  weights {\n    file = \"a lot\"\n  }\n}\n", "m.hcl:3:13", "a number is required"},
		{"negative weight", "matcher {\n  weights {\n    file = -0.25\n    directory = 0.8\n  }\n}\n", "m.hcl:3:12", "matcher weights.file is -0.25: weights must be finite and non-negative"},
		{"weights off 1", "matcher {\n  weights {\n    directory = 0.5\n  }\n}\n", "m.hcl:2:11", "matcher weights sum to 1.20, not 1: lower some of directory=0.50"},
		{"threshold", "matcher {\n  threshold = 1.5\n}\n", "m.hcl:2:15", "matcher threshold is 1.50: set it within [0, 1]"},
		{"top_k", "matcher {\n  top_k = 0\n}\n", "m.hcl:2:11", "matcher top_k is 0: set it to 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := decodeBlock(t, tc.src)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			d := diags[0]
			at := fmt.Sprintf("%s:%d:%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
			if at != tc.at || !strings.Contains(d.Detail, tc.detail) {
				t.Errorf("got %s %q, want %s %q", at, d.Detail, tc.at, tc.detail)
			}
		})
	}
}
