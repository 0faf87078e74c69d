package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
)

// The tests of what an operator sees of a cluster (docs/cluster.md,
// "Seeing the cluster"), apart from the cluster tests that share
// cluster_test.go.

// TestConfigHashComparesContent: the same config file in two directories
// (its command, workspace and read_paths relative to it, so that loading
// resolves them to different absolute paths) hashes alike; the same
// paths with another guard, another relative path, or the same relative
// path written as an absolute one elsewhere, hash apart (issue 26: the
// note "the hosts' configs differ" fired for identical configs in
// different directories).
func TestConfigHashComparesContent(t *testing.T) {
	const agent = "agent \"a\" {\n  command = [\"./bin/agent\", \"--flag\"]\n  workspace = \".\"\n  read_paths = [\"docs\"]\n}\n"
	const guard = "guard \"no-rm\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Bash'\"\n  action = \"deny\"\n  message = \"no\"\n}\n"
	load := func(dir, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(writeConfigIn(t, dir, body), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return configHash(cfg)
	}
	root := t.TempDir()
	a := load(filepath.Join(root, "a"), agent+guard)
	b := load(filepath.Join(root, "b", "deeper"), agent+guard)
	if a != b {
		t.Errorf("the same config in two directories hashes apart: %s %s", a, b)
	}
	for name, body := range map[string]string{
		"another guard":         agent + "guard \"no-rm\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Write'\"\n  action = \"deny\"\n  message = \"no\"\n}\n",
		"another relative path": "agent \"a\" {\n  command = [\"./bin/agent2\", \"--flag\"]\n  workspace = \".\"\n  read_paths = [\"docs\"]\n}\n" + guard,
		"an absolute workspace": "agent \"a\" {\n  command = [\"./bin/agent\", \"--flag\"]\n  workspace = \"/srv\"\n  read_paths = [\"docs\"]\n}\n" + guard,
		"no guard":              agent,
	} {
		if c := load(filepath.Join(root, "c-"+name), body); c == a {
			t.Errorf("%s: hashes as the first config does (%s)", name, a)
		}
	}
}

// TestClusterUnhealthyHost: host c joins with a certificate from another
// CA. a and b mark it unhealthy (and c them), list it so with the
// handshake's failure, and never place on it: a task about the package
// whose session is on c runs elsewhere, and no attempt went to c. Each
// host names c (ID, address, why) in one logged line when it turns
// unhealthy, not one per redial, and the refused handshakes are one
// warning per address on the refusing side. Restarted with the cluster's
// certificate, c answers again: one more line each, and it is up.
func TestClusterUnhealthyHost(t *testing.T) {
	c := newTestCluster(t)
	a, b := c.host("a"), c.host("b")
	good := []string{c.ca, c.cert, c.key}
	c.ca, c.cert, c.key = hostCerts(t) // another CA, and c's certificate from it
	bad := []string{c.ca, c.cert, c.key}
	hc := c.host("c")
	c.ca, c.cert, c.key = good[0], good[1], good[2]

	unhealthy := func(id string) func(hearth.Members) bool {
		return func(hs hearth.Members) bool {
			m, ok := memberOf(hs, id)
			return ok && strings.Contains(m.Unhealthy, "handshake") && m.State() == "unhealthy: "+m.Unhealthy
		}
	}
	a.until(t, "a marks c unhealthy", unhealthy("c"))
	b.until(t, "b marks c unhealthy", unhealthy("c"))
	hc.until(t, "c marks a unhealthy", unhealthy("a"))

	// c learns the strings package; a would place such a task on c's
	// session, were c healthy.
	if o := hc.submit(t, "read:pkg/strings/builder.go;echo:warm", "pkg/strings"); o.Decision.Host != "" {
		t.Fatalf("c could forward to a host it cannot handshake with: %+v", o.Decision)
	}
	a.until(t, "c's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "c")
		return ok && m.Sessions == 1 && idle(m)
	})
	for i := range 3 {
		o := a.submit(t, fmt.Sprintf("read:pkg/strings/builder.go;echo:here%d", i), "pkg/strings")
		if o.Decision.Host == "c" || slices.ContainsFunc(o.Decision.Attempts, func(at hearth.Attempt) bool { return at.Host == "c" }) {
			t.Fatalf("placement chose the unhealthy host c: %+v", o.Decision)
		}
	}
	code, out, _ := run(t, a.env, "hosts", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^c +unhealthy +127\.0\.0\.1:`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^host c at 127\.0\.0\.1:\d+ is unhealthy: the peer handshake`).MatchString(out) {
		t.Errorf("hosts list on a does not show c unhealthy and why:\n%s", out)
	}

	// c, restarted with the cluster's certificate, answers again.
	cfg, err := os.ReadFile(hc.config)
	if err != nil {
		t.Fatal(err)
	}
	for i := range bad {
		cfg = bytes.ReplaceAll(cfg, []byte(bad[i]), []byte(good[i]))
	}
	if err := os.WriteFile(hc.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	oldLog := hc.log
	if err := hc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = hc.cmd.Wait()
	hc.start(t)
	up := func(hs hearth.Members) bool { m, ok := memberOf(hs, "c"); return ok && m.State() == "up" }
	a.until(t, "a places on c again", up)
	b.until(t, "b places on c again", up)

	// One line per change of state, each naming the host, its address
	// and why: not one per redial or probe (every 2 s, for the seconds
	// above).
	count := func(log, substr string) int {
		n := 0
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, substr) && strings.Contains(l, "[WARN]") {
				n++
			}
		}
		return n
	}
	for _, h := range []*clusterHost{a, b} {
		log := h.log.String()
		for what, substr := range map[string]string{
			"unhealthy": "cannot work with a host of the cluster; it is left out of placement until it answers again: host=c addr=127.0.0.1:",
			"recovered": "a host of the cluster answers again; it is placed on again: host=c addr=127.0.0.1:",
		} {
			if n := count(log, substr); n != 1 {
				t.Errorf("host %s logged %d lines that c is %s, want 1:\n%s", h.id, n, what, log)
			}
		}
		if n := count(log, "refused a connection: TLS handshake failed"); n > 1 {
			t.Errorf("host %s warned of %d refused handshakes from c's one address, want at most 1:\n%s", h.id, n, log)
		}
	}
	for _, id := range []string{"a", "b"} {
		if n := count(oldLog.String(), "cannot work with a host of the cluster; it is left out of placement until it answers again: host="+id+" "); n != 1 {
			t.Errorf("c logged %d lines that %s is unhealthy, want 1:\n%s", n, id, oldLog)
		}
	}
	if !strings.Contains(a.log.String(), `why="the peer handshake with host c at 127.0.0.1:`) {
		t.Errorf("a's line does not say why c is unhealthy:\n%s", a.log)
	}
}

