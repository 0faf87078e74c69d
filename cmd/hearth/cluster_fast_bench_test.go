package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// fastPackages are the six packages of BenchmarkClusterFastTasks, each
// asked six questions.
var fastPackages = []struct{ dir, symbol, caller string }{
	{"net/http", "Server", "Error"},
	{"encoding/json", "Decoder", "Marshal"},
	{"go/ast", "File", "Walk"},
	{"text/template", "Template", "Execute"},
	{"net/url", "URL", "Parse"},
	{"encoding/xml", "Encoder", "NewDecoder"},
}

// fastTasks are the 36 questions, grouped by package (each package's six
// in a row) or shuffled (one fixed order).
func fastTasks(shuffled bool) []hearth.Task {
	var ts []hearth.Task
	for _, p := range fastPackages {
		for _, q := range []string{"summary " + p.dir, "symbol " + p.dir + " " + p.symbol, "imports " + p.dir,
			"callers " + p.dir + " " + p.caller, "summary " + p.dir, "imports " + p.dir} {
			ts = append(ts, hearth.Task{Agent: "gotour", Prompt: q, Hints: sdk.Hints{Directories: []string{p.dir}}})
		}
	}
	if shuffled {
		r := rand.New(rand.NewPCG(26, 6))
		r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	}
	for i := range ts {
		ts[i].Name = fmt.Sprintf("q%02d", i)
	}
	return ts
}

// BenchmarkClusterFastTasks is issue 26's workload: 36 questions about 6
// Go packages (gotour agents, up to 6 sessions a host: one host has
// room for a session per package), submitted one after another as fast
// as they are answered, question i to host i mod n, on real `hearth
// serve` hosts on an embedded etcd at the default publish interval (1 s).
// Grouped asks each package's six questions in a row; shuffled in one
// fixed random order. Reported: spawns, forwarded, precision (the share
// of the 30 repeat questions that ran on a session that had answered
// about the package, on whichever host), and the p50/p99 of a question
// that reused a session on the host it was submitted to (local) and on
// another host (forwarded), measured at the client, in the same run.
//
//	go test -run '^$' -bench ClusterFastTasks -benchtime 3x ./cmd/hearth/
func BenchmarkClusterFastTasks(b *testing.B) {
	for _, order := range []string{"grouped", "shuffled"} {
		tasks := fastTasks(order == "shuffled")
		for _, n := range []int{1, 3} {
			b.Run(fmt.Sprintf("%s/hosts=%d", order, n), func(b *testing.B) {
				var tl tally
				var local, remote []time.Duration
				for range b.N {
					b.StopTimer()
					c := newTestCluster(b)
					c.publishInterval = "1s"
					clients := c.gotourHosts(b, n, 6)
					tl.begin()
					b.StartTimer()
					for i, t := range tasks {
						start := time.Now()
						o, err := clients[i%n].Submit(context.Background(), t)
						took := time.Since(start)
						if err != nil {
							b.Fatalf("question %d (%s): %v", i, t.Prompt, err)
						}
						tl.add(t.Hints.Directories[0], o)
						switch {
						case o.Decision.Action != hearth.ActionReused:
						case o.Decision.Host != "":
							remote = append(remote, took)
						default:
							local = append(local, took)
						}
					}
					b.StopTimer()
				}
				tl.report(b)
				for _, l := range []struct {
					name string
					ds   []time.Duration
				}{{"local", local}, {"fwd", remote}} {
					if len(l.ds) == 0 {
						continue
					}
					slices.Sort(l.ds)
					b.ReportMetric(float64(l.ds[len(l.ds)/2].Microseconds())/1000, l.name+"-p50-ms")
					b.ReportMetric(float64(l.ds[(len(l.ds)*99-1)/100].Microseconds())/1000, l.name+"-p99-ms")
				}
			})
		}
	}
}
