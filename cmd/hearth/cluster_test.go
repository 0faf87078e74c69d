package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/internal/testcert"
	"github.com/hearth-dev/hearth/internal/testnet"
)

// The cluster's end-to-end tests: real `hearth serve` processes (the test
// binary as the hearth command), each on its own data directory and
// loopback port, authenticating one another with mutual TLS, sharing an
// embedded etcd on loopback.

// hostCerts makes a CA and one certificate every host presents, as server
// and as client, for 127.0.0.1.
func hostCerts(t testing.TB) (caFile, certFile, keyFile string) {
	t.Helper()
	return testcert.Write(t, t.TempDir())
}

// clusterHost is one `hearth serve` process of a test cluster.
type clusterHost struct {
	id, dataDir, config string
	cmd                 *exec.Cmd
	env                 map[string]string
	// log is the current process's stderr.
	log *watchWriter
	// http, when set, is where the host serves its dashboard and
	// /metrics; none when empty (--no-http).
	http string
}

// testCluster is an etcd and the hosts sharing it.
type testCluster struct {
	t                     testing.TB
	etcd                  *clustertest.Etcd
	ca, cert, key, agents string
	hosts                 map[string]*clusterHost
	// leaseTTL is the hosts' lease_ttl; "2s" when empty. dialTimeout
	// is their dial_timeout; "5s" when empty.
	leaseTTL, dialTimeout string
	// proxied: the other hosts reach each host through a proxy of its
	// own (proxies, by host ID), which can cut their connections.
	proxied bool
	proxies map[string]*proxy
	// publishInterval is the hosts' publish_interval; "100ms" when empty.
	publishInterval string
	// dashboard is the ID of a host that serves HTTP (its dashboard);
	// with http, each host serves HTTP (/metrics) on a port of its own.
	dashboard string
	http      bool
}

func (c *testCluster) hostsByID() map[string]*clusterHost { return c.hosts }

func newTestCluster(t testing.TB) *testCluster {
	c := &testCluster{t: t, etcd: clustertest.StartEtcd(t)}
	c.ca, c.cert, c.key = hostCerts(t)
	c.agents = `agent "scripted" {
  command = ["` + os.Args[0] + `"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
  workspace = "` + os.TempDir() + `"
  pool {
    max_sessions = 2
  }
}

pipeline "one" {
  agent = "scripted"
  task "only" {
    prompt = "echo:one"
  }
}
`
	return c
}

// host starts host id: a real process, killed at the test's end if it
// still runs.
func (c *testCluster) host(id string) *clusterHost {
	t := c.t
	t.Helper()
	port := testnet.FreePort(t)
	h := &clusterHost{id: id, dataDir: filepath.Join(t.TempDir(), "data")}
	httpLine := ""
	if c.http || id == c.dashboard {
		h.http = fmt.Sprintf("127.0.0.1:%d", testnet.FreePort(t))
		httpLine = fmt.Sprintf("  http   = %q\n", h.http)
	}
	h.config = filepath.Join(t.TempDir(), "hearth.hcl")
	advertise := fmt.Sprintf("127.0.0.1:%d", port)
	if c.proxied {
		p := newProxy(t, advertise)
		if c.proxies == nil {
			c.proxies = make(map[string]*proxy)
		}
		c.proxies[id] = p
		advertise = p.addr()
	}
	body := c.agents + fmt.Sprintf(`
server {
  listen = "127.0.0.1:%d"
%s  tls {
    cert_file      = %q
    key_file       = %q
    client_ca_file = %q
  }
}

cluster {
  endpoints        = [%q]
  advertise        = %q
  host_id          = %q
  lease_ttl        = %q
  dial_timeout     = %q
  publish_interval = %q
}
`, port, httpLine, c.cert, c.key, c.ca, c.etcd.ClientURL.String(), advertise, id, cmp.Or(c.leaseTTL, "2s"), cmp.Or(c.dialTimeout, "5s"), cmp.Or(c.publishInterval, "100ms"))
	if err := os.WriteFile(h.config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	h.env = map[string]string{"HEARTH_DATA_DIR": h.dataDir}
	h.start(t)
	if c.hosts == nil {
		c.hosts = make(map[string]*clusterHost)
	}
	c.hosts[id] = h
	return h
}

// start starts the host's process and returns once it is in the cluster.
func (h *clusterHost) start(t testing.TB) {
	t.Helper()
	argv := []string{"--data-dir", h.dataDir, "--config", h.config, "serve"}
	if h.http == "" {
		argv = append(argv, "--no-http")
	}
	args, _ := json.Marshal(argv)
	h.cmd = exec.Command(os.Args[0])
	h.cmd.Env = append(os.Environ(), "HEARTH_TEST_MAIN="+string(args), "GORACE=atexit_sleep_ms=0")
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := newWatchWriter("")
	h.cmd.Stderr = stderr
	h.log = stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := h.cmd
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(stdout)
	joined := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "cluster    host "+h.id) {
			joined = true
			break
		}
	}
	if !joined {
		t.Fatalf("host %s did not join the cluster: %s", h.id, stderr)
	}
	go io.Copy(io.Discard, stdout)
}

