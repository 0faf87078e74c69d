// Package workload measures placement precision without a host: it builds
// workloads of questions about the packages of real source trees, as a
// user of the bundled gotour agent would ask them, and simulates where a
// placer puts each question on a bounded pool of sessions.
//
// A [Workload] is a list of [Question]s, each about one package directory
// and carrying the hints a user would give (the directory, sometimes a
// file, the technology), with the files the gotour agent reads to answer
// it: every non-test .go file of the package. Three builders make them:
// [CodeTour] from hearth's own code tour (examples/code-tour, questions
// about the Go standard library), [ModuleCache] from packages of several
// modules in the Go module cache, and [Deep] from a generated tree of deep
// packages under common parents. [Workload.Interleave] shuffles the
// questions with a fixed seed.
//
// [Simulate] replays a workload on a model of the host's pool (see
// [Pool]) with one of three placers: hearth's (the matcher, and the
// host's policy around it), a new session per question, or a round-robin
// warm pool, and reports precision: the share of repeat questions (about a
// package an earlier question was about) placed on a session that had
// already worked in that package.
//
// The package imports the matcher but nothing of the host; the host's
// benchmarks can run the same workloads on real sessions.
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth/matcher"
)

// Question is one task for the gotour agent.
type Question struct {
	// Prompt is the question as the agent reads it, e.g. "summary net/http".
	Prompt string
	// Package is the directory the question is about, relative to the
	// workload's root.
	Package string
	// Hints are what the user gives with it.
	Hints matcher.Hints
}

// Workload is a list of questions about the packages of one tree.
type Workload struct {
	Name string
	// Root is the tree the packages are in, for an agent to read; empty
	// for a tree that exists only in memory (a [DeepTree] not written).
	Root string
	// Packages lists, for each package directory, the files the gotour
	// agent reads to answer a question about it, relative to Root.
	Packages  map[string][]string
	Questions []Question
}

// Interleave returns a copy of w with its questions in a random order,
// the same for the same seed.
func (w Workload) Interleave(seed uint64) Workload {
	w.Questions = slices.Clone(w.Questions)
	rng := rand.New(rand.NewPCG(seed, 0x776f726b6c6f6164))
	rng.Shuffle(len(w.Questions), func(i, j int) { w.Questions[i], w.Questions[j] = w.Questions[j], w.Questions[i] })
	return w
}

// Repeats counts the questions about a package an earlier question was
// about: those precision is measured on.
func (w Workload) Repeats() int {
	seen := map[string]bool{}
	n := 0
	for _, q := range w.Questions {
		if seen[q.Package] {
			n++
		}
		seen[q.Package] = true
	}
	return n
}

// Validate reports a question about a package the workload does not list,
// or a package without files.
func (w Workload) Validate() error {
	var errs []error
	for pkg, files := range w.Packages {
		if len(files) == 0 {
			errs = append(errs, fmt.Errorf("workload %s: package %s has no files to read; drop it or fill it", w.Name, pkg))
		}
	}
	for i, q := range w.Questions {
		if _, ok := w.Packages[q.Package]; !ok {
			errs = append(errs, fmt.Errorf("workload %s: question %d (%q) is about %s, which the workload does not list; add the package", w.Name, i+1, q.Prompt, q.Package))
		}
	}
	return errors.Join(errs...)
}

// goFiles lists the non-test .go files of the package in root/pkg, as
// slash paths relative to root, sorted: the files the gotour agent reads.
func goFiles(root, pkg string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(pkg)))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, path.Join(pkg, n))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no Go files besides tests; pick another package", filepath.Join(root, filepath.FromSlash(pkg)))
	}
	return out, nil
}
