package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

// explain renders a candidate's scores on one line, with "-" for factors
// that did not apply. Its total has the digits it takes to show on which
// side of threshold, its decision's, it lies (matcher.FormatScore).
func explain(c hearth.Candidate, threshold float64) string {
	parts := make([]string, 0, len(c.Factors))
	for _, f := range c.Factors {
		if f.Applied {
			parts = append(parts, fmt.Sprintf("%s %.2f", matcher.Label(f.Name), f.Score))
		} else {
			parts = append(parts, matcher.Label(f.Name)+" -")
		}
	}
	total, _ := matcher.FormatScore(c.Total, threshold)
	s := fmt.Sprintf("%s %s = %s", c.Session, total, strings.Join(parts, " "))
	if c.Dormant {
		s += " (dormant)"
	}
	if !c.Eligible {
		s += fmt.Sprintf(" (busy %d/%d)", c.Load, c.Capacity)
	}
	return s
}

// shortPath is p for display: relative to the current directory when it
// is below it ("examples/podcast/.hearth", "./.hearth"), else as it is.
func shortPath(p string) string {
	cwd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(cwd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	if !strings.Contains(rel, "/") {
		return "./" + rel
	}
	return rel
}
