package api_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/testenv"
	"github.com/hearth-dev/hearth/sdk"
)

// browser starts a headless chromium for the test. The flags keep it off
// the network beyond loopback: this machine reaches nothing else.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testenv.Chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1400),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first call starts the browser and ties it to its context: on
	// this one, not on a deadline's, which would close the browser when
	// it ends.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// page drives the dashboard in the browser; every wait has a deadline
// and fails the test with what it was waiting for.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) deadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, 20*time.Second)
}

func (p page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("the dashboard never showed %s: %v", what, err)
	}
}

// wait waits until an element matching the CSS selector is visible.
func (p page) wait(what, sel string) {
	p.t.Helper()
	p.do(what, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// waitText waits until the element sel shows every one of want: the
// page redraws on each event, and a fingerprint lands a redraw after its
// session.
func (p page) waitText(what, sel string, want ...string) {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	js := fmt.Sprintf("(() => { const e = document.querySelector(%q); return !!e && %s; })()", sel, func() string {
		var conds []string
		for _, w := range want {
			conds = append(conds, fmt.Sprintf("e.textContent.includes(%q)", w))
		}
		return strings.Join(conds, " && ")
	}())
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingMutation())); err != nil {
		p.t.Fatalf("the dashboard never showed %s (%v): %s", what, want, p.text(sel))
	}
}