// kill9 kills the host's process as a crash would.
func (h *clusterHost) kill9(t testing.TB) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// hosts is `hearth hosts list --json` through h.
func (h *clusterHost) hosts(t testing.TB) hearth.Members {
	t.Helper()
	code, out, errOut := run(t, h.env, "hosts", "list", "--json")
	var hs hearth.Members
	if code != 0 || json.Unmarshal([]byte(out), &hs) != nil {
		t.Fatalf("hosts list on %s: %d %s %s", h.id, code, out, errOut)
	}
	return hs
}

// until polls h's view of the cluster until ok holds for it: the view
// changes through etcd's watch, which the CLI cannot wait on. A listing
// by a host out of the cluster (EtcdErr set) is the cluster as it last
// saw it, which proves nothing about seeing it now: only untilOut
// looks at those.
func (h *clusterHost) until(t testing.TB, what string, ok func(hearth.Members) bool) hearth.Members {
	t.Helper()
	return h.untilListed(t, what, func(hs hearth.Members) bool { return hs.EtcdErr == "" && ok(hs) })
}

func (h *clusterHost) untilListed(t testing.TB, what string, ok func(hearth.Members) bool) hearth.Members {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		hs := h.hosts(t)
		if ok(hs) {
			return hs
		}
		if time.Now().After(deadline) {
			t.Fatalf("host %s: %s: not within 15s; it sees %+v", h.id, what, hs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// idle says m's published record shows no task running: its sessions'
// summaries, written in the same transaction, show the same.
func idle(m hearth.Member) bool {
	for _, a := range m.Agents {
		if a.Load != 0 {
			return false
		}
	}
	return true
}

func memberOf(hs hearth.Members, id string) (hearth.Member, bool) {
	for _, m := range hs.Hosts {
		if m.ID == id {
			return m, true
		}
	}
	return hearth.Member{}, false
}

// placesOn waits until h places a task about dir on host: the view
// changes through etcd's watch, which the CLI cannot wait on, so h is
// asked where the task would go until it says so.
func (h *clusterHost) placesOn(t testing.TB, dir, host string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, out, _ := run(t, h.env, "place", "scripted", "--dir", dir, "--json")
		var d hearth.Decision
		if json.Unmarshal([]byte(out), &d) == nil && d.Host == host {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never places %s on %s: %s", h.id, dir, host, out)
		}
	}
}

// submit submits prompt with hints dirs to h and returns the outcome.
func (h *clusterHost) submit(t testing.TB, prompt string, dirs ...string) *hearth.Outcome {
	t.Helper()
	args := []string{"submit", "scripted", prompt, "--json"}
	for _, d := range dirs {
		args = append(args, "--dir", d)
	}
	code, out, errOut := run(t, h.env, args...)
	var o hearth.Outcome
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil {
		t.Fatalf("submit to %s: %d %s %s", h.id, code, out, errOut)
	}
	return &o
}

// TestClusterPlacesOnTheHostWithTheContext: a task submitted to host a
// whose context lives on host c runs on c; `hosts list` shows every host
// with its sessions; killing c with kill -9 removes its sessions from
// placement within the lease TTL, and the next such task spawns
// elsewhere; `runs list` through a host shows the owners, c as gone.
func TestClusterPlacesOnTheHostWithTheContext(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	a, b, hc := c.host("a"), c.host("b"), c.host("c")

	// c learns the strings package.
	warm := hc.submit(t, "read:pkg/strings/builder.go;read:pkg/strings/reader.go;echo:warm", "pkg/strings")
	if warm.Decision.Host != "" || warm.Decision.Action != hearth.ActionSpawned {
		t.Fatalf("the first task on c: %+v, want a new session on c itself", warm.Decision)
	}
	a.until(t, "c's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "c")
		return ok && m.Sessions == 1 && idle(m) && len(hs.Hosts) == 3
	})

	// Submitted to a, it runs on c's warm session.
	o := a.submit(t, "read:pkg/strings/compare.go;echo:second", "pkg/strings")
	if o.Decision.Host != "c" || o.Session != warm.Session || o.Result.Output != "second" {
		t.Fatalf("submitted to a: ran on %s of host %q (%s), want %s of c", o.Session, o.Decision.Host, o.Decision.Reason, warm.Session)
	}
	// Place through b says the same, without running anything, once b
	// sees c's session idle again.
	b.until(t, "c's session is idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "c")
		return ok && m.Sessions == 1 && idle(m)
	})
	code, out, _ := run(t, b.env, "place", "scripted", "--dir", "pkg/strings", "--json")
	var d hearth.Decision
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Host != "c" || d.Session != warm.Session {
		t.Fatalf("place through b: %d %s", code, out)
	}

	// hosts list shows the three, with their addresses and sessions.
	code, out, _ = run(t, a.env, "hosts", "list")
	for _, want := range []string{"HOST", "a *", "b ", "c ", "127.0.0.1:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("hosts list: %d, want %q in\n%s", code, want, out)
		}
	}
	// Their files differ (ports, IDs), their agents and guards do not.
	if strings.Contains(out, "configs differ") {
		t.Fatalf("hosts list says the configs differ:\n%s", out)
	}

	// A run started on c stays c's; runs list through a shows it with
	// its owner.
	if code, out, errOut := run(t, hc.env, "run", hc.config, "one", "-q"); code != 0 {
		t.Fatalf("run on c: %d %s %s", code, out, errOut)
	}
	owned := func(state string) {
		t.Helper()
		code, out, errOut := run(t, a.env, "runs", "list", "--json")
		var runs []struct {
			Pipeline   string `json:"pipeline"`
			Owner      string `json:"owner"`
			OwnerState string `json:"owner_state"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 ||
			runs[0].Pipeline != "one" || runs[0].Owner != "c" || runs[0].OwnerState != state {
			t.Fatalf("runs list through a: %d %s %s; want run one of c, %s", code, out, errOut, state)
		}
	}
	owned("up")

	// c dies: within the lease TTL a sees it leave, and the next strings
	// task spawns on a or b.
	hc.kill9(t)
	a.until(t, "c leaves", func(hs hearth.Members) bool { _, ok := memberOf(hs, "c"); return !ok })
	o = a.submit(t, "echo:third", "pkg/strings")
	if o.Decision.Host == "c" || o.Decision.Action != hearth.ActionSpawned || o.Result.Output != "third" {
		t.Fatalf("after c died: %+v", o.Decision)
	}
	// Its run is still listed, its owner gone.
	owned("gone")
	code, out, _ = run(t, a.env, "runs", "list")
	if code != 0 || !strings.Contains(out, "c (gone: as listed ") {
		t.Fatalf("runs list through a after c died: %d\n%s", code, out)
	}
}

// TestClusterEtcdDownAndBack: with etcd stopped for longer than the lease
// TTL, a host keeps serving its own work (placing locally); when etcd is
// back the hosts register again, republish, and placement across them
// resumes.
func TestClusterEtcdDownAndBack(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	a, hb := c.host("a"), c.host("b")
	warm := hb.submit(t, "read:pkg/os/file.go;echo:warm", "pkg/os")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m)
	})

	c.etcd.Stop()
	// The lease runs out: a no longer knows who is alive, places alone,
	// and says etcd does not answer; it lists the cluster as it last saw
	// it (not checked here: a host whose watch saw the other's lease
	// expire first, as etcd shut down, last saw itself alone); so does b.
	a.untilListed(t, "a places alone", func(hs hearth.Members) bool { return hs.EtcdErr != "" })
	hb.untilListed(t, "b places alone", func(hs hearth.Members) bool { return hs.EtcdErr != "" })
	// About another package: a placement records its hints against the
	// session it chose, and a's session would then know pkg/os too.
	o := a.submit(t, "echo:alone", "pkg/io")
	if o.Decision.Host != "" || o.Result.Output != "alone" {
		t.Fatalf("with etcd down: %+v", o.Decision)
	}

	c.etcd.Start()
	a.until(t, "b is back", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m) && len(hs.Hosts) == 2
	})
	// b's warm session wins again (a's own session is fresher, but
	// knows nothing of pkg/os: b's does).
	// b's record may be the one its old lease kept through etcd's
	// restart; b takes forwarded tasks once it registered again, which
	// is when it sees the cluster again (until then it refuses them).
	hb.until(t, "b registered again", func(hs hearth.Members) bool { return len(hs.Hosts) == 2 })
	o = a.submit(t, "read:pkg/os/file.go;echo:back", "pkg/os")
	if o.Decision.Host != "b" || o.Session != warm.Session || o.Result.Output != "back" {
		t.Fatalf("with etcd back: ran on %s of %q: %s", o.Session, o.Decision.Host, o.Decision.Reason)
	}
}

// TestClusterServeWhileEtcdDown: `hearth serve` starts while etcd does
// not answer, says so, serves locally (a task runs, `hosts list` shows
// the host alone), and joins when etcd answers: a host started then sees
// it, and it sees that host.
func TestClusterServeWhileEtcdDown(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	c.dialTimeout = "1s"
	c.etcd.Stop()
	a := c.host("a")
	// The warning is on stderr, which is copied apart from the stdout
	// line that said a serves: wait for it.
	a.log.wait(t, "out of its cluster, serving locally until etcd")
	hs := a.hosts(t)
	if !hs.Clustered || len(hs.Hosts) != 1 || !hs.Hosts[0].Self || hs.EtcdErr == "" {
		t.Errorf("hosts list on a without etcd: %+v", hs)
	}
	if o := a.submit(t, "echo:alone", "pkg/os"); o.Decision.Host != "" || o.Result.Output != "alone" {
		t.Fatalf("a task on a without etcd: %+v", o)
	}

	c.etcd.Start()
	b := c.host("b")
	for _, h := range []*clusterHost{a, b} {
		h.until(t, "a and b see each other", func(hs hearth.Members) bool {
			_, hasA := memberOf(hs, "a")
			_, hasB := memberOf(hs, "b")
			return hasA && hasB
		})
	}
}

// TestClusterDrain: `hosts drain b` through a marks b drained: every
// host lists it so, a task whose context is on b runs on a instead;
// `hosts undrain b` sends such tasks to b again. Then b is stopped with
// SIGTERM while it runs a forwarded task: it drains (listed "shutting
// down", the next such task runs on a), the forwarded task completes on
// b, once, and b leaves and exits cleanly.
func TestClusterDrain(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	a, hb := c.host("a"), c.host("b")
	dir := t.TempDir()
	warm := hb.submit(t, "read:pkg/net/http/server.go;echo:warm", "pkg/net/http")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m)
	})
	draining := func(want string) func(hearth.Members) bool {
		return func(hs hearth.Members) bool {
			m, ok := memberOf(hs, "b")
			return ok && m.Draining == want
		}
	}

	code, out, errOut := run(t, a.env, "hosts", "drain", "b", "--json")
	var dm hearth.Member
	if code != 0 || json.Unmarshal([]byte(out), &dm) != nil || dm.ID != "b" || dm.Draining != hearth.DrainMaintenance {
		t.Fatalf("hosts drain b: %d %s %s", code, out, errOut)
	}
	a.until(t, "a lists b drained", draining(hearth.DrainMaintenance))
	hb.until(t, "b lists itself drained", draining(hearth.DrainMaintenance))
	if _, out, _ := run(t, a.env, "hosts", "list"); !regexp.MustCompile(`(?m)^b +draining: maintenance `).MatchString(out) {
		t.Errorf("hosts list does not mark b drained:\n%s", out)
	}
	if o := a.submit(t, "read:pkg/net/http/server.go;echo:drained", "pkg/net/http"); o.Decision.Host != "" {
		t.Errorf("with b drained, b's context went to %q: %s", o.Decision.Host, o.Decision.Reason)
	}
	if code, out, errOut := run(t, a.env, "hosts", "undrain", "b"); code != 0 || !strings.Contains(out, "host b undrained") {
		t.Fatalf("hosts undrain b: %d %s %s", code, out, errOut)
	}
	a.until(t, "a lists b taking work", draining(""))
	hb.until(t, "b lists itself taking work", draining(""))

	// SIGTERM while b runs a forwarded task. Its context is one only b
	// knows (a's session learnt pkg/net/http meanwhile).
	warm = hb.submit(t, "read:pkg/os/file.go;echo:warm", "pkg/os")
	a.placesOn(t, "pkg/os", "b")
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	done := a.submitAsync(t, "read:pkg/os/file.go;touch:"+started+";wait:"+release+";echo:done", "pkg/os")
	deadline := time.Now().Add(20 * time.Second)
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		if time.Now().After(deadline) {
			t.Fatal("the forwarded task never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := hb.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a.until(t, "a lists b shutting down", draining(hearth.DrainShutdown))
	if o := a.submit(t, "read:pkg/os/file.go;echo:meanwhile", "pkg/os"); o.Decision.Host != "" {
		t.Errorf("with b shutting down, b's context went to %q: %s", o.Decision.Host, o.Decision.Reason)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.o == nil {
		t.Fatalf("the forwarded task failed while b drained: %s", r.out)
	}
	if r.o.Decision.Host != "b" || r.o.Session != warm.Session || r.o.Result.Output != "done" {
		t.Fatalf("the forwarded task ran on %s of host %q (want b's %s): %s", r.o.Session, r.o.Decision.Host, warm.Session, r.o.Decision.Reason)
	}
	if err := hb.cmd.Wait(); err != nil {
		t.Errorf("b after SIGTERM: %v\n%s", err, hb.log)
	}
	if strings.Contains(hb.log.String(), "lost the cluster lease") {
		t.Errorf("b's forwarded task was fenced by its own shutdown:\n%s", hb.log)
	}
	a.until(t, "b left", func(hs hearth.Members) bool { _, ok := memberOf(hs, "b"); return !ok })
}

// TestClusterForwardSurvivesAHostKilledMidTask: a host killed while it
// runs a forwarded task leaves the cluster when its lease expires; the
// forwarding host places the task again elsewhere, where it completes
// once. The result comes back to the caller as if nothing happened.
func TestClusterForwardSurvivesAHostKilledMidTask(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	// The agents' workspace, which holds the task's files: a directory
	// of its own (testCluster.workspace).
	dir := t.TempDir()
	c.workspace(dir)
	a, hb := c.host("a"), c.host("b")
	hb.submit(t, "read:pkg/net/http/server.go;echo:warm", "pkg/net/http")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m)
	})

	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	done := a.submitAsync(t, "touch:"+started+";wait:"+release+";echo:done", "pkg/net/http")
	waitFile := func(p string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := os.Stat(p); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFile(started) // it runs on b
	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}
	hb.kill9(t)
	waitFile(started) // placed again, on a, after b's lease expired
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.o == nil {
		t.Fatalf("the forwarded task failed: %s", r.out)
	}
	if r.o.Decision.Host != "" || r.o.Result.Output != "done" {
		t.Fatalf("after b died mid-task: ran on %s host %q: %s", r.o.Session, r.o.Decision.Host, r.o.Decision.Reason)
	}
}

// TestClusterForwardInterruptedByARestart: a host killed while it runs a
// forwarded task and started again at once, within its lease, on the same
// data directory, still knows it accepted the task (its store says so)
// and answers the forwarding host's question with "interrupted", not
// "never seen"; the forwarding host places the task again without it,
// and the task completes once, on the other host. The restarted host
// never starts it again.
func TestClusterForwardInterruptedByARestart(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	// Long enough that b is back before it could be taken for gone: the
	// forwarding host must hear b's own answer.
	c.leaseTTL = "10s"
	dir := t.TempDir() // the agents' workspace: see TestClusterForwardSurvivesAHostKilledMidTask
	c.workspace(dir)
	a, hb := c.host("a"), c.host("b")
	hb.submit(t, "read:pkg/net/http/server.go;echo:warm", "pkg/net/http")
	a.until(t, "b's session is published, idle", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "b")
		return ok && m.Sessions == 1 && idle(m)
	})

	ran, release := filepath.Join(dir, "ran"), filepath.Join(dir, "release")
	done := a.submitAsync(t, "append:"+ran+"=started;wait:"+release+";echo:done", "pkg/net/http")
	starts := func() int {
		b, _ := os.ReadFile(ran)
		return strings.Count(string(b), "started")
	}
	waitStarts := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for starts() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the task started %d times, waiting for %d", starts(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitStarts(1) // on b
	hb.kill9(t)
	if _, err := hb.cmd.Process.Wait(); err != nil {
		t.Fatal(err)
	}
	hb.start(t) // the same data directory, config and address
	a.log.wait(t, "a host stopped a forwarded task before it finished")
	waitStarts(2) // placed again, on a
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.o == nil {
		t.Fatalf("the forwarded task failed: %s", r.out)
	}
	if r.o.Decision.Host != "" || r.o.Result.Output != "done" {
		t.Fatalf("after b restarted mid-task: ran on %s host %q: %s", r.o.Session, r.o.Decision.Host, r.o.Decision.Reason)
	}
	if n := starts(); n != 2 {
		t.Fatalf("the task started %d times, want twice: on b before it died, then on a", n)
	}
	if !strings.Contains(a.log.String(), "host b accepted task "+r.o.TaskID) {
		t.Errorf("a's log does not hold b's own answer about the task:\n%s", a.log)
	}
}

// TestConfigHash: hosts whose configs differ only in their listeners and
// cluster block hash alike; another guard makes another hash.
func TestConfigHash(t *testing.T) {
	t.Parallel()
	load := func(body string) *config.Config {
		t.Helper()
		cfg, err := config.Load(writeConfig(t, body), config.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	agent := "agent \"a\" {\n  command = [\"/bin/true\"]\n  workspace = \"/srv\"\n}\n"
	a := load(agent + "server {\n  listen = \"127.0.0.1:7001\"\n  token_file = \"t\"\n}\ncluster {\n  endpoints = [\"http://127.0.0.1:2379\"]\n  host_id = \"a\"\n}\n")
	b := load(agent + "server {\n  listen = \"127.0.0.1:7002\"\n  token_file = \"t\"\n}\ncluster {\n  endpoints = [\"http://127.0.0.1:2379\"]\n  host_id = \"b\"\n}\n")
	c := load(agent + "guard \"no-rm\" {\n  hook = \"pre_tool_use\"\n  condition = \"tool == 'Bash'\"\n  action = \"deny\"\n  message = \"no\"\n}\n")
	if configHash(a) != configHash(b) {
		t.Errorf("configs that differ only in server and cluster blocks hash apart: %s %s", configHash(a), configHash(b))
	}
	if configHash(a) == configHash(c) {
		t.Errorf("a config with a guard hashes like one without: %s", configHash(a))
	}
}

// TestServeClusterErrors: a cluster block without the hosts' mutual TLS,
// or with no etcd answering, stops `hearth serve` with an error that says
// what to set; a daemon without a cluster block says so in hosts list,
// and hosts list without a daemon says to start one.
func TestServeClusterErrors(t *testing.T) {
	t.Parallel()
	dead := fmt.Sprintf("http://127.0.0.1:%d", testnet.FreePort(t))
	port := testnet.FreePort(t)
	for _, tc := range []struct {
		name, config, want string
	}{
		{"no tls", fmt.Sprintf("server {\n  listen = \"127.0.0.1:%d\"\n  token_file = %q\n}\ncluster {\n  endpoints = [%q]\n}\n",
			port, writeToken(t), dead), "cluster mode needs the hosts' API over mutual TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.config)
			code, _, errOut := run(t, map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "d")}, "--config", cfg, "serve", "--no-http")
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("serve: exit %d, stderr:\n%s\nwant %q", code, errOut, tc.want)
			}
		})
	}

	env := map[string]string{"HEARTH_DATA_DIR": filepath.Join(t.TempDir(), "d")}
	if code, _, errOut := run(t, env, "hosts", "list"); code != 2 || !strings.Contains(errOut, "start one with hearth serve") {
		t.Fatalf("hosts list without a daemon: %d %s", code, errOut)
	}
	s := serve(t, env)
	code, out, _ := run(t, env, "hosts", "list")
	if code != 0 || !strings.Contains(out, "not in a cluster") {
		t.Fatalf("hosts list of a daemon without a cluster block: %d %s", code, out)
	}
	code, out, _ = run(t, env, "hosts", "list", "--json")
	var hs hearth.Members
	if code != 0 || json.Unmarshal([]byte(out), &hs) != nil || hs.Clustered {
		t.Fatalf("hosts list --json: %d %s", code, out)
	}
	s.stop(t)
}

func writeToken(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClusterSeesAPlacementBeforeThePublishInterval: at a publish
// interval of a minute, a placement on host a is in host b's view at
// once, with the task's hints recorded against the session it chose
// before any tool use of the agent names them (the task only echoes):
// the next task about the same directory, submitted to b, runs on a's
// session. Without it, b would learn of the session a minute later.
func TestClusterSeesAPlacementBeforeThePublishInterval(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	c.publishInterval = "1m"
	a, b := c.host("a"), c.host("b")
	a.until(t, "both hosts joined", func(hs hearth.Members) bool { return len(hs.Hosts) == 2 })

	first := a.submit(t, "echo:first", "pkg/fast")
	if first.Decision.Host != "" || first.Decision.Action != hearth.ActionSpawned || first.ToolUses != 0 {
		t.Fatalf("the first task on a: %+v, %d tool uses; want a new session on a itself, no tool use", first.Decision, first.ToolUses)
	}
	b.until(t, "a's session is published, idle, well within the publish interval", func(hs hearth.Members) bool {
		m, ok := memberOf(hs, "a")
		return ok && m.Sessions == 1 && idle(m)
	})
	o := b.submit(t, "echo:second", "pkg/fast")
	if o.Decision.Host != "a" || o.Session != first.Session || o.Result.Output != "second" {
		t.Fatalf("submitted to b: ran on %s of host %q (%s), want %s of a", o.Session, o.Decision.Host, o.Decision.Reason, first.Session)
	}
}

// TestClusterRunsShowThroughAnyHost: a run stays with the host that
// started it, yet `runs show` through another host shows it as its owner
// has it, naming the owner (text and --json); an unknown ID is "no such
// run" as on one host; a change (cancel) through another host says which
// host owns the run; with the owner dead, show names it as unreachable.
func TestClusterRunsShowThroughAnyHost(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t)
	a, b := c.host("a"), c.host("b")
	if code, out, errOut := run(t, a.env, "run", a.config, "one", "-q"); code != 0 {
		t.Fatalf("run on a: %d %s %s", code, out, errOut)
	}
	code, out, errOut := run(t, a.env, "runs", "list", "--json")
	var runs []hearth.RunInfo
	if code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 1 {
		t.Fatalf("runs list through a: %d %s %s", code, out, errOut)
	}
	id := runs[0].ID

	// Through a, its own run: no owner named.
	code, out, errOut = run(t, a.env, "runs", "show", id, "--json")
	var own hearth.RunDetail
	if code != 0 || json.Unmarshal([]byte(out), &own) != nil || own.ID != id || own.Owner != "" || strings.Contains(out, `"owner"`) {
		t.Fatalf("runs show through a: %d %s %s; want a's own run without an owner", code, out, errOut)
	}
	// Through b, as a has it, naming a; by a prefix too.
	for _, ref := range []string{id, id[:len(id)-2]} {
		code, out, errOut = run(t, b.env, "runs", "show", ref, "--json")
		var d hearth.RunDetail
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.ID != id || d.Owner != "a" ||
			d.Pipeline != "one" || d.Status != hearth.RunCompleted || len(d.TaskList) != 1 || d.TaskList[0].Name != "only" ||
			d.Config != own.Config || !d.Created.Equal(own.Created) {
			t.Fatalf("runs show %s --json through b: %d %s %s; want a's run as a has it, owner a", ref, code, out, errOut)
		}
	}
	code, out, errOut = run(t, b.env, "runs", "show", id)
	if code != 0 || !strings.Contains(out, "run "+id+" (pipeline one") || !strings.Contains(out, ") on host a\n") || !strings.Contains(out, "completed") {
		t.Fatalf("runs show through b: %d\n%s%s; want a's run, on host a", code, out, errOut)
	}
	// Its outputs are read through a: b says so rather than show none.
	if code, _, errOut = run(t, b.env, "runs", "show", id, "--outputs"); code == 0 || !strings.Contains(errOut, "through host a") {
		t.Fatalf("runs show --outputs through b: %d %s; want an error sending to host a", code, errOut)
	}
	// An ID no host has: no such run, as on one host.
	if code, _, errOut = run(t, b.env, "runs", "show", "no-such-run-x"); code == 0 || !strings.Contains(errOut, `no such run "no-such-run-x"`) {
		t.Fatalf("runs show of an unknown run through b: %d %s; want no such run", code, errOut)
	}
	// A change goes to the owner: b says which host that is.
	if code, _, errOut = run(t, b.env, "runs", "cancel", id); code == 0 || !strings.Contains(errOut, "send this to host a, which owns it") {
		t.Fatalf("runs cancel through b: %d %s; want an error naming owner a", code, errOut)
	}

	// a dies: b names it as unreachable rather than saying no such run.
	a.kill9(t)
	code, _, errOut = run(t, b.env, "runs", "show", id)
	if code == 0 || !strings.Contains(errOut, "run "+id+" is on host a, which is unreachable") {
		t.Fatalf("runs show through b with a dead: %d %s; want owner a unreachable", code, errOut)
	}
}
