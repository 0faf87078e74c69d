package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/plugins"
)

// BenchmarkClusterCodeTour submits the code tour's 48 questions (12 Go
// packages in 4 clusters, gotour agents with up to 4 sessions a host),
// two at a time, in the tour's order, to real `hearth serve` hosts on an
// embedded etcd: to one host, and spread over three (question i to host
// i mod 3). Reported: spawns and reuses, and precision, the share of
// questions about a package asked before that ran on a session that had
// answered about it (on whichever host).
//
//	go test -run '^$' -bench ClusterCodeTour -benchtime 1x ./cmd/hearth/
func BenchmarkClusterCodeTour(b *testing.B) {
	cfg, err := config.Load("../../examples/code-tour/hearth.hcl", config.Options{Bundled: plugins.Names()})
	if err != nil {
		b.Fatal(err)
	}
	tour := cfg.Pipeline("code-tour")
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			var spawns, reuses, forwarded, hits, repeats int
			for range b.N {
				b.StopTimer()
				c := newTestCluster(b)
				c.agents = "agent \"gotour\" {\n  bundled = \"gotour\"\n  pool {\n    max_sessions = 4\n  }\n}\n"
				var clients []*client.Client
				for i := range n {
					h := c.host(fmt.Sprintf("h%d", i))
					cl, err := client.Dial(context.Background(), client.Options{DataDir: h.dataDir})
					if err != nil {
						b.Fatal(err)
					}
					defer cl.Close()
					clients = append(clients, cl)
				}
				if n > 1 {
					// Every host sees the others before the tour starts.
					h0 := c.hostsByID()["h0"]
					h0.until(b, "all hosts joined", func(hs hearth.Members) bool { return len(hs.Hosts) == n })
				}
				outs := make([]*hearth.Outcome, len(tour.Tasks))
				next := make(chan int)
				var wg sync.WaitGroup
				b.StartTimer()
				for range 2 {
					wg.Go(func() {
						for i := range next {
							pt := tour.Tasks[i]
							o, err := clients[i%n].Submit(context.Background(), hearth.Task{Agent: pt.Agent, Name: pt.Name, Prompt: pt.Prompt, Hints: pt.Hints})
							if err != nil {
								b.Error(err)
								continue
							}
							outs[i] = o
						}
					})
				}
				for i := range tour.Tasks {
					next <- i
				}
				close(next)
				wg.Wait()
				b.StopTimer()
				knows := map[string]map[string]bool{} // package -> sessions that answered it
				for i, o := range outs {
					if o == nil {
						b.Fatalf("question %d failed", i)
					}
					pkg := tour.Tasks[i].Hints.Directories[0]
					switch o.Decision.Action {
					case hearth.ActionSpawned:
						spawns++
					case hearth.ActionReused, hearth.ActionRehydrated:
						reuses++
					}
					if o.Decision.Host != "" {
						forwarded++
					}
					if knows[pkg] == nil {
						knows[pkg] = map[string]bool{}
					} else {
						repeats++
						if knows[pkg][o.Session] {
							hits++
						}
					}
					knows[pkg][o.Session] = true
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(spawns)/float64(b.N), "spawns/op")
			b.ReportMetric(float64(reuses)/float64(b.N), "reuses/op")
			b.ReportMetric(float64(forwarded)/float64(b.N), "forwarded/op")
			b.ReportMetric(float64(hits)/float64(repeats), "precision")
		})
	}
}
