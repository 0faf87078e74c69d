package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// TestClusterDashboardShowsTheHosts: two real hosts on an embedded etcd,
// host a serving its dashboard, opened in a real headless chromium with
// the link `hearth dashboard` prints. The cluster view shows both hosts
// (a as this host), b's session, a task of a's running on b as a forward
// in flight from a to b, and b drained for maintenance once `hearth
// hosts drain b` says so, without a reload. (The states only a broken
// cluster shows, a host failing the peer handshake and etcd unreachable,
// are host/api's TestDashboardShowsTheCluster, at the daemon's seam.)
func TestClusterDashboardShowsTheHosts(t *testing.T) {
	ctx, browserUp := clusterBrowser(t) // starts while the hosts do
	c := newTestCluster(t)
	c.dashboard = "a"
	a, hb := c.host("a"), c.host("b")
	dir := t.TempDir()
	hb.submit(t, "read:pkg/b/x.go;echo:warm", "pkg/b")
	a.placesOn(t, "pkg/b", "b")
	if err := <-browserUp; err != nil {
		t.Fatalf("start chromium: %v", err)
	}

	_, out, errOut := run(t, a.env, "dashboard", "--json")
	var link dashboardLink
	if json.Unmarshal([]byte(out), &link) != nil || link.URL == "" {
		t.Fatalf("hearth dashboard on a: %s %s", out, errOut)
	}
	seen := func(what, js string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[bool](js, chromedp.WithPollingMutation())); err != nil {
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("cluster").innerText`))
			t.Fatalf("a's dashboard never showed %s: %v; it shows:\n%s", what, err, shown)
		}
	}
	row := func(sel, text string) string {
		return fmt.Sprintf("(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()", sel, text)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(link.URL)); err != nil {
		t.Fatal(err)
	}
	seen("a as this host", row(`#hosts tr[data-host="a"][data-state="up"][data-self]`, "(this host)"))
	seen("b with its session", row(`#hosts tr[data-host="b"][data-state="up"] td.sessions`, "1"))
	seen("no forward in flight", `!document.getElementById("forwards-empty").hidden`)

	// A task of a's that belongs on b runs there, held until released.
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	done := make(chan *hearth.Outcome, 1)
	go func() {
		_, out, _ := run(t, a.env, "submit", "scripted", "read:pkg/b/y.go;touch:"+started+";wait:"+release+";echo:done", "--dir", "pkg/b", "--json")
		var o hearth.Outcome
		if json.Unmarshal([]byte(out), &o) != nil {
			done <- nil
			return
		}
		done <- &o
	}()
	seen("the forward in flight", row(`#forwards tr[data-from="a"][data-to="b"][data-state="sent"]`, "scripted"))
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o := <-done; o == nil || o.Decision.Host != "b" {
		t.Fatalf("the held task: %+v; want it run on b", o)
	}
	if _, err := os.Stat(started); err != nil {
		t.Fatalf("the held task never started: %v", err)
	}
	seen("the forward gone once done", `!document.getElementById("forwards-empty").hidden`)

	if code, out, errOut := run(t, a.env, "hosts", "drain", "b"); code != 0 {
		t.Fatalf("hosts drain b: %d %s %s", code, out, errOut)
	}
	seen("b drained", row(`#hosts tr[data-host="b"][data-state="draining"]`, "maintenance"))
	seen("a still up", row(`#hosts tr[data-host="a"][data-state="up"]`, "a"))
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("cluster-etcd").hidden`)); !hidden {
		t.Error("the etcd banner shows while etcd answers")
	}
}

// clusterBrowser starts a headless chromium for the test, kept off the
// network beyond loopback, as host/api's dashboard tests do. It starts
// in the background (it takes seconds on a loaded machine): up says
// when it is, or why not.
func clusterBrowser(t *testing.T) (ctx context.Context, up <-chan error) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1400))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	started := make(chan error, 1)
	t.Cleanup(func() {
		<-started
		cancelCtx()
		cancelAlloc()
	})
	// The first call starts the browser and ties it to this context.
	go func() { started <- chromedp.Do(ctx) }()
	result := make(chan error, 1)
	go func() { err := <-started; started <- err; result <- err }()
	return ctx, result
}
