package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/matcher"
)

func TestMembership(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a, b, c := startNode(t, etcd, "a"), startNode(t, etcd, "b"), startNode(t, etcd, "c")
	all := []string{"a", "b", "c"}
	for _, m := range []*member{a, b, c} {
		waitView(t, m.View(), 5*time.Second, "sees a, b and c", func() bool { return slices.Equal(memberIDs(m.View()), all) })
	}
	if h, _ := a.View().Member("c"); h.Addr != "c.test:7420" || h.ID != "c" || len(h.Agents) != 1 {
		t.Errorf("c's record as a sees it: %+v", h)
	}
	if rec := hostRecord(t, etcd, "c"); rec.Addr != "c.test:7420" || rec.Identity == "" || rec.Incarnation == "" {
		t.Errorf("c's record in etcd: %+v, want its identity and incarnation", rec)
	}

	// c dies without a word: it leaves when its lease expires.
	c.crash()
	for _, m := range []*member{a, b} {
		waitView(t, m.View(), 3*testTTL, "c gone after its lease expired", func() bool { return slices.Equal(memberIDs(m.View()), []string{"a", "b"}) })
	}

	// b leaves properly: it revokes its lease.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitView(t, a.View(), 3*testTTL, "b gone", func() bool { return slices.Equal(memberIDs(a.View()), []string{"a"}) })
}

func TestSessionsAcrossHosts(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a, b := startNode(t, etcd, "a"), startNode(t, etcd, "b")
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}, Files: []string{"matcher/index.go"}, Techs: []string{"go"}})
	a.Changed("coder-1")
	a.src.put(cluster.Summary{Session: "coder-2", Dirs: []string{"host/store"}, Files: []string{"host/store/store.go"}, Techs: []string{"go"}})
	a.Changed("coder-2")

	hints := matcher.Hints{Dirs: []string{"matcher"}, Files: []string{"matcher/index.go"}, Techs: []string{"go"}}
	waitView(t, b.View(), 5*time.Second, "a's coder-1 wins a matcher task", func() bool {
		d := b.View().Decide("coder", hints, time.Now(), nil)
		return d.Choice == matcher.Reuse && d.Winner == "a/coder-1"
	})
	if n := a.View().Remote("coder"); n != 0 {
		t.Errorf("a indexes %d of its own sessions as remote", n)
	}
	waitView(t, a.View(), 5*time.Second, "a lists its own sessions", func() bool {
		return slices.Equal(sessionIDs(a.View(), "a"), []string{"coder-1", "coder-2"})
	})

	// What a session learns moves placement; a session that ends leaves it.
	a.src.put(cluster.Summary{Session: "coder-2", Dirs: []string{"host/store", "matcher"}, Files: []string{"matcher/score.go", "host/store/store.go"}, Techs: []string{"go"}})
	a.Changed("coder-2")
	a.src.remove("coder-1")
	a.Changed("coder-1")
	waitView(t, b.View(), 5*time.Second, "coder-1 gone, coder-2 knows matcher/", func() bool {
		d := b.View().Decide("coder", matcher.Hints{Files: []string{"matcher/score.go"}}, time.Now(), nil)
		return slices.Equal(sessionIDs(b.View(), "a"), []string{"coder-2"}) && d.Winner == "a/coder-2"
	})

	// The host's load reaches the others with the next batch.
	a.src.mu.Lock()
	a.src.host.Agents[0].Load = 3
	a.src.mu.Unlock()
	a.HostChanged()
	waitView(t, b.View(), 5*time.Second, "a's load is 3", func() bool {
		h, _ := b.View().Member("a")
		l, _ := h.Agent("coder")
		return l.Load == 3
	})
}

// TestBatching floods a host with tool-use reports and counts etcd's
// write transactions by its own revision: one per batch, whatever the
// number of reports.
func TestBatching(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	// A publish interval of a minute: only the test's Flush calls write.
	a := startNode(t, etcd, "a", func(o *Options) { o.Config.PublishInterval = time.Minute })
	b := startNode(t, etcd, "b")
	ctx := context.Background()

	const sessions, reports, batches = 50, 10000, 5
	start, stats := etcd.Revision(), a.Stats()
	for batch := range batches {
		for i := range reports / batches {
			id := "coder-" + string(rune('A'+i%sessions))
			a.src.put(cluster.Summary{Session: id, Files: []string{"f" + time.Duration(batch*reports+i).String() + ".go"}})
			a.Changed(id)
		}
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := etcd.Revision() - start; got != batches {
		t.Errorf("%d tool-use reports in %d batches made %d etcd revisions, want %d", reports, batches, got, batches)
	}
	st := a.Stats()
	if st.Txns-stats.Txns != batches || st.Puts-stats.Puts != batches*sessions {
		t.Errorf("stats: %d transactions, %d puts; want %d and %d", st.Txns-stats.Txns, st.Puts-stats.Puts, batches, batches*sessions)
	}
	// Nothing changed: no write at all.
	if err := a.Flush(ctx); err != nil || etcd.Revision()-start != batches {
		t.Errorf("an empty flush wrote (err %v)", err)
	}
	// Only the last activity moved, by less than its resolution: no
	// write either.
	a.src.mu.Lock()
	s := a.src.sessions["coder-A"]
	s.LastActivity = s.LastActivity.Add(time.Second)
	a.src.sessions["coder-A"] = s
	a.src.mu.Unlock()
	a.Changed("coder-A")
	if err := a.Flush(ctx); err != nil || etcd.Revision()-start != batches {
		t.Errorf("a flush of a second's activity wrote (err %v)", err)
	}
	// The other host holds the last of each session.
	waitView(t, b.View(), 5*time.Second, "a's 50 sessions with their last files", func() bool {
		got := b.View().Sessions("a")
		return len(got) == sessions && got[len(got)-1].Files[0] == "f"+time.Duration((batches-1)*reports+reports/batches-1).String()+".go"
	})
}

func TestHostIDInUse(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a := startNode(t, etcd, "a")
	a.src.put(cluster.Summary{Session: "old-1"})
	a.Changed("old-1")
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Another machine claiming the ID is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := a.cfg
	_, err := Start(ctx, Options{Config: cfg, Identity: cluster.Identity("elsewhere", "/data/a"), Source: newSource("x:1"), View: cluster.NewView("a", func(string) matcher.Config { return matcher.DefaultConfig() })})
	if !errors.Is(err, cluster.ErrHostIDInUse) {
		t.Fatalf("got %v, want ErrHostIDInUse", err)
	}

	// The same host restarted before its lease expired takes its place
	// back, and what its earlier start published and no longer has goes
	// at once, not after the TTL.
	a.crash()
	a2 := startNode(t, etcd, "a")
	if got := keys(t, etcd, cluster.HostSessionsPrefix("a")); len(got) != 0 {
		t.Fatalf("once the restarted host registered, etcd holds %q of its earlier start", got)
	}
	a2.src.put(cluster.Summary{Session: "new-1"})
	a2.Changed("new-1")
	if err := a2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, etcd, cluster.HostSessionsPrefix("a")); !slices.Equal(got, []string{cluster.SessionKey("a", "new-1")}) {
		t.Fatalf("etcd holds %q, want new-1 only", got)
	}
}