func (p page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (p page) eval(js string) string {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func (p page) count(sel string) int {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		p.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func (p page) attr(sel, name string) string {
	p.t.Helper()
	ctx, cancel := p.deadline()
	defer cancel()
	a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil {
		p.t.Fatalf("attribute %s of %s: %v", name, sel, err)
	}
	return a.Value
}

// TestDashboardShowsTheHostLive loads the dashboard from a real daemon in
// a real headless chromium, makes things happen through the API, and
// checks that the page shows them as they happen: the placement with its
// score bars, the session, a run's graph with each task's state, and
// today's counts. Not parallel: it reads a node right after waiting for
// it, and a live update that re-renders the list in between fails the
// read ("No node with given id found"), which a sibling test's load made
// happen.
func TestDashboardShowsTheHostLive(t *testing.T) {
	p := page{t, browser(t)}
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})

	// Without signing in, the page says how to; with the link the daemon
	// makes (as hearth serve prints, and hearth dashboard asks for), the
	// browser gets in, and the link's code leaves the address bar.
	p.do("its sign-in page", chromedp.Navigate("http://"+d.l.HTTP+"/"))
	p.waitText("how to sign in", "body", "hearth dashboard")
	link, _, err := d.l.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	p.do("its page", chromedp.Navigate(link))
	p.wait("its live connection", "#live.on")
	if loc := p.eval("location.href"); loc != "http://"+d.l.HTTP+"/" {
		t.Errorf("signed in at %s; want the dashboard's address, without the code", loc)
	}
	if c := p.eval("document.cookie"); c != "" {
		t.Errorf("the page's script sees the cookie %q; it must be HttpOnly", c)
	}
	if empty := p.text("#decisions-empty"); !contains(empty, "No placement yet") {
		t.Errorf("the empty dashboard says %q; want that nothing was placed yet", empty)
	}

	// A task placed now appears without reloading the page.
	out, err := d.c.Submit(context.Background(), hearth.Task{Agent: "coder", Name: "read-cart", Prompt: "read:src/cart/cart.go",
		Hints: sdk.Hints{Files: []string{"src/cart/cart.go"}, Technologies: []string{"go"}}})
	if err != nil {
		t.Fatal(err)
	}
	decision := fmt.Sprintf(`#decisions li[data-task=%q][data-action="spawned"]`, out.TaskID)
	session := fmt.Sprintf(`#sessions tr[data-session=%q][data-status="live"]`, out.Session)
	p.wait("the placement", decision)
	p.wait("the session", session)
	p.waitText("the session's fingerprint", session+" .fp", "src/cart", "go", "1 files")
	if reason := p.text(decision + " > div.muted"); !contains(reason, "spawned "+out.Session) {
		t.Errorf("decision reason %q", reason)
	}

	// A second task is reused: its candidate's score shows as a bar of
	// factor segments, with the threshold marked.
	out2, err := d.c.Submit(context.Background(), hearth.Task{Agent: "coder", Prompt: "read:src/cart/cart.go",
		Hints: sdk.Hints{Files: []string{"src/cart/cart.go"}, Technologies: []string{"go"}}})
	if err != nil {
		t.Fatal(err)
	}
	bar := fmt.Sprintf(`#decisions li[data-task=%q][data-action="reused"] .stack[data-candidate=%q]`, out2.TaskID, out.Session)
	p.wait("the reuse's score bars", bar)
	if n, th := p.count(bar+" .seg"), p.count(bar+" .threshold"); n != 5 || th != 1 {
		t.Errorf("%d factor segments and %d threshold marks in the bar; want 5 and 1", n, th)
	}

	// A run: its graph fills in as its tasks succeed, its row reaches
	// 100%, and today's count goes up.
	rs, err := d.c.StartRun(context.Background(), hearth.RunSpec{RunOptions: hearth.RunOptions{Config: pipelineFile(t, t.TempDir(), "budget = 5")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf(`#runs tr[data-run=%q][data-status="completed"]`, rs.ID())
	p.wait("the completed run", run)
	p.wait("the run's last task, succeeded", `#graph g.node[data-task="d"][data-status="succeeded"]`)
	nodes, edges := p.count(`#graph g.node[data-status="succeeded"]`), p.count("#graph path.edge")
	progress, quality, cost := p.attr(run+" td[data-progress]", "data-progress"), p.text(run+" td:nth-child(6)"), p.text(run+" td:nth-child(5)")
	const wantCost = "0.50 / 5.00\n1,200 in (800 cached), 150 out; 3 tool calls" // the cost, and the tokens under it
	if nodes != 4 || edges != 4 || progress != "100" || quality != "0.90" || cost != wantCost {
		t.Errorf("graph: %d succeeded nodes, %d edges; row: progress %s, quality %s, cost %q; want 4, 4, 100, 0.90, %q",
			nodes, edges, progress, quality, cost, wantCost)
	}
	if today := p.text("#today-completed"); today != "1" {
		t.Errorf("completed today: %q; want 1", today)
	}

	p.screenshot("HEARTH_SCREENSHOT")
}

// screenshot keeps the page, for a person to look at, in the file the
// environment variable env names (HEARTH_SCREENSHOT=dash.png), if any.
func (p page) screenshot(env string) {
	p.t.Helper()
	shot := os.Getenv(env)
	if shot == "" {
		return
	}
	ctx, cancel := p.deadline()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestDashboardReconnectsWhenItFallsBehind: a page whose event stream
// stops being read (here, a proxy between it and the daemon stops
// passing the stream on, as a stalled network would) is dropped by the
// daemon once it has missed too much, and told so; the page then opens a
// new stream and shows what it missed.
//
// Nothing in it depends on the machine's speed: the stream is held, not
// slowed, for as long as publishing takes, and let go only after; the
// daemon's write on the held stream waits for that (HoldStalledStreams)
// instead of giving up after sseWrite, which under load publishing 2,000
// events can pass.
func TestDashboardReconnectsWhenItFallsBehind(t *testing.T) {
	api.HoldStalledStreams(t, 10*time.Minute)
	p := page{t, browser(t)}
	d := claudeCodeDaemon(t)
	// The browser reaches the daemon through a proxy that can hold its
	// event stream.
	proxy, stream := stallingProxy(t, d.l.HTTP)
	link, _, err := d.l.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	link = strings.Replace(link, d.l.HTTP, proxy, 1)
	p.do("its page", chromedp.Navigate(link))
	p.wait("its live connection", "#live.on")
	if n := p.count("#sessions tbody tr"); n != 0 {
		t.Fatalf("%d sessions shown before any; want none", n)
	}

	// Far more events than the held stream may miss: each denial of a
	// .env read is one guard.fired event. What the daemon's stream holds
	// before its write blocks (its socket's 64 KB send buffer, the
	// proxy's 8 KB receive buffer and 4 KB reader, a few hundred events
	// at most) plus its 256-event buffer plus the 1,024 it may miss is
	// well under 2,000 (TestEventStreamDropsASubscriberThatFallsBehind
	// counts them).
	stream.hold()
	ref := hearth.ExternalRef{Agent: "claude-code", Session: ccSession, Workspace: "/home/dev/shop"}
	call := sdk.ToolCall{Tool: "Read", Kind: sdk.KindRead, Paths: []string{"/home/dev/shop/.env"}}
	for range 2000 {
		if v, err := d.h.CheckExternalToolUse(context.Background(), ref, call); err != nil || v.Allow {
			t.Fatalf("a read of .env: %+v, %v; want it denied", v, err)
		}
	}

	// The stream flows again: the page finds it was dropped, reconnects,
	// and shows the session it missed.
	stream.release()
	p.wait("that it was dropped", `body[data-dropped="1"]`)
	p.wait("its live connection, again", "#live.on")
	p.waitText("the session it missed", "#sessions tbody", "claude-code")
}

// stallingProxy is a reverse proxy to the daemon's HTTP address target,
// on loopback, whose event streams (/api/events) can be held: while held
// it reads nothing more of the daemon's side of a stream, so that the
// daemon's writes block once the sockets between them are full, as they
// would over a stalled link. It reads the daemon's side through a small
// socket buffer, so that they fill soon.
func stallingProxy(t *testing.T, target string) (addr string, stream *valve) {
	t.Helper()
	stream = &valve{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: "http", Host: target})
			r.Out.Host = target // the daemon answers for its own address only
			r.Out.Header.Del("Origin")
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetReadBuffer(4096)
				}
				return c, err
			},
		},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.URL.Path == "/api/events" {
				resp.Body = &heldReader{ReadCloser: resp.Body, v: stream}
			}
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(func() {
		// A held stream's reader waits for the valve: open it, so that
		// no goroutine is left behind. The event stream never ends on its
		// own: Close would wait for it.
		stream.release()
		srv.CloseClientConnections()
		srv.Close()
	})
	return strings.TrimPrefix(srv.URL, "http://"), stream
}

// valve holds readers (hold) until it is opened again (release).
type valve struct {
	mu   sync.Mutex
	open chan struct{} // nil when open; closed on release
}

func (v *valve) hold() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.open == nil {
		v.open = make(chan struct{})
	}
}

func (v *valve) release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.open != nil {
		close(v.open)
		v.open = nil
	}
}

func (v *valve) wait() {
	v.mu.Lock()
	c := v.open
	v.mu.Unlock()
	if c != nil {
		<-c
	}
}

// heldReader reads only while its valve is open.
type heldReader struct {
	io.ReadCloser
	v *valve
}

func (r *heldReader) Read(b []byte) (int, error) {
	r.v.wait()
	return r.ReadCloser.Read(b)
}
