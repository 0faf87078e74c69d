package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
			var tl tally
			for range b.N {
				b.StopTimer()
				c := newTestCluster(b)
				clients := c.gotourHosts(b, n, 4)
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
				tl.begin()
				for i, o := range outs {
					if o == nil {
						b.Fatalf("question %d failed", i)
					}
					tl.add(tour.Tasks[i].Hints.Directories[0], o)
				}
				b.StartTimer()
			}
			tl.report(b)
		})
	}
}

// BenchmarkClusterReplacement times, on real `hearth serve` hosts with a
// 3 s lease TTL on an embedded etcd, how long after host b is killed
// with kill -9 (kill) or paused with SIGSTOP (pause) the task host a
// forwarded to it starts running elsewhere: from the signal to the
// task's first step on the other host, written to a ledger the test
// polls every 10 ms. The lease TTL is the floor (the dead host's lease
// must expire first); reported per run: the time, and the time past the
// TTL.
//
//	go test -run '^$' -bench ClusterReplacement -benchtime 3x ./cmd/hearth/
func BenchmarkClusterReplacement(b *testing.B) {
	const ttl = 3 * time.Second
	for _, fault := range []string{"kill", "pause"} {
		b.Run(fault, func(b *testing.B) {
			var times []time.Duration
			for range b.N {
				b.StopTimer()
				c := newTestCluster(b)
				c.leaseTTL = ttl.String()
				dir := b.TempDir()
				c.workspace(dir)
				a, hb := c.host("a"), c.host("b")
				hb.submit(b, "read:pkg/net/http/server.go;echo:warm", "pkg/net/http")
				a.until(b, "b's session is published, idle", func(hs hearth.Members) bool {
					m, ok := memberOf(hs, "b")
					return ok && m.Sessions == 1 && idle(m)
				})
				l, release := ledger(filepath.Join(dir, "ledger")), filepath.Join(dir, "release")
				done := a.submitAsync(b, "mark:"+string(l)+"=start;wait:"+release+";echo:done", "pkg/net/http")
				l.waitCount(b, "start", 1, 30*time.Second)
				b.StartTimer()
				t0 := time.Now()
				if fault == "kill" {
					hb.kill9(b)
				} else {
					hb.pause(b)
				}
				l.waitCount(b, "start", 2, 30*time.Second)
				times = append(times, time.Since(t0))
				b.StopTimer()
				if err := os.WriteFile(release, nil, 0o600); err != nil {
					b.Fatal(err)
				}
				if r := <-done; r.o == nil {
					b.Fatalf("the task failed: %s", r.out)
				}
				if fault == "pause" {
					hb.resume(b)
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "ms-p50")
			b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "ms-max")
			b.ReportMetric(float64((times[len(times)-1] - ttl).Milliseconds()), "ms-max-past-ttl")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// tally counts a cluster benchmark's placements: spawns, reuses,
// forwards, and precision, the share of questions about a package asked
// before that ran on a session that had answered about it (on whichever
// host).
type tally struct {
	spawns, reuses, forwarded, hits, repeats int
	knows                                    map[string]map[string]bool // package -> sessions that answered it
}

// add counts o, the outcome of a question about pkg. Each run of a
// workload starts with a fresh knows (begin).
func (tl *tally) add(pkg string, o *hearth.Outcome) {
	switch o.Decision.Action {
	case hearth.ActionSpawned:
		tl.spawns++
	case hearth.ActionReused, hearth.ActionRehydrated:
		tl.reuses++
	}
	if o.Decision.Host != "" {
		tl.forwarded++
	}
	if tl.knows[pkg] == nil {
		tl.knows[pkg] = map[string]bool{}
	} else {
		tl.repeats++
		if tl.knows[pkg][o.Session] {
			tl.hits++
		}
	}
	tl.knows[pkg][o.Session] = true
}

// begin starts a run of the workload: no session knows a package.
func (tl *tally) begin() { tl.knows = map[string]map[string]bool{} }

func (tl *tally) report(b *testing.B) {
	b.ReportMetric(float64(tl.spawns)/float64(b.N), "spawns/op")
	b.ReportMetric(float64(tl.reuses)/float64(b.N), "reuses/op")
	b.ReportMetric(float64(tl.forwarded)/float64(b.N), "forwarded/op")
	b.ReportMetric(float64(tl.hits)/float64(tl.repeats), "precision")
}

// gotourHosts starts n hosts h0, h1, ... of gotour agents with up to
// maxSessions sessions each, and returns a client of each, once every
// host sees the others.
func (c *testCluster) gotourHosts(b *testing.B, n, maxSessions int) []*client.Client {
	c.agents = fmt.Sprintf("agent \"gotour\" {\n  bundled = \"gotour\"\n  pool {\n    max_sessions = %d\n  }\n}\n", maxSessions)
	var clients []*client.Client
	for i := range n {
		h := c.host(fmt.Sprintf("h%d", i))
		cl, err := client.Dial(context.Background(), client.Options{DataDir: h.dataDir})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cl.Close() })
		clients = append(clients, cl)
	}
	if n > 1 {
		c.hostsByID()["h0"].until(b, "all hosts joined", func(hs hearth.Members) bool { return len(hs.Hosts) == n })
	}
	return clients
}
