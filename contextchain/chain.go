package contextchain

import (
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Artifact is what a finished task learned: the seed's ContextArtifact,
// keyed by the task's name in its run.
type Artifact struct {
	// Task is the source task's name in the run ("research").
	Task string
	// Title is an optional human title of the step ("Database Setup");
	// rendering falls back to Task when it is blank.
	Title         string
	SourceSession string
	CreatedAt     time.Time
	// Version counts the task's runs (1, 2, ... when a task is revisited);
	// only the newest artifact of a task is chained.
	Version int

	KeyDecisions     []string
	ModifiedFiles    []string
	NewPatterns      []string
	PotentialGotchas []string
}

// Name returns the step's title on one line, or its task name when the
// title is blank. Rendering quotes it in a one-line header, so line breaks in
// a title would break the header.
func (a Artifact) Name() string {
	if t := strings.Join(strings.Fields(a.Title), " "); t != "" {
		return t
	}
	return a.Task
}

// items counts the artifact's list entries.
func (a *Artifact) items() int {
	return len(a.KeyDecisions) + len(a.ModifiedFiles) + len(a.NewPatterns) + len(a.PotentialGotchas)
}

// Graph gives the direct dependencies of a task in a run. It is an
// interface so that the host can answer from its own run graph without
// copying it.
type Graph interface {
	Deps(task string) []string
}

// DepMap is a [Graph] held in a map from a task to its direct dependencies.
type DepMap map[string][]string

// Deps returns m[task].
func (m DepMap) Deps(task string) []string { return m[task] }

// Step is one ancestor's artifact in a [Chain].
type Step struct {
	// Artifact is the newest artifact of the ancestor with its lists
	// deduplicated (see the package doc); it shares no slices with the
	// input.
	Artifact
	// Distance is the length of the shortest dependency path from the task
	// to this ancestor: 1 for a direct dependency.
	Distance int
	// Duplicates counts the items dropped because a higher-priority step (or
	// an earlier entry of this one) already said the same.
	Duplicates int
}

// Chain is a task's ancestors' knowledge in priority order, ready to render.
type Chain struct {
	// Task is the task whose prompt is being built.
	Task string
	// Steps are the ancestors that have an artifact, in priority order
	// (distance, then newest first, then task name). A step may be empty
	// after deduplication; it is then not rendered.
	Steps []Step
	// Missing are the ancestors without an artifact, in the same visiting
	// order (distance, then task name).
	Missing []string
}

// Collect gathers the newest artifact of each ancestor of task in g, orders
// them by priority and deduplicates their items, as the package doc
// describes. It does not modify artifacts or anything g returns. A nil g
// has no edges.
func Collect(task string, g Graph, artifacts []Artifact) Chain {
	ch := Chain{Task: task}
	if g == nil {
		return ch
	}

	newest := make(map[string]int, len(artifacts))
	for i := range artifacts {
		j, ok := newest[artifacts[i].Task]
		if !ok || newer(&artifacts[i], &artifacts[j]) {
			newest[artifacts[i].Task] = i
		}
	}

	// The task itself is marked seen so that a cycle back to it neither
	// loops nor chains the task's own earlier notes into its prompt.
	seen := map[string]bool{task: true}
	level := []string{task}
	for dist := 1; len(level) > 0; dist++ {
		var next []string
		for _, t := range level {
			for _, d := range g.Deps(t) {
				if seen[d] {
					continue
				}
				seen[d] = true
				next = append(next, d)
			}
		}
		first, firstMissing := len(ch.Steps), len(ch.Missing)
		for _, d := range next {
			if i, ok := newest[d]; ok {
				ch.Steps = append(ch.Steps, Step{Artifact: artifacts[i], Distance: dist})
			} else {
				ch.Missing = append(ch.Missing, d)
			}
		}
		// Sorting per level makes the order independent of the order in
		// which the graph lists dependencies.
		slices.SortStableFunc(ch.Steps[first:], func(a, b Step) int {
			if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.Task, b.Task)
		})
		slices.Sort(ch.Missing[firstMissing:])
		level = next
	}

	dedup(ch.Steps)
	return ch
}

// newer reports whether a supersedes b as its task's artifact. Equal
// versions and times favour a, the one given later, so the result does not
// depend on anything but the input's order.
func newer(a, b *Artifact) bool {
	if a.Version != b.Version {
		return a.Version > b.Version
	}
	return a.CreatedAt.Compare(b.CreatedAt) >= 0
}

// dedup rewrites the steps' lists in place with fresh slices, keeping each
// item at its first occurrence in priority order.
func dedup(steps []Step) {
	var n [4]int
	for i := range steps {
		s := &steps[i]
		n[0] += len(s.KeyDecisions)
		n[1] += len(s.NewPatterns)
		n[2] += len(s.PotentialGotchas)
		n[3] += len(s.ModifiedFiles)
	}
	d := deduper{
		decisions: make(map[string]bool, n[0]),
		patterns:  make(map[string]bool, n[1]),
		gotchas:   make(map[string]bool, n[2]),
		files:     make(map[string]bool, n[3]),
	}
	for i := range steps {
		s := &steps[i]
		var dups [4]int
		s.KeyDecisions, dups[0] = d.text(s.KeyDecisions, d.decisions)
		s.NewPatterns, dups[1] = d.text(s.NewPatterns, d.patterns)
		s.PotentialGotchas, dups[2] = d.text(s.PotentialGotchas, d.gotchas)
		s.ModifiedFiles, dups[3] = d.paths(s.ModifiedFiles)
		s.Duplicates = dups[0] + dups[1] + dups[2] + dups[3]
	}
}

// deduper remembers the items seen so far, one set per list kind: the same
// words as a decision and as a gotcha carry different weight.
type deduper struct {
	decisions, patterns, gotchas, files map[string]bool
	scratch                             []byte // reused for keys, which only become strings when stored
}

func (d *deduper) text(in []string, seen map[string]bool) (out []string, dups int) {
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		d.scratch = appendTextKey(d.scratch[:0], v)
		if seen[string(d.scratch)] {
			dups++
			continue
		}
		seen[string(d.scratch)] = true
		out = append(out, v)
	}
	return out, dups
}

func (d *deduper) paths(in []string) (out []string, dups int) {
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		v = path.Clean(v)
		if d.files[v] {
			dups++
			continue
		}
		d.files[v] = true
		out = append(out, v)
	}
	return out, dups
}

// appendTextKey appends to b what two notes must share to count as the
// same note: agents restate things with different capitals and line
// wrapping. The key is strings.ToLower of strings.Fields(s) joined by single
// spaces, computed in one pass since it runs for every item, except that
// invalid UTF-8 bytes are kept as they are rather than all becoming U+FFFD
// and so equal.
func appendTextKey(b []byte, s string) []byte {
	start := len(b)
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c == ' ' || '\t' <= c && c <= '\r' {
				space = len(b) > start
				continue
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if space {
				b = append(b, ' ')
				space = false
			}
			b = append(b, c)
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			space = len(b) > start
			i += n
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		if r == utf8.RuneError && n == 1 {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, unicode.ToLower(r))
		}
		i += n
	}
	return b
}
