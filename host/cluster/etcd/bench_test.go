package etcd

import (
	"fmt"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
)

// BenchmarkClusterPublish measures the etcd writes of one host under a
// steady stream of tool-use reports: each op is one report (a new file
// in one of 50 sessions), paced at 5,000 reports a second, published by
// the node's own ticker. Writes are counted by etcd's revision (one per
// write transaction) and set beside the documented bound, one
// transaction per publish interval.
//
//	go test -run '^$' -bench ClusterPublish -benchtime 15000x ./host/cluster/etcd/
func BenchmarkClusterPublish(b *testing.B) {
	for _, interval := range []time.Duration{cluster.MinPublishInterval, cluster.DefaultPublishInterval} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			etcd := clustertest.StartEtcd(b)
			a := startNode(b, etcd, "a", func(o *Options) { o.Config.PublishInterval = interval })
			const sessions, perSecond = 50, 5000
			period := time.Second / perSecond
			start, st := etcd.Revision(), a.Stats()
			began := time.Now()
			b.ResetTimer()
			for i := range b.N {
				if ahead := time.Until(began.Add(time.Duration(i) * period)); ahead > 0 {
					time.Sleep(ahead)
				}
				id := fmt.Sprintf("coder-%02d", i%sessions)
				a.src.put(cluster.Summary{Session: id, Files: []string{fmt.Sprintf("pkg%d/f%d.go", i%7, i)}, Dirs: []string{fmt.Sprintf("pkg%d", i%7)}})
				a.Changed(id)
			}
			elapsed := time.Since(began)
			b.StopTimer()
			writes := etcd.Revision() - start
			end := a.Stats()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reports/s")
			b.ReportMetric(float64(writes)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(time.Second)/float64(interval), "bound-writes/s")
			b.ReportMetric(float64(end.Puts-st.Puts)/elapsed.Seconds(), "keys/s")
		})
	}
}
