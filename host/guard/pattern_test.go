package guard

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"**/.env", ".env", true},
		{"**/.env", "/w/.env", true},
		{"**/.env", "/w/a/b/.env", true},
		{"**/.env", "/w/.env.local", false},
		{"**/.env", "/w/x.env", false},
		{"**/.env*", "/w/.env.local", true},
		{"/home/u/.ssh/**", "/home/u/.ssh", true},
		{"/home/u/.ssh/**", "/home/u/.ssh/id_rsa", true},
		{"/home/u/.ssh/**", "/home/u/.sshx", false},
		{"/home/u/.ssh/*/**", "/home/u/.ssh", false},
		{"/home/u/.ssh/*/**", "/home/u/.ssh/id_rsa", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/xb", false},
		{"*.pem", "a/b.pem", false},
		{"**/*.pem", "a/b.pem", true},
		{"a**b", "ax/yb", false},
		{"?", "/", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]x", "dx", true},
		{"[!a-c]x", "bx", false},
		{"[^a]", "/", false},
		{"{a,b/**}", "b/c/d", true},
		{"x/{**/a,b}", "x/y/z/a", true},
		{"x/{y,{z,w}}", "x/w", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"}", "}", true},
		{"", "", true},
		{"**", "/any/thing", true},
		{"/**", "/", true},
		{"**/.ssh/id_*", "/home/u/.ssh/id_rsa", true},
		{"**/.ssh/id_*", "/home/u/.ssh/id_rsa.pub", true},
		{"**/.ssh/id_*", "/home/u/.ssh/known_hosts", false},
		// Patterns matched on the last segment alone.
		{"**/.env*", "/w/.env.production", true},
		{"**/.env*", "/w/.env/x", false},
		{"**/.env*", "/.env", true},
		{"**/{.env,*.pem}", "/w/a/key.pem", true},
		{"**/{.env,*.pem}", "/w/key.pem/a", false},
		{"**/[!.]*", "/w/.a/b", true},
		{"**/[!.]*", "/w/b/.a", false},
		{"**/", "/", true},
	}
	for _, tt := range tests {
		p, err := compilePattern(tt.pattern, false)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := p.match(tt.path); got != tt.want {
			t.Errorf("match(%q, %q): got %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, tt := range []struct{ pattern, want string }{
		{"[a", "a [ is not closed by a ] (at byte 0)"},
		{"x{a,b", "a { is not closed by a } (at byte 1)"},
		{`a\`, `it ends in a lone \ (at byte 1)`},
		{"[z-a]", "the range z-a runs backwards"},
		{strings.Repeat("a", maxPattern+1), "more than the 4096"},
	} {
		_, err := compilePattern(tt.pattern, false)
		if !errors.Is(err, ErrPattern) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.20q: got %v, want an ErrPattern saying %q", tt.pattern, err, tt.want)
		}
	}
}

func TestPatternFold(t *testing.T) {
	p, _ := compilePattern("**/.ENV", true)
	if !p.match(foldCase("/W/.env")) || !p.match(foldCase("/w/.Env")) {
		t.Error("folded pattern does not match folded paths")
	}
	p, _ = compilePattern("**/.env", false)
	if p.match("/w/.ENV") {
		t.Error("a case-sensitive pattern matched another case")
	}
}

// TestOverlap: whether some path matches both patterns, the question a
// search below a directory with its own filter puts to a guard.
func TestOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"**/.env", "/w/**", true},
		{"**/.env", "/w/**/*.go", false},
		{"**/.env", "/w/**/.e*", true},
		{"**/.env", "/w/*", true},
		{"**/.ssh/id_*", "/home/u/**/id_*", true},
		{"**/.ssh/id_*", "/home/u/**/*.pub", true},
		{"**/.ssh/id_*", "/home/u/.ssh/*.txt", true},
		{"**/.ssh/id_*", "/home/u/.ssh/known_*", false},
		{"/home/u/.ssh/**", "/home/u/*", true},
		{"/home/u/.ssh/*/**", "/home/u/*", false},
		{"/home/u/.ssh/*/**", "/home/u/.ssh/*", true},
		{"/home/u/.ssh/**", "/w/**", false},
		{"/home/u/.ssh/**", "/home/**/*.go", true},
		{"[a-c]", "[b-d]", true},
		{"[a-c]", "[d-f]", false},
		{"[!a]", "[a]", false},
		{"[!a]", "[ab]", true},
		{"[!a]", "[!b]", true},
		{"?", "/", false},
		{"a{b,c}d", "acd", true},
		{"/x/**", "/y/**", false},
	}
	for _, tt := range tests {
		a, err := compilePattern(tt.a, false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := compilePattern(tt.b, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := overlap(a, b); got != tt.want {
			t.Errorf("overlap(%q, %q): got %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := overlap(b, a); got != tt.want {
			t.Errorf("overlap(%q, %q): got %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

// FuzzPattern checks the pattern engine against doublestar, which glob()
// used before it: every path doublestar matches, ours matches too (a
// guard written for doublestar fires at least as often), and a path
// overlaps a pattern exactly when it matches it.
func FuzzPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"**/.env", "/w/.env"}, {"a/**", "a"}, {"a/**/b", "a/x/b"}, {"*.{go,s}", "x.s"},
		{"[a-z]?/**", "b/c/d"}, {"**/.ssh/id_*", "/home/u/.ssh/id_rsa"}, {`\**`, "*x"}, {"{a,**/b}/c", "x/b/c"},
		{"**/.env*", "/w/.env/x"}, {"**/{.env,*.pem}", "a/b.pem"}, {"**/[!.]*", "/w/.a/b"}, {"**/", "/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		if !utf8.ValidString(pat) || !utf8.ValidString(name) || len(pat) > 64 || len(name) > 64 {
			return
		}
		// Guards see clean paths only; doublestar has quirks on others
		// ("/**/" matches "").
		clean := name != "" && path.Clean(name) == name
		p, err := compilePattern(pat, false)
		if err != nil {
			if !errors.Is(err, ErrPattern) {
				t.Fatalf("error %v does not wrap ErrPattern", err)
			}
			return
		}
		got := p.match(name)
		if want, err := doublestar.Match(pat, name); clean && err == nil && want && !got && !strings.ContainsAny(pat, "[") {
			t.Fatalf("doublestar matches %q with %q, we do not", name, pat)
		}
		if lit := compileLiteral(name, false); overlap(p, lit) != got {
			t.Fatalf("overlap(%q, literal %q) = %v, match = %v", pat, name, !got, got)
		}
		if p.segment != nil {
			// The last-segment shortcut answers as the automaton does.
			whole := *p
			whole.segment = nil
			if whole.match(name) != got {
				t.Fatalf("match(%q, %q) = %v on the last segment, %v on the whole path", pat, name, got, !got)
			}
		}
	})
}

func BenchmarkPatternMatch(b *testing.B) {
	p, _ := compilePattern("**/.ssh/id_*", false)
	for i := 0; i < b.N; i++ {
		if !p.match("/home/someone/.ssh/id_ed25519") {
			b.Fatal("no match")
		}
	}
}

func TestPlain(t *testing.T) {
	for _, tt := range []struct {
		p          string
		fold, want bool
	}{
		{"", true, true}, {"/", true, true}, {".", true, true},
		{"/w/services/.env", true, true}, {"a/b", true, true},
		{"/w/.Env", true, false}, {"/w/.Env", false, true}, {"/w/é", true, false},
		{"/w/", true, false}, {"//w", true, false}, {"/w//x", true, false},
		{"/w/./x", true, false}, {"./x", true, false}, {"/w/..", true, false},
		{"../x", true, false}, {"/w/..x", true, true}, {"/w/.x.", true, true},
	} {
		if got := plain(tt.p, tt.fold); got != tt.want {
			t.Errorf("plain(%q, fold %v) = %v, want %v", tt.p, tt.fold, got, tt.want)
		}
	}
}

// FuzzPlain: a path plain says needs no work is the same cleaned and,
// under fold, folded.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{"", "/", ".", "/w/.env", "a//b", "/a/./b", "/a/../b", "../a", "/A/b", "/é/x", "a/"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, p string, fold bool) {
		if !plain(p, fold) {
			return
		}
		if c := cleanPath(p); c != p {
			t.Fatalf("plain(%q) but it cleans to %q", p, c)
		}
		if fold && foldCase(p) != p {
			t.Fatalf("plain(%q) under fold but it folds to %q", p, foldCase(p))
		}
	})
}
