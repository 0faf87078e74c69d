package engine

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/plugins"
)

// BenchmarkCodeTour runs the code tour (examples/code-tour: 48 questions
// about 12 Go packages, two at a time, gotour agents reading the Go tree)
// three ways in one run, by the pool's placement setting:
//
//   - naive (placement = "fresh"): a new session for every task, stopped
//     after it;
//   - roundrobin (placement = "round_robin"): a warm pool of max_sessions
//     sessions, tasks handed out in rotation, with no regard for what
//     each session knows;
//   - matcher (placement = "matcher", the default): hearth's placement.
//
// One op is the whole tour on a fresh data directory. Target: matcher at
// least 2.5x faster than naive, and faster than roundrobin.
func BenchmarkCodeTour(b *testing.B) {
	cfg, err := config.Load("../../examples/code-tour/hearth.hcl", config.Options{Bundled: plugins.Names()})
	if err != nil {
		b.Fatal(err)
	}
	tour := cfg.Pipeline("code-tour")
	for _, way := range []struct {
		name      string
		placement hearth.Placement
	}{{"naive", hearth.PlacementFresh}, {"roundrobin", hearth.PlacementRoundRobin}, {"matcher", hearth.PlacementMatcher}} {
		b.Run(way.name, func(b *testing.B) {
			var spawns, reuses int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := *cfg
				c.DataDir = b.TempDir()
				c.Agents = nil
				for _, a := range cfg.Agents {
					cp := *a
					cp.Pool.Placement = way.placement
					c.Agents = append(c.Agents, &cp)
				}
				h, err := New(Options{Config: &c, Bundled: plugins.Command, Logger: hclog.NewNullLogger()})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				run, err := h.StartRun(context.Background(), hearth.RunSpec{Pipeline: tour})
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
				for _, o := range outs {
					switch hearth.Action(o.Action) {
					case hearth.ActionSpawned:
						spawns++
					case hearth.ActionReused:
						reuses++
					}
				}
				if err := h.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(spawns)/float64(b.N), "spawns/op")
			b.ReportMetric(float64(reuses)/float64(b.N), "reuses/op")
		})
	}
}
