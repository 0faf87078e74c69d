package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
)

// fakeCluster is the seam between the daemon and its member of a
// cluster (api.Cluster), in states the test sets: the states that need
// a real cluster to go wrong (a host that fails the peer handshake,
// etcd unreachable) without one. cmd/hearth's
// TestClusterDashboardShowsTheHosts drives a real one.
type fakeCluster struct {
	mu       sync.Mutex
	members  hearth.Members
	forwards []hearth.ForwardInFlight
	err      error
}

func (f *fakeCluster) Members(context.Context) (hearth.Members, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.members, f.err
}

func (f *fakeCluster) Forwards(context.Context) ([]hearth.ForwardInFlight, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forwards, f.err
}

func (f *fakeCluster) set(change func(*fakeCluster)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// hostileName is what another host may publish as its host name: the
// page shows it as text, never as markup.
const hostileName = `<img src=x onerror="document.body.dataset.pwned=1">`

// threeHosts is a cluster as host a sees it: b drained for maintenance,
// c failing a's peer handshake, one task forwarded from a to b.
func threeHosts(now time.Time) *fakeCluster {
	load := func(l, c int) []hearth.AgentLoad {
		return []hearth.AgentLoad{{Name: "coder", Live: 1, Dormant: 2, Load: l, Capacity: c, MaxSessions: 4}}
	}
	return &fakeCluster{
		members: hearth.Members{Self: "a", Clustered: true, EtcdErr: "context deadline exceeded (etcd at 127.0.0.1:2379 does not answer)", Hosts: []hearth.Member{
			{ID: "a", Self: true, Addr: "10.0.0.1:7070", Started: now.Add(-time.Hour), ConfigHash: "h1", Sessions: 3, Agents: load(0, 1)},
			{ID: "b", Addr: "10.0.0.2:7070", Started: now.Add(-time.Hour), ConfigHash: "h1", Draining: hearth.DrainMaintenance, Sessions: 3, Agents: load(1, 1)},
			{ID: "c", Addr: "10.0.0.3:7070", Hostname: hostileName, Started: now.Add(-time.Hour), ConfigHash: "h2", Unhealthy: "peer handshake failed: x509: certificate signed by unknown authority", Sessions: 1, Agents: load(0, 1)},
		}},
		forwards: []hearth.ForwardInFlight{{Task: "t-fwd-1", Agent: "coder", From: "a", To: "b", Session: "s-b-1",
			Since: now.Add(-5 * time.Second), Started: now.Add(-9 * time.Second), Attempt: 2, State: hearth.ForwardSent}},
	}
}

// clusterGet reads /api/cluster with the daemon's token.
func clusterGet(t *testing.T, d *daemon) api.ClusterView {
	t.Helper()
	var v api.ClusterView
	if body := httpGet(t, "http://"+d.l.HTTP+"/api/cluster", d.token); json.Unmarshal([]byte(body), &v) != nil {
		t.Fatalf("/api/cluster is not a cluster view: %s", body)
	}
	return v
}

// TestClusterEndpoint: GET /api/cluster answers what the daemon's member
// lists, whole (members with their states, etcd's error, the forwards
// in flight); a host in no cluster answers clustered false with empty lists, not nulls; a member
// that fails to list is a 500 that says why. (Every credential form the
// route refuses: TestEveryRouteNeedsTheToken; the sign-in cookie:
// TestLoginLinkAndCookie.)
func TestClusterEndpoint(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	fc := threeHosts(now)
	d := startDaemon(t, &config.Config{}, func(o *api.Options) { o.Cluster = fc })
	v := clusterGet(t, d)
	if !reflect.DeepEqual(v.Members, fc.members) || !reflect.DeepEqual(v.Forwards, fc.forwards) {
		t.Errorf("/api/cluster answered\n%+v\n%+v\nwant\n%+v\n%+v", v.Members, v.Forwards, fc.members, fc.forwards)
	}

	fc.set(func(f *fakeCluster) { f.err = errors.New("the member is closed") })
	resp, body := request(t, d, route{"GET", "/api/cluster", nil}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+d.token) })
	if resp.StatusCode != http.StatusInternalServerError || !contains(body, "the member is closed") {
		t.Errorf("a member that fails: %s %s; want 500 saying why", resp.Status, body)
	}

	alone := startDaemon(t, &config.Config{})
	body = httpGet(t, "http://"+alone.l.HTTP+"/api/cluster", alone.token)
	if !contains(body, `"clustered":false`, `"hosts":[]`, `"forwards":[]`) {
		t.Errorf("a host in no cluster answers %s", body)
	}
}

