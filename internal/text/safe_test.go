package text

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSafe(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "src/cart/cart.go: done\n\tok", "src/cart/cart.go: done\n\tok"},
		{"unicode", "café ☕ 日本", "café ☕ 日本"},
		{"CSI: clear the screen", "\x1b[2J\x1b[Hhello", `\u001b[2J\u001b[Hhello`},
		{"OSC: retitle the window", "\x1b]0;pwned\x07", `\u001b]0;pwned\u0007`},
		{"OSC 52: set the clipboard", "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\", `\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u001b\`},
		{"carriage return rewrites the line", "rm -rf /\rls -l   ", `rm -rf /\u000dls -l   `},
		{"backspace", "safe\b\b\b\bevil", `safe\u0008\u0008\u0008\u0008evil`},
		{"C1 CSI", "\u009b31mred", `\u009b31mred`},
		{"C1 OSC", "\u009d0;title\u009c", `\u009d0;title\u009c`},
		{"a raw C1 byte", "a\x9bb", `a\x9bb`},
		{"bidi override", "file\u202egpj.exe", `file\u202egpj.exe`},
		{"DEL and NUL", "a\x7fb\x00c", `a\u007fb\u0000c`},
	} {
		if got := Safe(tc.in); got != tc.want {
			t.Errorf("%s: Safe(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestSafeWriterSplitsNothing: a character split between two writes
// comes out whole, and a C1 control split that way is still caught.
// TestSafeKeepsJSON: JSON that passes through Safe is the same JSON.
func TestSafeKeepsJSON(t *testing.T) {
	in := map[string]string{"output": "\x1b]0;pwned\x07 \u009b2J \x7f \u202e"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(Safe(string(b))), &out); err != nil || out["output"] != in["output"] {
		t.Errorf("got %q, %v; want %q", out, err, in)
	}
}

func TestSafeWriterSplitsNothing(t *testing.T) {
	var b bytes.Buffer
	w := NewSafeWriter(&b)
	in := "é\u009b☕"
	for i := 0; i < len(in); i++ {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `é\u009b☕`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if NewSafeWriter(w) != w {
		t.Error("a SafeWriter was wrapped twice")
	}
}

// FuzzSafe: whatever goes in, nothing a terminal acts on comes out, the
// result is Safe's fixed point, and a SafeWriter fed the input in pieces
// writes what Safe does.
func FuzzSafe(f *testing.F) {
	for _, s := range []string{"\x1b[31mred\x1b[0m", "\u009b2J", "\xc2", "\xe2\x80", "ok\n\t", "\u202e", "\xff\xfe"} {
		f.Add(s, uint8(1))
	}
	f.Fuzz(func(t *testing.T, s string, step uint8) {
		out := Safe(s)
		for i, r := range out {
			if r == utf8.RuneError || r == 0x1b || r == '\r' || (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) ||
				(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("Safe(%q) = %q has %U at %d", s, out, r, i)
			}
		}
		if Safe(out) != out {
			t.Fatalf("Safe is not its own fixed point on %q", s)
		}
		var b bytes.Buffer
		w := NewSafeWriter(&b)
		n := int(step%7) + 1
		for i := 0; i < len(s); i += n {
			w.Write([]byte(s[i:min(i+n, len(s))]))
		}
		w.Flush()
		// Pieces may cut an invalid sequence differently; on valid
		// UTF-8 they must agree exactly.
		if utf8.ValidString(s) && b.String() != out {
			t.Fatalf("SafeWriter in pieces of %d wrote %q; Safe gives %q", n, b.String(), out)
		}
		if !utf8.ValidString(s) && strings.ContainsRune(b.String(), 0x1b) {
			t.Fatalf("SafeWriter let ESC through: %q", b.String())
		}
	})
}
