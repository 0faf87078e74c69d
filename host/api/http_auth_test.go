package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/config"
)

// route is one entry of the HTTP side's route table, as a test calls it.
type route struct {
	method, path string
	body         []byte
}

// routes is every route HTTPHandler registers (TestEveryRouteIsInTheTable
// holds the two equal), with a request that reaches it.
func routes(t testing.TB) map[string]route {
	return map[string]route{
		"GET /":                   {"GET", "/", nil},
		"GET /login":              {"GET", "/login", nil},
		"GET /api/snapshot":       {"GET", "/api/snapshot", nil},
		"GET /api/runs/{id}":      {"GET", "/api/runs/some-run", nil},
		"GET /api/cluster":        {"GET", "/api/cluster", nil},
		"GET /api/events":         {"GET", "/api/events", nil},
		"GET /metrics":            {"GET", "/metrics", nil},
		"POST /hooks/claude-code": {"POST", "/hooks/claude-code", payloads(t)["01-session-start"]},
		"GET /healthz":            {"GET", "/healthz", nil},
	}
}

// open routes need no credentials: /healthz says nothing, /login needs
// a code the daemon signed.
var openRoutes = []string{"GET /healthz", "GET /login"}

// TestEveryRouteIsInTheTable reads the routes http.go registers, so that
// a route added there without a test of its access fails here.
func TestEveryRouteIsInTheTable(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("http.go")
	if err != nil {
		t.Fatal(err)
	}
	table := routes(t)
	found := regexp.MustCompile(`mux\.Handle(?:Func)?\("([A-Z]+ /[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	found = append(found, []string{"", "GET /login"}) // registered as "GET "+loginPath
	if len(found) < 7 {
		t.Fatalf("found only %d routes in http.go; has the way routes are registered changed?", len(found))
	}
	for _, m := range found {
		if _, ok := table[m[1]]; !ok {
			t.Errorf("http.go registers %q, which the access tests do not call: add it to routes()", m[1])
		}
	}
}

// request sends r to the daemon with the credentials cred sets, without
// following redirects, and returns the status (a stream is closed once
// its headers are in).
func request(t testing.TB, d *daemon, r route, cred func(*http.Request)) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, "http://"+d.l.HTTP+r.path, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cred != nil {
		cred(req)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body []byte
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ = io.ReadAll(resp.Body)
	}
	return resp, string(body)
}

// TestEveryRouteNeedsTheToken is the second local user of issue 13, who
// read runs and the event stream and changed sessions with curl: a client
// without the token, with a wrong one, or with the right one in the query
// string gets 401 from every route that reads or changes state, loopback
// included, and changes nothing; with the token, every route answers.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	t.Parallel()
	d := claudeCodeDaemon(t)
	if d.token == "" {
		t.Fatal("the daemon made no token")
	}
	for name, r := range routes(t) {
		open := slices.Contains(openRoutes, name)
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				how  string
				cred func(*http.Request)
			}{
				{"no token", nil},
				{"a wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer not-the-token-of-this-daemon") }},
				{"the token in the query", func(r *http.Request) { r.URL.RawQuery = url.Values{"token": {d.token}}.Encode() }},
				{"the token as Basic", func(r *http.Request) { r.SetBasicAuth("hearth", d.token) }},
				{"the token as a cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hearth_session", Value: d.token}) }},
			} {
				resp, body := request(t, d, r, c.cred)
				switch {
				case name == "GET /healthz" && resp.StatusCode != http.StatusOK:
					t.Errorf("%s: %s; the health route is open", c.how, resp.Status)
				case name == "GET /login" && resp.StatusCode != http.StatusUnauthorized:
					t.Errorf("%s: %s; a login without a valid code is refused", c.how, resp.Status)
				case !open && resp.StatusCode != http.StatusUnauthorized:
					t.Errorf("%s: %s %s", c.how, resp.Status, body)
				case !open && strings.Contains(body, d.token):
					t.Errorf("%s: the refusal shows the token", c.how)
				}
			}
			resp, body := request(t, d, r, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+d.token) })
			if name == "GET /login" {
				return // the token is not a login code: refused above
			}
			if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 500 {
				t.Errorf("with the token: %s %s", resp.Status, body)
			}
		})
	}
	// The refused hook calls changed nothing: the only session is the
	// one the call with the token opened.
	sessions, err := d.c.Sessions(context.Background())
	if err != nil || len(sessions) != 1 {
		t.Errorf("sessions %+v, %v; want only the one the call with the token made", sessions, err)
	}
	if !contains(d.log.String(), "refused an HTTP request without a valid token", "peer=127.0.0.1") {
		t.Errorf("refusals not logged:\n%s", d.log)
	}
	// Many refusals above, all from 127.0.0.1: one warning.
	if n := strings.Count(d.log.String(), "refused an HTTP request without a valid token"); n != 1 {
		t.Errorf("%d warnings for refusals from one address, want 1:\n%s", n, d.log)
	}
}

// TestTheTokenFile: the daemon makes its token on first start, owner-only,
// keeps it across starts, and refuses it once others can read it.
func TestTheTokenFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	file := filepath.Join(d.dir, "token")
	if d.l.TokenFile != file {
		t.Fatalf("token file %q; want %q", d.l.TokenFile, file)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || len(d.token) < 40 {
		t.Errorf("token file mode %v, token of %d characters; want 0600 and 32 random bytes", fi.Mode().Perm(), len(d.token))
	}
	// Another start on the data directory takes the same token.
	dir := shortTempDir(t)
	l, err := d.srv.Listen(config.Server{Socket: filepath.Join(dir, "a.sock"), HTTP: "127.0.0.1:0"}, d.dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Close(context.Background())
	if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != d.token {
		t.Errorf("the second start changed the token")
	}
	// Readable by the group: refused, with the fix.
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	_, err = d.srv.Listen(config.Server{Socket: filepath.Join(dir, "b.sock"), HTTP: "127.0.0.1:0"}, d.dir)
	if err == nil || !contains(err.Error(), "can be read or changed by other users", "chmod 600 "+file) {
		t.Errorf("a token file of mode 0640: %v; want a refusal that says chmod 600", err)
	}
	// Without HTTP, no token is made.
	bare := filepath.Join(dir, "bare")
	l, err = d.srv.Listen(config.Server{Socket: filepath.Join(dir, "c.sock")}, bare)
	if err != nil {
		t.Fatal(err)
	}
	l.Close(context.Background())
	if _, err := os.Stat(filepath.Join(bare, "token")); !os.IsNotExist(err) {
		t.Errorf("a daemon without HTTP made a token: %v", err)
	}
}

// TestLoginLinkAndCookie: the one-time link signs a browser in with a
// cookie that is HttpOnly and SameSite=Strict, works once, and is good for
// the dashboard's reads from its own origin only: not for a hook call,
// not from a page on another port of the machine (same-site, not
// same-origin), not cross-site, not on another daemon.
func TestLoginLinkAndCookie(t *testing.T) {
	t.Parallel()
	d := claudeCodeDaemon(t)
	link, exp, err := d.l.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil || u.Host != d.l.HTTP || u.Path != "/login" || u.Query().Get("code") == "" || strings.Contains(link, d.token) {
		t.Fatalf("link %s: want http://%s/login?code=..., without the token", link, d.l.HTTP)
	}
	if exp.IsZero() {
		t.Errorf("the link has no expiry")
	}
	login := route{"GET", u.RequestURI(), nil}
	resp, body := request(t, d, login, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %s %s; want 303 to /", resp.Status, body)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.MaxAge <= 0 || strings.Contains(ck.Value, d.token) {
		t.Errorf("cookie %s; want HttpOnly, SameSite=Strict, Path=/, an expiry, and not the token", ck)
	}
	if resp, _ := request(t, d, login, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the link a second time: %s; want 401 (it works once)", resp.Status)
	}

	withCookie := func(c *http.Cookie, headers ...string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(c)
			for i := 0; i+1 < len(headers); i += 2 {
				r.Header.Set(headers[i], headers[i+1])
			}
		}
	}
	tampered := *ck
	tampered.Value = ck.Value[:len(ck.Value)-2] + "AA"
	codeAsCookie := *ck
	codeAsCookie.Value = u.Query().Get("code")
	hook := routes(t)["POST /hooks/claude-code"]
	snapshot := route{"GET", "/api/snapshot", nil}
	for _, tc := range []struct {
		name string
		r    route
		cred func(*http.Request)
		want int
	}{
		{"the snapshot", snapshot, withCookie(ck), http.StatusOK},
		{"the dashboard's own fetch", snapshot, withCookie(ck, "Sec-Fetch-Site", "same-origin", "Origin", "http://"+d.l.HTTP), http.StatusOK},
		{"a run", route{"GET", "/api/runs/nope", nil}, withCookie(ck), http.StatusNotFound},
		{"the cluster view", route{"GET", "/api/cluster", nil}, withCookie(ck), http.StatusOK},
		{"metrics", route{"GET", "/metrics", nil}, withCookie(ck), http.StatusOK},
		{"a hook call", hook, withCookie(ck), http.StatusUnauthorized},
		{"a hook call from the dashboard's origin", hook, withCookie(ck, "Sec-Fetch-Site", "same-origin"), http.StatusUnauthorized},
		{"a page on another port", snapshot, withCookie(ck, "Sec-Fetch-Site", "same-site"), http.StatusUnauthorized},
		{"a cross-site page", snapshot, withCookie(ck, "Sec-Fetch-Site", "cross-site"), http.StatusUnauthorized},
		{"a cross-origin fetch", snapshot, withCookie(ck, "Origin", "http://127.0.0.1:1"), http.StatusForbidden},
		{"a tampered cookie", snapshot, withCookie(&tampered), http.StatusUnauthorized},
		{"the login code as a cookie", snapshot, withCookie(&codeAsCookie), http.StatusUnauthorized},
		{"the cookie and a wrong token", snapshot, withCookie(ck, "Authorization", "Bearer wrong-wrong-wrong-wrong"), http.StatusUnauthorized},
	} {
		if resp, body := request(t, d, tc.r, tc.cred); resp.StatusCode != tc.want {
			t.Errorf("%s: %s %s; want %d", tc.name, resp.Status, body, tc.want)
		}
	}
	if sessions, _ := d.c.Sessions(context.Background()); len(sessions) != 0 {
		t.Errorf("a hook call with the cookie opened %d sessions", len(sessions))
	}

	// Another daemon signs with a key of its own: this cookie is nothing
	// to it, even under its name.
	other := claudeCodeDaemon(t)
	foreign := *ck
	_, port, _ := strings.Cut(other.l.HTTP, ":")
	foreign.Name = "hearth_session_" + port
	if resp, _ := request(t, other, snapshot, withCookie(&foreign)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another daemon's cookie: %s; want 401", resp.Status)
	}

	// Over the socket, the owner asks for a link of its own.
	link2, _, err := d.c.DashboardLogin(context.Background())
	if err != nil || link2 == link || !strings.HasPrefix(link2, "http://"+d.l.HTTP+"/login?code=") {
		t.Fatalf("DashboardLogin: %q, %v", link2, err)
	}
	u2, _ := url.Parse(link2)
	if resp, _ := request(t, d, route{"GET", u2.RequestURI(), nil}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the socket's link: %s", resp.Status)
	}
}

// TestDashboardLoginWithoutHTTP: a daemon without a dashboard says so,
// and how to get one.
func TestDashboardLoginWithoutHTTP(t *testing.T) {
	t.Parallel()
	dir := shortTempDir(t)
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}, DataDir: filepath.Join(dir, "data"),
		Server: config.Server{Socket: filepath.Join(dir, "data", config.SocketName)}})
	_, _, err := d.c.DashboardLogin(context.Background())
	if err == nil || !contains(err.Error(), "serves no dashboard", "--http") {
		t.Errorf("got %v; want an error saying there is no dashboard and how to serve one", err)
	}
}
