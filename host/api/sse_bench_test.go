package api_test

import (
	"bufio"
	"context"
	"net/http"
	"runtime"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
)

// BenchmarkEventStreamMemory measures what an open event stream that
// never reads costs the daemon: the heap in use, after a collection, with
// 50 such streams open against none (issue 13: 50 silent subscribers grew
// the daemon from 98 to 308 MB).
func BenchmarkEventStreamMemory(b *testing.B) {
	const streams = 50
	d := startDaemon(b, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// Only the first round is clean: the streams a round closes end on the
	// daemon's side some time after, inside the next round's measure.
	per := -1.0
	for range b.N {
		before := heap()
		var bodies []*http.Response
		for range streams {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+d.l.HTTP+"/api/events", nil)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+d.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			// The first line is written once the subscription exists.
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, resp)
		}
		if per < 0 {
			per = float64(int64(heap())-int64(before)) / streams
		}
		for _, r := range bodies {
			r.Body.Close()
		}
	}
	b.ReportMetric(per, "heap-B/stream")
}
