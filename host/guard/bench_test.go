package guard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// The guard benchmarks report the p50 of one evaluation, in µs. Run
// them together, so that the ratios hold on a loaded machine:
//
//	go test -run '^$' -bench . ./host/guard/
//
// BenchmarkEvalBaseline is the rule as guards ran before paths were
// canonical (doublestar's glob on the paths as the agent gave them);
// BenchmarkEval the same rule with today's glob (clean, case folded);
// BenchmarkCanonicalEval the whole pre_tool_use path: the call read and
// made canonical (a symbolic link resolution from the cache), then the
// rule; BenchmarkCanonicalHelper the same with touches() instead of
// any(paths, glob(...)).

const fiveClauses = `tool == "Read" && len(paths) > 0 && any(paths, glob(#, "**/.env*")) && task.agent != "admin" && session.tool_uses < 1000`

func BenchmarkEvalBaseline(b *testing.B) {
	program, err := expr.Compile(fiveClauses, expr.Env(ToolUseEnv{}), expr.AsBool(),
		expr.Function("glob", func(args ...any) (any, error) {
			return doublestar.Match(args[1].(string), args[0].(string))
		}, new(func(path, pattern string) bool)))
	if err != nil {
		b.Fatal(err)
	}
	env := ToolUseEnv{Tool: "Read", Paths: []string{"services/billing/config/.env.production"}, Task: Task{Agent: "coder"}, Session: Session{ToolUses: 10}}
	machine := &vm.VM{MemoryBudget: MemoryBudget}
	measure(b, func() bool {
		out, err := machine.Run(program, env)
		return err == nil && out == true
	})
}

// BenchmarkEval: one five-clause pre-tool-use rule on an environment
// built already, with a pooled VM.
func BenchmarkEval(b *testing.B) {
	r := mustCompile(b, Spec{Name: "five", Hook: PreToolUse, Condition: fiveClauses})
	// Read already, as Set.ToolUse leaves it: the rule alone.
	env := ToolUseEnv{Tool: "Read", Paths: []string{"/w/services/billing/config/.env.production"}, Task: Task{Agent: "coder"}, Session: Session{ToolUses: 10}, read: true}
	measure(b, func() bool {
		fired, err := r.Eval(env)
		return fired && err == nil
	})
}

// benchTree is a workspace with the file the benchmarks read, five
// directories deep, under a lower-case path as most are (b.TempDir's
// name has capitals, which cost a folded copy).
func benchTree(b *testing.B) (string, *Resolver) {
	dir, err := os.MkdirTemp("", "hearth-guard-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(root, "services/billing/config/.env.production")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	r, err := NewResolver(PathPolicy{Home: root})
	if err != nil {
		b.Fatal(err)
	}
	return root, r
}

func benchCanonical(b *testing.B, cond string) {
	root, res := benchTree(b)
	rule, err := CompileWith(Spec{Name: "five", Hook: PreToolUse, Condition: cond}, res)
	if err != nil {
		b.Fatal(err)
	}
	set := NewSet([]*Rule{rule})
	call := Call{Tool: "Read", RawInput: json.RawMessage(`{"file_path":"services/billing/config/.env.production"}`), Cwd: root}
	measure(b, func() bool {
		env := set.ToolUse(call)
		env.Task, env.Session = Task{Agent: "coder"}, Session{ToolUses: 10}
		return set.First(PreToolUse, Match{}, env) != nil
	})
}

func BenchmarkCanonicalEval(b *testing.B) { benchCanonical(b, fiveClauses) }

func BenchmarkCanonicalHelper(b *testing.B) {
	benchCanonical(b, `tool == "Read" && touches("**/.env*") && task.agent != "admin" && session.tool_uses < 1000`)
}

// BenchmarkCanonicalBash: a shell command read whole (parsed, expanded,
// six words resolved) and one rule.
func BenchmarkCanonicalBash(b *testing.B) {
	root, res := benchTree(b)
	rule, err := CompileWith(Spec{Name: "env", Hook: PreToolUse, Condition: `touches("**/.env") || touches_under("~/.ssh")`}, res)
	if err != nil {
		b.Fatal(err)
	}
	set := NewSet([]*Rule{rule})
	call := Call{Tool: "Bash", RawInput: json.RawMessage(`{"command":"cd services && go test ./billing/... 2>&1 | tee /tmp/test.log"}`), Cwd: root}
	measure(b, func() bool {
		return set.First(PreToolUse, Match{}, set.ToolUse(call)) == nil
	})
}

// BenchmarkResolve: one path five components deep, from the cache and
// from the file system.
func BenchmarkResolve(b *testing.B) {
	for _, ttl := range []time.Duration{DefaultCacheTTL, -1} {
		b.Run(fmt.Sprintf("ttl=%v", ttl), func(b *testing.B) {
			root, _ := benchTree(b)
			r, err := NewResolver(PathPolicy{CacheTTL: ttl})
			if err != nil {
				b.Fatal(err)
			}
			p := root + "/services/billing/config/.env.production"
			measure(b, func() bool { return r.resolve(p).real == p })
		})
	}
}

// measure runs f b.N times and reports the p50 of one run.
func measure(b *testing.B, f func() bool) {
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ok := f()
		ds = append(ds, time.Since(start))
		if !ok {
			b.Fatal("unexpected answer")
		}
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1000, "p50-µs")
}
