package api_test

import (
	"context"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/engine"
	"github.com/hearth-dev/hearth/sdk"
)

// BenchmarkClusterSubmit submits a one-step task to host a whose best
// session is on host b (placed across both hosts' sessions, forwarded
// over the TCP API with mutual TLS, run on b, the result back), next to
// a task whose best session is on a itself, in the same run. Both tasks
// run on warm sessions of the scripted agent; per op, p50 and p99.
//
//	go test -run '^$' -bench ClusterSubmit -benchtime 2000x ./host/api/
func BenchmarkClusterSubmit(b *testing.B) {
	dir := shortTempDir(b)
	caFile, certFile, keyFile := hostCert(b, dir)
	hb, _, _ := peerDaemon(b, "b", caFile, certFile, keyFile)
	ha, _, view := peerDaemon(b, "a", caFile, certFile, keyFile)
	ctx := context.Background()
	warm := func(d *daemon, file string) string {
		out, err := d.h.Submit(ctx, hearth.Task{Agent: "scripted", Prompt: "read:" + file})
		if err != nil {
			b.Fatal(err)
		}
		return out.Session
	}
	remote, local := warm(hb, "pkg/remote/x.go"), warm(ha, "pkg/local/y.go")
	// What etcd's watch would bring a: both records, b's summaries.
	src := func(d *daemon) engine.ClusterSource { return d.h.ClusterSource() }
	changes := []cluster.Change{
		{Kind: cluster.KeyHost, Host: "a", Info: src(ha).Host()},
		{Kind: cluster.KeyHost, Host: "b", Info: src(hb).Host()},
	}
	for _, s := range src(hb).Sessions() {
		changes = append(changes, cluster.Change{Kind: cluster.KeySession, Host: "b", Summary: s})
	}
	view.Apply(1, changes)

	submit := func(dir, wantHost, wantSession string) func() {
		t := hearth.Task{Agent: "scripted", Prompt: "echo:ok", Hints: sdk.Hints{Directories: []string{dir}}}
		return func() {
			out, err := ha.h.Submit(ctx, t)
			if err != nil {
				b.Fatal(err)
			}
			if out.Decision.Host != wantHost || out.Session != wantSession || out.Result.Output != "ok" {
				b.Fatalf("ran on %s of %q (%s), want %s of %q", out.Session, out.Decision.Host, out.Decision.Reason, wantSession, wantHost)
			}
		}
	}
	b.Run("best=local", func(b *testing.B) { timed(b, submit("pkg/local", "", local)) })
	b.Run("best=remote", func(b *testing.B) { timed(b, submit("pkg/remote", "b", remote)) })
}
