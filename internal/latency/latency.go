// Package latency measures calls in benchmarks by their distribution,
// not only their mean: the p50 and p99 that BENCHMARKS.md reports beside
// ns/op.
package latency

import (
	"slices"
	"testing"
	"time"
)

// Measure runs call b.N times and reports its p50 and p99 in
// microseconds (p50-µs, p99-µs). A call that fails fails the benchmark.
func Measure(b *testing.B, call func() error) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[min(len(times)-1, len(times)*99/100)].Microseconds()), "p99-µs")
}
