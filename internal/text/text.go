// Package text holds the small string helpers that messages and tables
// across hearth share, so that each is written once: the first line of a
// text, a prefix that keeps characters whole, placeholders for empty
// values, "did you mean" suggestions, the hint for a duration written in
// days, and Safe, which keeps strings from outside (prompts, paths,
// agents' output, errors) from driving the terminal they are printed to.
package text

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agext/levenshtein"
)

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Prefix is the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 character: cutting s[:n] can split one, and the
// broken character turns into U+FFFD, or garbage, wherever the text goes.
// Of a string that is not valid UTF-8 it drops at most 3 bytes more than
// s[:n] would, a character's longest continuation.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// OrDash is s, or "-" when it is empty: a table cell that has nothing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OrNone joins s with ", ", or says "none" when it is empty.
func OrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Closest is the closest of names to s when one is close enough (an edit
// distance under 3) to be a likely typo, and "" otherwise.
func Closest(s string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := levenshtein.Distance(s, n, nil); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// Suggest returns ` (did you mean "x"?)` for the [Closest] of names to s,
// and "" when none is close.
func Suggest(s string, names []string) string {
	if best := Closest(s, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// ShellQuote quotes s for a POSIX shell when it needs it: a command
// hearth tells someone to run must run as shown.
func ShellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '-' || r == '_') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// DaysHint is `: durations stop at hours, so write "168h"` for a
// duration written in days ("7d"), a mistake time.ParseDuration's syntax
// invites; "" for anything else. The config file's messages about a
// duration that does not parse end with it, whichever package decodes
// the block.
func DaysHint(s string) string {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "d")
	if !ok {
		return ""
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		return ""
	}
	return fmt.Sprintf(": durations stop at hours, so write %q", strconv.FormatFloat(n*24, 'f', -1, 64)+"h")
}