// hostRecord reads host id's record from etcd, through a client of the
// test's own.
func hostRecord(t testing.TB, etcd *clustertest.Etcd, id string) cluster.HostRecord {
	t.Helper()
	raw, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(context.Background(), cluster.HostKey(id))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("host %s's record: %v %v", id, resp, err)
	}
	rec, err := cluster.DecodeHost(id, resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// keys lists etcd's keys under prefix, through a client of the test's own.
func keys(t testing.TB, etcd *clustertest.Etcd, prefix string) []string {
	t.Helper()
	raw, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// TestBadRecords writes what no hearth writes under the prefix: the view
// leaves it out and goes on.
func TestBadRecords(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a, b := startNode(t, etcd, "a"), startNode(t, etcd, "b")
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"x"}})
	a.Changed("coder-1")
	waitView(t, b.View(), 5*time.Second, "coder-1 listed", func() bool { return len(b.View().Sessions("a")) == 1 })

	raw, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	for k, v := range map[string]string{
		cluster.SessionKey("a", "coder-1"): `{"v":99}`, // replaces a good one
		cluster.HostKey("bad/id"):          `{}`,
		cluster.Prefix + "other/x":         `x`,
		cluster.HostKey("z"):               `not json`,
	} {
		if _, err := raw.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	waitView(t, b.View(), 5*time.Second, "the damaged summary dropped", func() bool { return len(b.View().Sessions("a")) == 0 })
	if got := memberIDs(b.View()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("members %q, want a and b", got)
	}
}

func TestStartRefusesMisuse(t *testing.T) {
	t.Parallel()
	cfg := cluster.Config{Endpoints: []string{"http://127.0.0.1:1"}, Advertise: "a:1", HostID: "a"}.WithDefaults("h", "/d")
	view := cluster.NewView("a", func(string) matcher.Config { return matcher.DefaultConfig() })
	for name, o := range map[string]Options{
		"bad config":     {Config: cluster.Config{}, Identity: "i", Source: newSource("a:1"), View: view},
		"another's view": {Config: cfg, Identity: "i", Source: newSource("a:1"), View: cluster.NewView("b", nil)},
		"no source":      {Config: cfg, Identity: "i", View: view},
		"no identity":    {Config: cfg, Source: newSource("a:1"), View: view},
	} {
		if n, err := Start(context.Background(), o); err == nil {
			n.Close()
			t.Errorf("%s: started", name)
		}
	}
}

// TestPublishNowBound: PublishNow writes at once, and the other host
// sees it, well within a publish interval of a minute; past
// PublishNowBurst it writes no more (at most one more a publish
// interval), whatever the rate of placements: the changes wait for the
// batch.
func TestPublishNowBound(t *testing.T) {
	t.Parallel()
	etcd := clustertest.StartEtcd(t)
	a := startNode(t, etcd, "a", func(o *Options) { o.Config.PublishInterval = time.Minute })
	b := startNode(t, etcd, "b")

	start := etcd.Revision()
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"pkg/fast"}})
	a.Changed("coder-1")
	a.PublishNow()
	if got := etcd.Revision() - start; got != 1 {
		t.Fatalf("PublishNow made %d etcd revisions, want 1", got)
	}
	waitView(t, b.View(), 5*time.Second, "a's session", func() bool { return len(b.View().Sessions("a")) == 1 })

	const placements = 200
	for i := range placements {
		a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{fmt.Sprintf("pkg/%d", i)}})
		a.Changed("coder-1")
		a.PublishNow()
	}
	// The burst, less the one above; a minute's refill is not due.
	if got, max := etcd.Revision()-start, int64(PublishNowBurst); got > max || got < max-1 {
		t.Errorf("%d placements, each published now, made %d etcd revisions; want %d (the burst)", placements+1, got, max)
	}
}
