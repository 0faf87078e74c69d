package fakeapi

import (
	"slices"
	"testing"
)

// TestClaudeVocabularyRoundTrip: every call the model makes, said in
// Claude Code's words, reads back as the same call: what the model
// decides from (the conversation's tool uses) is what it said.
func TestClaudeVocabularyRoundTrip(t *testing.T) {
	v := vocabularyOf([]string{"Read", "Write", "Bash"}, []byte(`"text":"- Primary working directory: /w/repo\n"`))
	if !v.claude || v.cwd != "/w/repo" {
		t.Fatalf("vocabulary %+v, want Claude Code's in /w/repo", v)
	}
	for _, c := range []call{
		{"read", map[string]any{"path": "cart/cart.go"}},
		{"write", map[string]any{"path": "NOTES.md", "content": "it's done"}},
		{"list", map[string]any{"path": "cart dir"}},
		{"search", map[string]any{"path": "src", "pattern": "func .*Total's"}},
		{"shell", map[string]any{"command": "go test ./..."}},
	} {
		e := v.encode(c)
		name, in, ok := v.decode(e.name, e.input)
		if !ok || name != c.name || key(name, in) != key(c.name, c.input) {
			t.Errorf("%v said as %v reads back as %s %v", c, e, name, in)
		}
	}
	if v.aside("hello") || !v.aside("  <system-reminder>\nx</system-reminder>") {
		t.Error("system reminders are asides, prompts are not")
	}
}

func TestShellWords(t *testing.T) {
	for _, words := range [][]string{{"a"}, {"it's", "two words"}, {"", "x"}, {"'", `\`}} {
		var line string
		for i, w := range words {
			if i > 0 {
				line += " "
			}
			line += shellQuote(w)
		}
		if got := shellWords(line); !slices.Equal(got, words) {
			t.Errorf("%q split as %q, want %q", line, got, words)
		}
	}
}
