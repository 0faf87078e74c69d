package hclspot

import (
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/json"
)

func TestSpots(t *testing.T) {
	src := "b {\n  name = \"x\"\n  list = [\"a\",  \"bc\"]\n  one  = \"z\"\n}\n"
	f, diags := hclsyntax.ParseConfig([]byte(src), "s.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body := f.Body.(*hclsyntax.Body).Blocks[0].Body
	fallback := hcl.Range{Filename: "fallback"}
	at := func(r hcl.Range) string { return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column) }
	for _, tc := range []struct {
		got  hcl.Range
		want string
	}{
		{Attr(body, "name", fallback), "s.hcl:2:10"},
		{Attr(body, "absent", fallback), "fallback:0:0"},
		{Elem(body, "list", 1, fallback), "s.hcl:3:17"},
		{Elem(body, "list", 2, fallback), "s.hcl:3:10"}, // no such element: the whole list
		{Elem(body, "one", 0, fallback), "s.hcl:4:10"},  // not a list: the value
		{Elem(body, "absent", 0, fallback), "fallback:0:0"},
		{Block(body, fallback), "s.hcl:1:3"},
	} {
		if got := at(tc.got); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}

	// A JSON file's body has no native ranges: every spot is the fallback.
	jf, diags := json.Parse([]byte(`{"name": "x", "list": ["a"]}`), "s.json")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, r := range []hcl.Range{Attr(jf.Body, "name", fallback), Elem(jf.Body, "list", 0, fallback), Block(jf.Body, fallback)} {
		if r != fallback {
			t.Errorf("JSON body: got %s, want the fallback", at(r))
		}
	}
}
