package etcd

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
)

// TestCompactionBoundsTheDatabase publishes under load, accelerated: a
// session whose ~5 KiB summary changes at every flush, flushed back to
// back (each flush stands for one publish interval), with the
// compaction the node runs every compact_interval called every
// compact_interval/publish_interval flushes (300 at the defaults, 5 m
// and 1 s). etcd's
// database must stop growing: its size after the second half is within
// a quarter of its size after the first, and under a third of what
// was written. HEARTH_COMPACT_FLUSHES sets the flushes (default 3,000:
// 50 minutes at 1 s; 172,800 is two days, BENCHMARKS.md).
func TestCompactionBoundsTheDatabase(t *testing.T) {
	t.Parallel()
	flushes := 3000
	if v := os.Getenv("HEARTH_COMPACT_FLUSHES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 600 {
			t.Fatalf("HEARTH_COMPACT_FLUSHES=%q: want a number of flushes >= 600", v)
		}
		flushes = n
	}
	const every = 300
	etcd := clustertest.StartEtcd(t)
	a := startNode(t, etcd, "a")
	ctx := context.Background()
	dbSize := func() int64 {
		t.Helper()
		st, err := a.client.Status(ctx, etcd.Endpoints()[0])
		if err != nil {
			t.Fatal(err)
		}
		return st.DbSize
	}
	dirs := make([]string, 32)
	written, compactions := 0, 0
	var half int64
	for i := range flushes {
		for j := range dirs {
			dirs[j] = fmt.Sprintf("pkg/%03d/%s/%d", j, strings.Repeat("x", 140), i)
		}
		s := cluster.Summary{Session: "coder-1", Dirs: dirs}
		a.src.put(s)
		a.Changed("coder-1")
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			written += len(d)
		}
		if (i+1)%every == 0 {
			rev, err := a.Compact(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev > 0 {
				compactions++
			}
		}
		if i+1 == flushes/2 {
			half = dbSize()
		}
	}
	end := dbSize()
	t.Logf("%d flushes, %d compactions, %d KiB written: etcd's database %d KiB at half, %d KiB at the end", flushes, compactions, written>>10, half>>10, end>>10)
	if compactions < flushes/every-1 {
		t.Errorf("%d compactions in %d flushes, want %d", compactions, flushes, flushes/every-1)
	}
	if end > half+half/4 {
		t.Errorf("etcd's database grew from %d to %d bytes in the second half: not bounded", half, end)
	}
	if end > int64(written)/3 {
		t.Errorf("etcd's database is %d bytes after %d written: history kept", end, written)
	}
}
