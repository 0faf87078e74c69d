package text

import (
	"fmt"
	"slices"
	"testing"
)

func TestTail(t *testing.T) {
	tl := NewTail(5)
	for i := range 8 {
		fmt.Fprintf(tl, "line %d\n", i)
	}
	fmt.Fprint(tl, "partial")
	if got := tl.Lines(); !slices.Equal(got, []string{"line 3", "line 4", "line 5", "line 6", "line 7"}) {
		t.Errorf("Lines: %q", got)
	}
	if got := tl.Last(2); !slices.Equal(got, []string{"line 6", "line 7"}) {
		t.Errorf("Last(2): %q", got)
	}

	// A Python traceback comes whole, however few lines were asked for.
	py := NewTail(100)
	fmt.Fprint(py, "starting\nTraceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    f()\nNameError: name 'f' is not defined\n")
	want := []string{"Traceback (most recent call last):", `  File "a.py", line 1, in <module>`, "    f()", "NameError: name 'f' is not defined"}
	if got := py.Last(2); !slices.Equal(got, want) {
		t.Errorf("Last(2) of a traceback: %q, want %q", got, want)
	}
}
