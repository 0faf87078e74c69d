package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// shBlock is a fenced shell block.
var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// TestGotourReadme runs the questions plugins/gotour/README.md shows, in
// order, on one data directory: each answers, and the second and third
// go to the session the first one started, as the README says.
func TestGotourReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../plugins/gotour/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, m := range shBlock.FindAllStringSubmatch(string(readme), -1) {
		for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			args, ok := shellWords(line)
			if !ok || len(args) == 0 || args[0] != "hearth" {
				t.Fatalf("README line %q is not a hearth command this test can run", line)
			}
			cmds = append(cmds, args[1:])
		}
	}
	if len(cmds) != 4 {
		t.Fatalf("the README shows %d commands, want the 4 questions", len(cmds))
	}
	env := exampleEnv(t)
	for i, args := range cmds {
		code, out, stderr := run(t, env, append(args, "--json")...)
		if code != 0 {
			t.Fatalf("hearth %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
		// Without a daemon each submit is its own host: the warm session
		// comes back rehydrated from its saved state; under serve it is
		// reused as it is.
		warm := strings.Contains(out, `"action": "reused"`) || strings.Contains(out, `"action": "rehydrated"`)
		if want := i == 1 || i == 2; warm != want {
			t.Errorf("hearth %s: went to a warm session %t, want %t:\n%s", strings.Join(args, " "), warm, want, out)
		}
	}
}

// shellWords splits a line into words, with double quotes grouping; it is
// enough for the README's commands and refuses anything else.
func shellWords(line string) ([]string, bool) {
	var words []string
	for {
		line = strings.TrimLeft(line, " ")
		if line == "" {
			return words, true
		}
		if line[0] == '"' {
			end := strings.IndexByte(line[1:], '"')
			if end < 0 {
				return nil, false
			}
			words = append(words, line[1:end+1])
			line = line[end+2:]
			continue
		}
		if strings.ContainsAny(line[:1], "'$`\\|;&<>") {
			return nil, false
		}
		w, rest, _ := strings.Cut(line, " ")
		words = append(words, w)
		line = rest
	}
}
