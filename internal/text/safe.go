package text

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Safe returns s with everything a terminal would act on, rather than
// show, made visible: ESC (and with it every CSI, OSC and other escape
// sequence), the other C0 controls but newline and tab, DEL, the C1
// controls (U+0080 to U+009F, which some terminals take as CSI and
// OSC themselves), the bidirectional overrides and isolates that reorder
// what is shown (U+202A to U+202E, U+2066 to U+2069), and bytes that are
// not UTF-8. Each becomes an escape (\u001b, \u009b; \xff for a byte that
// is not UTF-8), so that what
// an agent, a prompt, a path or an error says is seen, never obeyed: it
// cannot move the cursor, retitle the window, hide text, rewrite a line
// with a carriage return, or set the clipboard (OSC 52). Inside a JSON
// string, \u001b means what the character did: --json output that
// passes through Safe stays the same JSON.
func Safe(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to do, nothing allocated
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			writeEscaped(&b, s[i:i+n], r)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether rune r, n bytes long, must not reach a
// terminal as it is.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true // not UTF-8
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func writeEscaped(b *strings.Builder, raw string, r rune) {
	if r == utf8.RuneError {
		fmt.Fprintf(b, `\x%02x`, raw[0])
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// SafeWriter passes what is written through Safe: a command's output,
// made of strings from anywhere, reaches the terminal with none of
// their control sequences live. A UTF-8 sequence split between two
// writes is held until it is whole.
type SafeWriter struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte
}

// NewSafeWriter returns a SafeWriter over w; w itself when it is one.
func NewSafeWriter(w io.Writer) *SafeWriter {
	if s, ok := w.(*SafeWriter); ok {
		return s
	}
	return &SafeWriter{w: w}
}

// Underlying is the writer SafeWriter writes to: to ask whether it is a
// terminal, or to write hearth's own escape sequences around text that
// went through Safe.
func (s *SafeWriter) Underlying() io.Writer { return s.w }

// Write writes p through Safe. It reports len(p) written when the
// underlying write succeeds, whatever the escapes added.
func (s *SafeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := p
	if len(s.pending) > 0 {
		buf = append(s.pending, p...)
		s.pending = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end.
	if cut := incompleteTail(buf); cut > 0 {
		s.pending = append([]byte(nil), buf[len(buf)-cut:]...)
		buf = buf[:len(buf)-cut]
	}
	if _, err := io.WriteString(s.w, Safe(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back, escaped: an incomplete sequence that
// never completed.
func (s *SafeWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(s.w, Safe(string(s.pending)))
	s.pending = nil
	return err
}

// incompleteTail is how many bytes at the end of b begin a UTF-8
// sequence that b does not finish; 0 when there is none.
func incompleteTail(b []byte) int {
	for n := 1; n <= 3 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a leading byte: how long its sequence is
			want := 2
			if c >= 0xe0 {
				want = 3
			}
			if c >= 0xf0 {
				want = 4
			}
			if want > n {
				return n
			}
			return 0
		}
	}
	return 0
}
