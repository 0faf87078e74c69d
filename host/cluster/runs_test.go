package cluster

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hearth-dev/hearth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lister answers for each host from a map of run IDs; a host in slow
// blocks until its context ends, like a host that accepted the
// connection and hangs.
type lister struct {
	mu   sync.Mutex
	runs map[string][]string
	slow map[string]bool
}

func (l *lister) ListRuns(ctx context.Context, h hearth.Member) ([]hearth.RunInfo, error) {
	l.mu.Lock()
	ids, slow := l.runs[h.ID], l.slow[h.ID]
	l.mu.Unlock()
	if slow {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return runInfos(ids...), nil
}

func runInfos(ids ...string) []hearth.RunInfo {
	out := make([]hearth.RunInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, hearth.RunInfo{ID: id})
	}
	return out
}

func TestRunDirectory(t *testing.T) {
	l := &lister{runs: map[string][]string{"a": {"a-run1"}, "b": {"b-run1", "b-run2"}, "c": {"c-run1"}}, slow: map[string]bool{}}
	clock := t0
	d := NewRunDirectory(l, 50*time.Millisecond, func() time.Time { return clock })
	hosts := []hearth.Member{{ID: "b", Addr: "b:1"}, {ID: "a", Addr: "a:1"}, {ID: "c", Addr: "c:1"}}

	got := d.List(context.Background(), hosts)
	want := []hearth.HostRuns{
		{Host: "a", State: hearth.OwnerUp, Runs: runInfos("a-run1"), Listed: t0},
		{Host: "b", State: hearth.OwnerUp, Runs: runInfos("b-run1", "b-run2"), Listed: t0},
		{Host: "c", State: hearth.OwnerUp, Runs: runInfos("c-run1"), Listed: t0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// b hangs, c is gone: b is listed with what it said last, marked
	// unreachable; c's runs stay listed, marked gone.
	clock = t0.Add(time.Minute)
	l.mu.Lock()
	l.slow["b"] = true
	l.runs["a"] = append(l.runs["a"], "a-run2")
	l.mu.Unlock()
	got = d.List(context.Background(), hosts[:2])
	if len(got) != 3 {
		t.Fatalf("got %+v, want three hosts", got)
	}
	if a := got[0]; a.State != hearth.OwnerUp || len(a.Runs) != 2 || !a.Listed.Equal(clock) {
		t.Errorf("a: %+v", a)
	}
	if b := got[1]; b.State != hearth.OwnerUnreachable || b.Error != "listing runs of host b at b:1: "+context.DeadlineExceeded.Error() || len(b.Runs) != 2 || !b.Listed.Equal(t0) {
		t.Errorf("b: %+v, want unreachable past its deadline, with its runs as listed at t0", b)
	}
	if c := got[2]; c.State != hearth.OwnerGone || c.Runs[0].ID != "c-run1" || c.Error != "" {
		t.Errorf("c: %+v, want gone with its last runs", c)
	}

	d.Forget("c")
	if got = d.List(context.Background(), nil); len(got) != 2 || got[0].State != hearth.OwnerGone {
		t.Errorf("after Forget(c), with no members: %+v", got)
	}

	// The caller's context bounds the whole listing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got = d.List(ctx, hosts[:1])
	if got[1].Host != "b" || got[1].State != hearth.OwnerUnreachable {
		t.Errorf("with a cancelled context: %+v", got)
	}
}
