package model

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOneLineKeepsCharactersWhole: a cut that falls inside a multi-byte
// character drops the whole character; what is kept is valid UTF-8 (the
// summary and the artifact go to a model and a store as JSON, where a
// broken character becomes U+FFFD), at most n bytes before the "...".
func TestOneLineKeepsCharactersWhole(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"ascii", "abcdef", 4, "abcd..."},
		{"fits", "héllo", 6, "héllo"},
		{"folded", "a\n\tb   c", 10, "a b c"},
		{"two bytes, cut inside", "aé", 2, "a..."},
		{"two bytes, cut after", "aéb", 3, "aé..."},
		{"three bytes, cut after one", "日本語", 4, "日..."},
		{"three bytes, cut after two", "日本語", 5, "日..."},
		{"three bytes, on the boundary", "日本語", 6, "日本..."},
		{"four bytes", "x🙂🙂", 4, "x..."},
		{"four bytes, cut after three", "x🙂🙂", 8, "x🙂..."},
		{"nothing fits", "日本", 2, "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := oneLine(tc.in, tc.n)
			if got != tc.want {
				t.Errorf("oneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("oneLine(%q, %d) = %q: not valid UTF-8", tc.in, tc.n, got)
			}
			if kept := strings.TrimSuffix(got, "..."); len(kept) > tc.n {
				t.Errorf("oneLine(%q, %d) kept %d bytes, more than %d", tc.in, tc.n, len(kept), tc.n)
			}
		})
	}
}
