package store

import (
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// BenchmarkValueChecksum measures what checking every value-log entry's
// CRC on read costs (the store reads with WithVerifyValueChecksum): 10,000
// values of 512 bytes (tool-use events' size, in the value log), written
// with the store's options, then read back in full with the check on and
// off, in the same run.
//
//	go test -run '^$' -bench ValueChecksum -count 5 ./host/store/
func BenchmarkValueChecksum(b *testing.B) {
	dir := b.TempDir()
	db, err := badger.Open(RawOptions(dir))
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 512)
	wb := db.NewWriteBatch()
	for i := range 10000 {
		if err := wb.Set([]byte(fmt.Sprintf("e/bench/%08d", i)), val); err != nil {
			b.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, verify := range []bool{false, true} {
		b.Run(fmt.Sprintf("verify=%t", verify), func(b *testing.B) {
			db, err := badger.Open(RawOptions(dir).WithVerifyValueChecksum(verify).WithReadOnly(true))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.ResetTimer()
			n := 0
			for range b.N {
				err := db.View(func(txn *badger.Txn) error {
					it := txn.NewIterator(badger.DefaultIteratorOptions)
					defer it.Close()
					for it.Rewind(); it.Valid(); it.Next() {
						if err := it.Item().Value(func(v []byte) error { n += len(v); return nil }); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "values/s")
		})
	}
}
