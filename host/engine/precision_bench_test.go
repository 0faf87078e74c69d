package engine

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/internal/workload"
	"github.com/hearth-dev/hearth/plugins"
	"github.com/hearth-dev/hearth/sdk"
)

// BenchmarkPlacementPrecision runs the workloads internal/workload
// simulates on real gotour sessions: hearth's code tour, packages of
// modules in the Go module cache, and a generated tree of deep packages
// under common parents (written to a temporary directory), and a tree
// nobody tuned against (packages drawn at random from etcd, raft and
// OpenTelemetry in the module cache), each with its
// questions interleaved at random (seed 1), on a pool of 5 sessions with 3
// questions in flight, three ways in one run (the pool's placement
// setting, so anyone can run the baselines on their own tree):
//
//   - naive (placement = "fresh"): a new session per question;
//   - roundrobin (placement = "round_robin"): a warm pool in rotation;
//   - matcher (placement = "matcher"): hearth's placement.
//
// One op is the whole workload on a fresh data directory. Besides time it
// reports spawns, reuses and precision: the share of repeat questions
// (about a package an earlier question was about) that ran on a session
// which had already started a question about that package.
//
//	go test -run '^$' -bench PlacementPrecision -benchtime 3x ./host/engine/
func BenchmarkPlacementPrecision(b *testing.B) {
	cfg, err := config.Load("../../examples/code-tour/hearth.hcl", config.Options{Bundled: plugins.Names()})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range precisionWorkloads(b) {
		for _, way := range []struct {
			name      string
			placement hearth.Placement
		}{{"naive", hearth.PlacementFresh}, {"roundrobin", hearth.PlacementRoundRobin}, {"matcher", hearth.PlacementMatcher}} {
			b.Run(w.Name+"/"+way.name, func(b *testing.B) {
				var spawns, reuses, hits, repeats int
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					c := *cfg
					c.DataDir = b.TempDir()
					agent := *cfg.Agent("gotour")
					agent.Pool.MaxSessions = 5
					agent.Pool.Placement = way.placement
					agent.Env = map[string]string{"GOTOUR_ROOT": w.Root}
					c.Agents = []*config.Agent{&agent}
					h, err := New(Options{Config: &c, Bundled: plugins.Command, Logger: hclog.NewNullLogger()})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					run, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: questionPipeline(w)})
					if err == nil {
						_, err = run.Wait(context.Background())
						run.Close()
					}
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					outs, err := h.RunOutputs(context.Background(), run.ID())
					if err != nil {
						b.Fatal(err)
					}
					s, r, hit, rep := precision(w, outs)
					spawns, reuses, hits, repeats = spawns+s, reuses+r, hits+hit, repeats+rep
					if err := h.Close(context.Background()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(spawns)/float64(b.N), "spawns/op")
				b.ReportMetric(float64(reuses)/float64(b.N), "reuses/op")
				b.ReportMetric(100*float64(hits)/float64(max(repeats, 1)), "%precise")
			})
		}
	}
}

// precisionWorkloads builds the three workloads, or skips (fails on CI)
// when the Go tree or the module cache cannot be found.
func precisionWorkloads(b *testing.B) []workload.Workload {
	need := func(err error) {
		if err == nil {
			return
		}
		testenv.Missing(b, err.Error(), "fill the module cache (go mod download)")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	need(err)
	tour, err := workload.CodeTour("../../examples/code-tour/hearth.hcl", filepath.Join(strings.TrimSpace(string(goroot)), "src"))
	need(err)
	tour.Name = "tour"

	var mods []string
	for _, m := range workload.DefaultModules {
		mods = append(mods, m.Module)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache, dirs, err := workload.FindModules(ctx, ".", mods...)
	need(err)
	modcache, err := workload.ModuleCache(cache, dirs, workload.DefaultModules, 1)
	need(err)
	modcache.Name = "modcache"

	// The third tree nobody tuned against: packages drawn at random
	// (seed 7) from modules hearth's cluster layer brings in.
	untunedMods := []string{"go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/client/v3", "go.etcd.io/raft/v3", "go.opentelemetry.io/otel"}
	cache, udirs, err := workload.FindModules(ctx, ".", untunedMods...)
	need(err)
	var sel []workload.ModulePackages
	for _, m := range untunedMods {
		pkgs, err := packagesOf(udirs[m])
		need(err)
		rng := rand.New(rand.NewPCG(7, 0))
		rng.Shuffle(len(pkgs), func(i, j int) { pkgs[i], pkgs[j] = pkgs[j], pkgs[i] })
		sel = append(sel, workload.ModulePackages{Module: m, Packages: pkgs[:min(4, len(pkgs))]})
	}
	untuned, err := workload.ModuleCache(cache, udirs, sel, 7)
	need(err)
	untuned.Name = "untuned"

	deep, err := workload.WriteDeep(workload.Deep(workload.DefaultDeep), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	deep.Name = "deep"

	var out []workload.Workload
	for _, w := range []workload.Workload{tour, modcache, deep, untuned} {
		name := w.Name
		w = w.Interleave(1)
		w.Name = name
		out = append(out, w)
	}
	return out
}

// questionPipeline makes one independent task per question, in the
// workload's order, 3 in flight.
func questionPipeline(w workload.Workload) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: "questions", Parallel: 3}
	for i, q := range w.Questions {
		p.Tasks = append(p.Tasks, &hearth.PipelineTask{
			Name:   fmt.Sprintf("q%03d", i),
			Agent:  "gotour",
			Prompt: q.Prompt,
			Hints:  sdk.Hints{Files: q.Hints.Files, Directories: q.Hints.Dirs, Technologies: q.Hints.Techs},
		})
	}
	return p
}

// precision counts spawns and reuses, and how many of the repeat
// questions ran on a session that had started a question about their
// package before they started.
func precision(w workload.Workload, outs []hearth.TaskOutput) (spawns, reuses, hits, repeats int) {
	type ran struct {
		pkg, session string
		start        time.Time
	}
	var all []ran
	for _, o := range outs {
		if !o.Current {
			continue
		}
		switch hearth.Action(o.Action) {
		case hearth.ActionSpawned:
			spawns++
		case hearth.ActionReused:
			reuses++
		}
		var i int
		if _, err := fmt.Sscanf(o.Task, "q%03d", &i); err != nil || i >= len(w.Questions) {
			continue
		}
		all = append(all, ran{w.Questions[i].Package, o.Session, o.Time.Add(-o.Duration)})
	}
	slices.SortFunc(all, func(a, b ran) int { return a.start.Compare(b.start) })
	known := map[string]map[string]bool{} // package -> sessions that worked in it
	for _, r := range all {
		if s, ok := known[r.pkg]; ok {
			repeats++
			if s[r.session] {
				hits++
			}
		} else {
			known[r.pkg] = map[string]bool{}
		}
		known[r.pkg][r.session] = true
	}
	return spawns, reuses, hits, repeats
}

// packagesOf lists the package directories of a module (relative to it,
// "" for its root) that have at least two non-test Go files, skipping
// testdata and internal test trees.
func packagesOf(dir string) ([]string, error) {
	count := map[string]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(dir, filepath.Dir(p))
			if rel == "." {
				rel = ""
			}
			count[filepath.ToSlash(rel)]++
		}
		return nil
	})
	var pkgs []string
	for p, n := range count {
		if n >= 2 {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	return pkgs, err
}
