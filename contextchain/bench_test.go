package contextchain

import (
	"fmt"
	"testing"
)

// benchChain is a run of 51 tasks in which the last depends on the 50
// before it, directly or transitively (each task depends on the one or two
// before it), each with 10 items of sentence length.
func benchChain() (string, DepMap, []Artifact) {
	const n = 50
	g := DepMap{}
	var arts []Artifact
	for i := range n {
		name := fmt.Sprintf("task-%02d", i)
		if i > 0 {
			g[name] = append(g[name], fmt.Sprintf("task-%02d", i-1))
		}
		if i > 1 {
			g[name] = append(g[name], fmt.Sprintf("task-%02d", i-2))
		}
		s := func(what string, j int) string {
			return fmt.Sprintf("%s %d of %s, a sentence about as long as agents write them.", what, j, name)
		}
		arts = append(arts, Artifact{
			Task: name, Title: "Step " + name, CreatedAt: at(i), Version: 1,
			KeyDecisions:     []string{s("Decision", 1), s("Decision", 2), s("Decision", 3)},
			ModifiedFiles:    []string{fmt.Sprintf("src/%s/a.go", name), fmt.Sprintf("src/%s/b.go", name), "go.mod"},
			NewPatterns:      []string{s("Pattern", 1), s("Pattern", 2)},
			PotentialGotchas: []string{s("Gotcha", 1), s("Gotcha", 2)},
		})
	}
	g["final"] = []string{fmt.Sprintf("task-%02d", n-1), fmt.Sprintf("task-%02d", n-2)}
	return "final", g, arts
}

func BenchmarkCollect(b *testing.B) {
	task, g, arts := benchChain()
	b.ReportAllocs()
	for b.Loop() {
		Collect(task, g, arts)
	}
}

func BenchmarkBuild(b *testing.B) {
	task, g, arts := benchChain()
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"layout/budget=4096", nil},
		{"layout/unlimited", []Option{WithBudget(0)}},
		{"template/budget=4096", []Option{WithTemplate(DefaultTemplate)}},
		{"template/unlimited", []Option{WithTemplate(DefaultTemplate), WithBudget(0)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := mustNew(b, bc.opts...)
			res, err := r.Build(task, g, arts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Build(task, g, arts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(res.Block)), "block-bytes")
		})
	}
}
