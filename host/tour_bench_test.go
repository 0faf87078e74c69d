package host

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/plugins"
)

// BenchmarkCodeTour runs the code tour (examples/code-tour: 48 questions
// about 12 Go packages, two at a time, gotour agents reading the Go tree)
// three ways in one run:
//
//   - naive: a new session for every task, stopped after it;
//   - roundrobin: a warm pool of max_sessions sessions, tasks handed out in
//     rotation, with no regard for what each session knows;
//   - matcher: hearth's placement.
//
// One op is the whole tour on a fresh data directory. Target: matcher at
// least 2.5x faster than naive, and faster than roundrobin.
func BenchmarkCodeTour(b *testing.B) {
	cfg, err := config.Load("../examples/code-tour/hearth.hcl", config.Options{Bundled: plugins.Names()})
	if err != nil {
		b.Fatal(err)
	}
	tour := cfg.Pipeline("code-tour")
	for _, way := range []string{"naive", "roundrobin", "matcher"} {
		b.Run(way, func(b *testing.B) {
			var spawns, reuses int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := *cfg
				c.DataDir = b.TempDir()
				h, err := New(Options{Config: &c, Bundled: plugins.Command, Logger: hclog.NewNullLogger()})
				if err != nil {
					b.Fatal(err)
				}
				p := h.pools["gotour"]
				switch way {
				case "naive":
					p.placer, p.released = p.placeFresh, p.discard
				case "roundrobin":
					rr := &rotation{}
					p.placer = func(ctx context.Context, t Task) (*session, *Decision, error) { return p.placeRotating(ctx, t, rr) }
				}
				b.StartTimer()
				run, err := h.StartRun(context.Background(), tour, RunOptions{})
				if err == nil {
					_, err = run.Wait(context.Background())
				}
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				outs, err := h.RunOutputs(run.ID)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range outs {
					switch Action(o.Action) {
					case ActionSpawned:
						spawns++
					case ActionReused:
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

// placeFresh is the naive baseline: a new session for every task.
func (p *pool) placeFresh(ctx context.Context, t Task) (*session, *Decision, error) {
	p.mu.Lock()
	s := p.newSessionLocked()
	p.mu.Unlock()
	if err := p.start(ctx, s, false); err != nil {
		return nil, nil, err
	}
	return s, &Decision{Task: t.ID, Agent: p.cfg().Name, Action: ActionSpawned, Session: s.id, Reason: "naive: a new session per task"}, nil
}

// discard stops a session after its task, keeping nothing: the naive
// baseline's other half.
func (p *pool) discard(s *session) {
	p.mu.Lock()
	s.status = statusLost
	p.procs--
	p.index.Remove(s.id)
	s.stopSaverLocked()
	p.notifyLocked()
	proc := s.proc
	p.mu.Unlock()
	proc.stop(true)
}

type rotation struct {
	next  int
	order []*session
}

// placeRotating is the round-robin baseline: a warm pool of max_sessions
// sessions, tasks handed out in turn to the next free one.
func (p *pool) placeRotating(ctx context.Context, t Task, rr *rotation) (*session, *Decision, error) {
	for {
		p.mu.Lock()
		if len(rr.order) < p.cfg().Pool.MaxSessions {
			s := p.newSessionLocked()
			rr.order = append(rr.order, s)
			p.mu.Unlock()
			if err := p.start(ctx, s, false); err != nil {
				return nil, nil, err
			}
			return s, &Decision{Task: t.ID, Agent: p.cfg().Name, Action: ActionSpawned, Session: s.id, Reason: "round robin: filling the pool"}, nil
		}
		for range rr.order {
			s := rr.order[rr.next%len(rr.order)]
			rr.next++
			if s.status == statusLive && s.load < s.capacity {
				p.reserveLocked(s)
				p.mu.Unlock()
				return s, &Decision{Task: t.ID, Agent: p.cfg().Name, Action: ActionReused, Session: s.id, Reason: fmt.Sprintf("round robin: turn %d", rr.next)}, nil
			}
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}