// TestDashboardShowsTheCluster loads the dashboard in a real headless
// chromium over a daemon whose member the test controls, and checks the
// cluster view: every host with its state and why (this host, a drained
// one, one that fails the peer handshake; the names other hosts publish
// as text, never markup), its sessions and load per agent, the forward in flight, and the banner saying etcd is
// unreachable and the view stale; then, as the member's answers change
// (etcd back, b undrained, the forward done), the page follows without
// a reload. A host in no cluster says so in one line.
func TestDashboardShowsTheCluster(t *testing.T) {
	p := page{t, browser(t)}
	now := time.Now().UTC()
	fc := threeHosts(now)
	d := startDaemon(t, &config.Config{}, func(o *api.Options) { o.Cluster = fc })
	signInPage(t, p, d)

	p.wait("the etcd banner", "#cluster-etcd")
	p.waitText("why etcd is unreachable", "#cluster-etcd", "etcd is unreachable", "127.0.0.1:2379 does not answer", "may be stale")
	p.waitText("this host", `#hosts tr[data-host="a"][data-state="up"][data-self]`, "(this host)", "10.0.0.1:7070")
	p.waitText("the drained host", `#hosts tr[data-host="b"][data-state="draining"]`, "draining", "maintenance", "1/1 tasks")
	p.waitText("the unhealthy host", `#hosts tr[data-host="c"][data-state="unhealthy"]`, "unhealthy", "certificate signed by unknown authority", "config differs")
	if s := p.text(`#hosts tr[data-host="a"] td.sessions`); s != "3" {
		t.Errorf("this host shows %q sessions; want 3", s)
	}
	p.waitText("c's host name, as text", `#hosts tr[data-host="c"]`, hostileName)
	if pwned := p.eval(`document.body.dataset.pwned || ""`); pwned != "" || p.count(`#hosts img`) != 0 {
		t.Errorf("a host name another host published ran as markup")
	}
	p.waitText("a's load", `#hosts tr[data-host="a"] .agent-load[data-agent="coder"]`, "0/1 tasks", "1 live, 2 dormant of 4")
	p.waitText("the forward in flight", `#forwards tr[data-task="t-fwd-1"][data-from="a"][data-to="b"][data-state="sent"]`, "coder", "s-b-1", "attempt 2")
	if n := p.count("#hosts tbody tr"); n != 3 {
		t.Errorf("%d hosts shown; want 3", n)
	}
	p.screenshot("HEARTH_SCREENSHOT_CLUSTER") // HEARTH_SCREENSHOT_CLUSTER=cluster.png keeps it

	// etcd answers again, b is undrained, the forward is done.
	fc.set(func(f *fakeCluster) {
		f.members.EtcdErr = ""
		f.members.Hosts[1].Draining = ""
		f.forwards = nil
	})
	p.do("etcd reachable again", chromedp.WaitNotVisible(chromedp.CSS("#cluster-etcd")))
	p.wait("b taking work again", `#hosts tr[data-host="b"][data-state="up"]`)
	p.wait("no forward in flight", "#forwards-empty")
	if n := p.count("#forwards tbody tr"); n != 0 {
		t.Errorf("%d forwards shown after they ended; want none", n)
	}

	alone := startDaemon(t, &config.Config{})
	signInPage(t, p, alone)
	p.waitText("that the host is in no cluster", "#cluster-none", "Not in a cluster")
	if n := p.count("#hosts tbody tr"); n != 0 {
		t.Errorf("a host in no cluster shows %d hosts", n)
	}
}

// signInPage opens d's dashboard in p, signed in with a one-time link.
func signInPage(t *testing.T, p page, d *daemon) {
	t.Helper()
	link, _, err := d.l.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	p.do(fmt.Sprintf("the page of %s", d.l.HTTP), chromedp.Navigate(link))
	p.wait("its live connection", "#live.on")
}
