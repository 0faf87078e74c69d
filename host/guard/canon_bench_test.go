package guard

import (
	"encoding/json"
	"testing"
)

// BenchmarkCanonicalSplit splits BenchmarkCanonicalEval in its two
// costs: "call" is what a tool call costs once, whatever the number of
// rules (its input read, its path made absolute, clean, folded and
// resolved through symbolic links from the resolver's cache); "rule" is
// what each rule then costs on the canonical paths (the five-clause rule,
// its glob matching both the path as given and where it leads).
func BenchmarkCanonicalSplit(b *testing.B) {
	root, res := benchTree(b)
	rule, err := CompileWith(Spec{Name: "five", Hook: PreToolUse, Condition: fiveClauses}, res)
	if err != nil {
		b.Fatal(err)
	}
	set := NewSet([]*Rule{rule})
	call := Call{Tool: "Read", RawInput: json.RawMessage(`{"file_path":"services/billing/config/.env.production"}`), Cwd: root}
	b.Run("call", func(b *testing.B) {
		measure(b, func() bool { return len(set.ToolUse(call).Paths) == 1 })
	})
	b.Run("rule", func(b *testing.B) {
		env := set.ToolUse(call)
		env.Task, env.Session = Task{Agent: "coder"}, Session{ToolUses: 10}
		measure(b, func() bool { return set.First(PreToolUse, Match{}, env) != nil })
	})
}
