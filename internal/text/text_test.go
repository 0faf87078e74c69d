package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHelpers(t *testing.T) {
	if got := FirstLine("a\nb"); got != "a" {
		t.Errorf("FirstLine: got %q", got)
	}
	if got := OrDash(""); got != "-" {
		t.Errorf("OrDash: got %q", got)
	}
	if got := OrNone(nil); got != "none" {
		t.Errorf("OrNone(nil): got %q", got)
	}
	if got := OrNone([]string{"a", "b"}); got != "a, b" {
		t.Errorf("OrNone: got %q", got)
	}
	if got := Suggest("agnet", []string{"agent", "pipeline"}); got != ` (did you mean "agent"?)` {
		t.Errorf("Suggest: got %q", got)
	}
	if got := Suggest("zzzzzz", []string{"agent"}); got != "" {
		t.Errorf("Suggest of nothing close: got %q", got)
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"日本", 1, ""},
		{"日本", 2, ""},
		{"日本", 4, "日"},
		{"x🙂", 4, "x"},
		{"x🙂y", 5, "x🙂"},
		// Not UTF-8: no character to keep whole, so s[:n].
		{"\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80"},
	} {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// FuzzPrefix: the prefix is one of s, at most n bytes; of valid UTF-8 it
// is valid, and the longest that is.
func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"abc", "aé", "日本語", "x🙂🙂", "\xe6\x97", "\x80\x80\x80\x80\x80", ""} {
		for n := range 6 {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		p := Prefix(s, n)
		if !strings.HasPrefix(s, p) || len(p) > max(n, 0) {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix of at most %d bytes", s, n, p, n)
		}
		if !utf8.ValidString(s) {
			if n > 0 && len(p) < min(n, len(s))-(utf8.UTFMax-1) {
				t.Fatalf("Prefix(%q, %d) = %q dropped more than a character's continuation", s, n, p)
			}
			return
		}
		if !utf8.ValidString(p) {
			t.Fatalf("Prefix(%q, %d) = %q: not valid UTF-8", s, n, p)
		}
		if len(p) < len(s) {
			if _, size := utf8.DecodeRuneInString(s[len(p):]); len(p)+size <= n {
				t.Fatalf("Prefix(%q, %d) = %q: the next character fits too", s, n, p)
			}
		}
	})
}
