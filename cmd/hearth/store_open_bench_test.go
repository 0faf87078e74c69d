package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/host/store"
)

// manyRuns makes a data directory holding n completed runs of the
// two-task pipeline ranStore runs (2 KiB outputs, so the tables point
// into value logs), run by one engine, and returns its environment. With
// HEARTH_BENCH_DATA set the directory is that path, made once and kept:
// the same store can then be read by other builds of hearth.
func manyRuns(b *testing.B, n int) map[string]string {
	b.Helper()
	dir := b.TempDir()
	cfgPath := writeConfigIn(b, dir, `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}

pipeline "pair" {
  agent = "scripted"
  task "first" {
    prompt = "bigout:2048"
  }
  task "second" {
    prompt     = "bigout:2048"
    depends_on = ["first"]
  }
}
`)
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
		rh, err := h.StartRun(ctx, host.RunSpec{Pipeline: cfg.Pipeline("pair")})
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
// runs, in this process, next to raw Badger in the same run:
//
//   - side=hearth: the command (Main.Run), which opens the directory to
//     read, with the open-time accounting of every file (host/store's
//     open.go: the MANIFEST parsed, every table read in full, the value
//     logs' lengths checked), lists the runs and prints them;
//   - side=raw: Badger opened read-only on the same directory, every
//     run's head read (prefix r/), closed: no check, no decoding, no
//     printing.
func BenchmarkRunsList(b *testing.B) {
	env := manyRuns(b, 1000)
	b.Run("side=hearth", func(b *testing.B) {
		for b.Loop() {
			if code, _, errOut := run(b, env, "runs", "list"); code != 0 {
				b.Fatalf("runs list: exit %d: %s", code, errOut)
			}
		}
	})
	b.Run("side=raw", func(b *testing.B) {
		for b.Loop() {
			db, err := badger.Open(store.RawOptions(env["HEARTH_DATA_DIR"]).WithReadOnly(true))
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			err = db.View(func(txn *badger.Txn) error {
				it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("r/"), PrefetchValues: true})
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					if _, err := it.Item().ValueCopy(nil); err != nil {
						return err
					}
					n++
				}
				return nil
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil || n != 1000 {
				b.Fatalf("raw: %d runs, %v", n, err)
			}
		}
	})
}
