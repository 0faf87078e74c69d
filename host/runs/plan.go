package runs

import (
	"maps"
	"slices"
	"sort"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/contextchain"
)

// plan is a run's pipeline as the schedule walks it: its tasks by name
// and index, each task's dependencies and dependents, and the settings a
// decision reads (attempts, on_failure, stages). It is made once from the
// run's graph and never changes; its methods answer from it alone.
type plan struct {
	id     string
	pipe   *hearth.Pipeline
	config string
	index  map[string]int
	deps   [][]int
	kids   [][]int
	depMap contextchain.DepMap
	// stages: some task of the pipeline has a stage.
	stages bool
}

// newPlan makes the plan of run id from its graph.
func newPlan(id string, pipe *hearth.Pipeline, config string) *plan {
	p := &plan{id: id, pipe: pipe, config: config,
		index: make(map[string]int, len(pipe.Tasks)), depMap: make(contextchain.DepMap, len(pipe.Tasks))}
	for i, t := range pipe.Tasks {
		p.index[t.Name] = i
		p.depMap[t.Name] = t.DependsOn
		if t.Stage != "" {
			p.stages = true
		}
	}
	p.deps = make([][]int, len(pipe.Tasks))
	p.kids = make([][]int, len(pipe.Tasks))
	for i, t := range pipe.Tasks {
		for _, d := range t.DependsOn {
			j := p.index[d]
			p.deps[i] = append(p.deps[i], j)
			p.kids[j] = append(p.kids[j], i)
		}
	}
	return p
}

// Stage is task i's stage, "" when the pipeline has none.
func (p *plan) Stage(i int) string { return p.pipe.Tasks[i].Stage }

// onFailure is what a failure for good of task i (-1: of none) does to
// the run: the task's on_failure, else the pipeline's.
func (p *plan) onFailure(i int) hearth.OnFailure {
	if i >= 0 {
		if f := p.pipe.Tasks[i].OnFailure; f != "" {
			return f
		}
	}
	return p.pipe.OnFailure
}

// maxAttempts is how many failed attempts task i may have: the task's
// attempts, else the pipeline's retry attempts, at least one.
func (p *plan) maxAttempts(i int) int {
	if n := p.pipe.Tasks[i].Attempts; n > 0 {
		return n
	}
	return max(p.pipe.Retry.Attempts, 1)
}

// ancestor reports whether task a is task b or one of its ancestors.
func (p *plan) ancestor(a, b int) bool {
	if a == b {
		return true
	}
	for _, d := range p.deps[b] {
		if p.ancestor(a, d) {
			return true
		}
	}
	return false
}

// descendants lists the tasks downstream of i, in graph order.
func (p *plan) descendants(i int) []int {
	seen := make(map[int]bool)
	var walk func(int)
	walk = func(j int) {
		for _, k := range p.kids[j] {
			if !seen[k] {
				seen[k] = true
				walk(k)
			}
		}
	}
	walk(i)
	out := slices.Collect(maps.Keys(seen))
	sort.Ints(out)
	return out
}

// names returns the names of tasks idx, or of all tasks when idx is nil.
func (p *plan) names(idx []int) []string {
	if idx == nil {
		out := make([]string, len(p.pipe.Tasks))
		for i, t := range p.pipe.Tasks {
			out[i] = t.Name
		}
		return out
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = p.pipe.Tasks[i].Name
	}
	return out
}
