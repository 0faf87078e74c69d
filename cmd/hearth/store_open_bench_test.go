package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
)

// manyRuns makes a data directory holding n completed runs of the
// two-task pipeline ranStore runs (2 KiB outputs, so the tables point
// into value logs), run by one engine, and returns its environment. With
// HEARTH_BENCH_DATA set the directory is that path, made once and kept:
// the same store can then be read by other builds of hearth.
func manyRuns(b *testing.B, n int) map[string]string {
	b.Helper()
	dir := b.TempDir()
	cfgPath := pairConfig(b, dir)
	data := filepath.Join(dir, "data")
	if d := os.Getenv("HEARTH_BENCH_DATA"); d != "" {
		data = d
		if _, err := os.Stat(filepath.Join(d, "MANIFEST")); err == nil {
			return map[string]string{"HEARTH_DATA_DIR": data, "HEARTH_CONFIG": cfgPath}
		}
	}
	cfg, err := config.Load(cfgPath, config.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg.DataDir = data
	h, err := engine.New(engine.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for range n {
		rh, err := h.StartRun(ctx, hearth.RunSpec{Pipeline: cfg.Pipeline("pair")})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rh.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		rh.Close()
	}
	if err := h.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return map[string]string{"HEARTH_DATA_DIR": data, "HEARTH_CONFIG": cfgPath}
}

// BenchmarkRunsList is hearth runs list on a data directory with 1,000
// runs, in this process (Main.Run): the directory opened to read, with
// the open-time accounting of every file (host/store's open.go), the runs
// listed and printed. BenchmarkOpenCheck in host/store sets the check
// alone beside raw Badger.
func BenchmarkRunsList(b *testing.B) {
	env := manyRuns(b, 1000)
	for b.Loop() {
		if code, _, errOut := run(b, env, "runs", "list"); code != 0 {
			b.Fatalf("runs list: exit %d: %s", code, errOut)
		}
	}
}
