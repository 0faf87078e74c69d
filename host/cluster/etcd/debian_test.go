package etcd

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/matcher"
)

// debianEtcd is the etcd users run: Debian's etcd-server package
// (/usr/bin/etcd, 3.4 on bookworm), started as a process on loopback.
const debianEtcd = "/usr/bin/etcd"

// TestDebianEtcd runs membership, publishing and a crash against the
// etcd server Debian ships, which is older than the client this module
// builds with.
func TestDebianEtcd(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianEtcd); err != nil {
		testenv.Missing(t, "no Debian etcd: "+err.Error(), "apt-get install -y etcd-server")
	}
	// Its directory and ports, for Debian's etcd to run on.
	srv := clustertest.NewEtcd(t)
	cmd := exec.Command(debianEtcd,
		"--name", "test", "--data-dir", srv.Dir,
		"--listen-client-urls", srv.ClientURL.String(), "--advertise-client-urls", srv.ClientURL.String(),
		"--listen-peer-urls", srv.PeerURL.String(), "--initial-advertise-peer-urls", srv.PeerURL.String(),
		"--initial-cluster", "test="+srv.PeerURL.String(),
		"--heartbeat-interval", "10", "--election-timeout", "100", "--unsafe-no-fsync")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "ready to serve client requests") {
				close(ready)
				said = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-drained
	})
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("Debian's etcd did not say it was ready in 20s")
	}

	a, b, c := startNode(t, srv, "a"), startNode(t, srv, "b"), startNode(t, srv, "c")
	a.src.put(cluster.Summary{Session: "coder-1", Dirs: []string{"matcher"}})
	a.Changed("coder-1")
	waitView(t, b.View(), 5*time.Second, "a, b, c and a's coder-1", func() bool {
		return slices.Equal(memberIDs(b.View()), []string{"a", "b", "c"}) &&
			b.View().Decide("coder", matcher.Hints{Dirs: []string{"matcher"}}, time.Now(), nil).Winner == "a/coder-1"
	})
	c.crash()
	waitView(t, b.View(), 3*testTTL, "c gone", func() bool { return slices.Equal(memberIDs(b.View()), []string{"a", "b"}) })
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