// TestClusterMetrics: after a task submitted to a is forwarded to b,
// /metrics of both real hosts has the cluster's series, and the forwarded
// task is one decision in hearth_decisions_total, on b, where it ran:
// a counts it as forwarded and as a forward sent that completed, b as a
// forward received that completed.
func TestClusterMetrics(t *testing.T) {
	c := newTestCluster(t)
	c.http = true
	a, hb := c.host("a"), c.host("b")
	hb.submit(t, "read:pkg/os/file.go;echo:warm", "pkg/os")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m) && len(hs.Hosts) == 2
	})
	if o := a.submit(t, "read:pkg/os/file.go;echo:forwarded", "pkg/os"); o.Decision.Host != "b" {
		t.Fatalf("the task was not forwarded to b: %+v", o.Decision)
	}
	scrape := func(h *clusterHost) string {
		t.Helper()
		token, err := config.ReadToken(filepath.Join(h.dataDir, api.TokenName))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", "http://"+h.http+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics of %s: %d %v", h.id, resp.StatusCode, err)
		}
		return string(b)
	}
	ma, mb := scrape(a), scrape(hb)
	for _, tc := range []struct {
		host, metrics string
		want          []string
	}{
		{"a", ma, []string{
			`hearth_cluster_decisions_total{ran="forwarded"} 1`,
			`hearth_cluster_decisions_total{ran="local"} 0`,
			`hearth_cluster_forwards_sent_total{outcome="completed"} 1`,
			`hearth_cluster_forwards_in_flight{direction="sent"} 0`,
			`hearth_cluster_replacements_total 0`,
			`hearth_cluster_lease_losses_total 0`,
			`hearth_cluster_members{state="all"} 2`,
			`hearth_cluster_members{state="unhealthy"} 0`,
			`hearth_cluster_etcd_reachable 1`,
		}},
		{"b", mb, []string{
			`hearth_cluster_decisions_total{ran="local"} 1`, // the warm-up
			`hearth_cluster_forwards_received_total{outcome="completed"} 1`,
			`hearth_cluster_forwards_in_flight{direction="received"} 0`,
			`hearth_decisions_total{action="reused",agent="scripted",outcome="reuse"} 1`,
		}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.metrics, w+"\n") {
				t.Errorf("/metrics of %s lacks %s", tc.host, w)
			}
		}
	}
	// One decision per task across the cluster: the warm-up's and the
	// forwarded task's, both on b; none on a.
	if strings.Contains(ma, "hearth_decisions_total{") {
		t.Errorf("a counted the forwarded task's decision too:\n%s", grepLines(ma, "hearth_decisions_total"))
	}
	if got := grepLines(mb, "hearth_decisions_total{"); strings.Count(got, "\n") != 2 {
		t.Errorf("b's decisions, want the spawn and the reuse:\n%s", got)
	}
	for _, m := range []string{ma, mb} {
		if !regexp.MustCompile(`(?m)^hearth_cluster_etcd_txns_total [1-9]`).MatchString(m) {
			t.Errorf("no etcd writes counted:\n%s", grepLines(m, "hearth_cluster_"))
		}
	}
	if t.Failed() {
		t.Logf("a:\n%s\nb:\n%s", grepLines(ma, "hearth_cluster_"), grepLines(mb, "hearth_cluster_"))
	}
}

// grepLines returns the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
