package text

import (
	"bytes"
	"strings"
	"sync"
)

// Tail is an io.Writer that keeps the last lines written to it: a
// plugin's stderr, for the error that says why it died. It is safe for
// concurrent use.
type Tail struct {
	mu    sync.Mutex
	max   int
	lines []string
	part  []byte
}

// NewTail returns a Tail that keeps the last n lines.
func NewTail(n int) *Tail { return &Tail{max: n} }

// Write implements io.Writer: complete lines are kept, a partial one
// waits for its end.
func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, b...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		t.lines = append(t.lines, string(t.part[:i]))
		t.part = t.part[i+1:]
		if len(t.lines) > t.max {
			t.lines = t.lines[len(t.lines)-t.max:]
		}
	}
	return len(b), nil
}

// Lines returns the kept lines, oldest first.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// pythonTraceback is the first line of a Python traceback.
const pythonTraceback = "Traceback (most recent call last):"

// Last returns the last n kept lines, or, when the kept lines hold a
// Python traceback, the last traceback whole however long (up to what
// the Tail keeps): its first lines say where it started, which the last
// few would cut off.
func (t *Tail) Last(n int) []string {
	lines := t.Lines()
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == pythonTraceback {
			return lines[i:]
		}
	}
	return lines[max(0, len(lines)-n):]
}
