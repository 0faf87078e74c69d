package guard

import (
	"errors"
	"strings"
	"testing"
)

// TestCompileErrorsSayHowToMend: every kind of mistake expr reports in its
// own terms comes with a hint in the config's: syntax, types, and each
// helper called with the wrong arguments.
func TestCompileErrorsSayHowToMend(t *testing.T) {
	cases := map[string]string{
		"tool == 'Read' &&":          "ends too soon",
		"tool = 'Read'":              "compare with ==",
		"tool == 'Read' ]":           "one expr expression",
		"paths > 3":                  "any(paths, ...)",
		"len(paths) > '3'":           "both sides of an operator need one type",
		"any(paths, glob(#))":        "glob(path, pattern)",
		"any(paths, under(#, 1, 2))": "under(path, dir)",
	}
	for name := range helperUse {
		cases[name+"()"] = "call it as " + name + "("
		if helperNamed(name) != nil {
			cases[name+"()"] = name + " takes one argument" // checkHelpers says it first
		}
	}
	cases["glob(paths, 'x')"] = "any(paths, ...)"
	for cond, want := range cases {
		_, err := Compile(Spec{Name: "g", Hook: PreToolUse, Condition: cond, Action: Deny})
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a compile error", cond, err)
			continue
		}
		if !strings.Contains(ce.Msg+"; "+ce.Hint, want) {
			t.Errorf("%s: %s; hint %q, want it to say %q", cond, ce.Msg, ce.Hint, want)
		}
	}
}
