package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// rssWorkload writes what a busy host writes in a while: 200,000 tool-use
// events in batches of 256, and 2,000 session records with 500-file
// fingerprints; then reads a page of 1,000 events back, as `hearth
// sessions show` does.
const (
	rssEvents   = 200_000
	rssSessions = 2_000
)

// runRSSHelper is the subprocess side of BenchmarkRSS: it runs the
// workload with the store's settings ("tuned") or raw Badger's defaults
// ("defaults"), then prints its resident set size and peak, in kB.
func runRSSHelper(kind, dir string) error {
	ctx := context.Background()
	rec := record.Session{Agent: "gotour", Files: make([]string, 500)}
	for i := range rec.Files {
		rec.Files[i] = fmt.Sprintf("src/pkg%03d/file_%03d.go", i/10, i)
	}
	batch := make([]hearth.Event, 256)
	switch kind {
	case "tuned":
		s, err := Open(dir, Write, Options{GCInterval: -1})
		if err != nil {
			return err
		}
		defer s.Close()
		for i := range batch {
			batch[i] = toolEvent("s-1")
		}
		for i := 0; i < rssEvents; i += len(batch) {
			if _, p := s.AppendBatch(batch); p.Wait(ctx) != nil {
				return p.Wait(ctx)
			}
		}
		for i := range rssSessions {
			rec.ID = fmt.Sprintf("gotour-%08d", i)
			s.SaveSession(rec)
		}
		if err := s.PutSession(ctx, rec); err != nil {
			return err
		}
		if _, err := s.Events("s-1", rssEvents/2, 1000); err != nil {
			return err
		}
	case "defaults":
		db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil))
		if err != nil {
			return err
		}
		defer db.Close()
		v, _ := encode(toolRecord("s-1"))
		for i := 0; i < rssEvents; i += 1024 {
			txn := db.NewTransaction(true)
			for j := i; j < i+1024; j++ {
				if err := txn.Set(seqKey("e/s-1/", uint64(j)), v); err != nil {
					return err
				}
			}
			if err := txn.Commit(); err != nil {
				return err
			}
		}
		sv, _ := encode(sessionToPB(rec))
		for i := range rssSessions {
			if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(fmt.Sprintf("s/%d", i)), sv) }); err != nil {
				return err
			}
		}
		if err := db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("e/s-1/"), PrefetchValues: true})
			defer it.Close()
			n := 0
			for it.Seek(seqKey("e/s-1/", rssEvents/2)); it.Valid() && n < 1000; it.Next() {
				n++
				if _, err := it.Item().ValueCopy(nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	kb := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			kb[strings.TrimSuffix(f[0], ":")] = f[1]
		}
	}
	fmt.Println("rss", kb["VmRSS"], "hwm", kb["VmHWM"], "anon", kb["RssAnon"], "file", kb["RssFile"])
	return nil
}

// BenchmarkRSS measures the resident memory of a process that ran the
// workload above against the store (Badger tuned for a small machine) and
// against raw Badger with its defaults, each in a fresh process. One op is
// one such process; the metrics are its RSS and peak RSS at the end.
func BenchmarkRSS(b *testing.B) {
	for _, kind := range []string{"defaults", "tuned"} {
		b.Run(kind, func(b *testing.B) {
			var rss, hwm, anon, file float64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "HEARTH_STORE_HELPER=rss-"+kind, "HEARTH_STORE_DIR="+b.TempDir())
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				sc := bufio.NewScanner(strings.NewReader(string(out)))
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 8 && f[0] == "rss" {
						for j, dst := range []*float64{&rss, &hwm, &anon, &file} {
							v, _ := strconv.ParseFloat(f[1+2*j], 64)
							*dst += v / 1024
						}
					}
				}
			}
			b.ReportMetric(rss/float64(b.N), "rss-MiB")
			b.ReportMetric(hwm/float64(b.N), "peak-rss-MiB")
			b.ReportMetric(anon/float64(b.N), "anon-MiB")
			b.ReportMetric(file/float64(b.N), "file-MiB")
		})
	}
}
