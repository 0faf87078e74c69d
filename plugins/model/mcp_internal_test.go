package model

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestInputPaths: what the fingerprint learns from an MCP call's input:
// the common path fields and the server's own, strings or lists, file://
// URIs at any depth, paths inside the root made relative.
func TestInputPaths(t *testing.T) {
	for _, tc := range []struct {
		in     string
		fields []string
		want   []string
	}{
		{`{"path":"/w/pkg/a.go"}`, nil, []string{"pkg/a.go"}},
		{`{"paths":["/w/a.go","/elsewhere/b.go"]}`, nil, []string{"a.go", "/elsewhere/b.go"}},
		{`{"source":"/w/x","destination":"/w/y"}`, nil, []string{"x", "y"}},
		{`{"target":"/w/t.go"}`, nil, nil},
		{`{"target":"/w/t.go"}`, []string{"target"}, []string{"t.go"}},
		{`{"opts":{"deep":[{"u":"file:///w/deep.go"}]}}`, nil, []string{"deep.go"}},
		{`{"uri":"file:///w/a%20b.go"}`, nil, []string{"a b.go"}},
		{`{"path":"/w/../etc/passwd"}`, nil, []string{"/w/../etc/passwd"}},
		{`not json`, nil, nil},
	} {
		got := inputPaths(json.RawMessage(tc.in), tc.fields, "/w")
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s with fields %q: got %q, want %q", tc.in, tc.fields, got, tc.want)
		}
	}
}

// FuzzInputPaths: any input the model sends is read without a panic,
// and every path it yields came from it.
func FuzzInputPaths(f *testing.F) {
	for _, s := range []string{`{"path":"/w/a"}`, `{"paths":["a",1,null]}`, `{"x":{"y":"file:///w/z"}}`, `[]`, `{"uri":"file:"}`, `{"path":` + `"` + "\x00" + `"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, p := range inputPaths(json.RawMessage(in), []string{"target"}, "/w") {
			if p == "" {
				t.Errorf("%q: an empty path", in)
			}
		}
	})
}
