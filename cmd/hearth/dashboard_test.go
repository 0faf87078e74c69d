package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSignsTheDashboardIn: hearth serve makes the HTTP side's token
// in the data directory (owner-only) and prints a sign-in link; hearth
// dashboard asks the daemon for another; each signs a browser in once,
// and the API refuses anyone without the token or the cookie.
func TestServeSignsTheDashboardIn(t *testing.T) {
	s := serve(t, nil)
	if want := filepath.Join(s.dataDir, "token"); s.tokenFile != want {
		t.Fatalf("serve printed the token file %q; want %q", s.tokenFile, want)
	}
	fi, err := os.Stat(s.tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v; want mode 0600", fi, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string) *http.Response {
		t.Helper()
		resp, err := noRedirect.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("http://" + s.http + "/api/snapshot"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the snapshot without the token: %s", resp.Status)
	}
	if !strings.HasPrefix(s.login, "http://"+s.http+"/login?code=") {
		t.Fatalf("serve printed the sign-in link %q", s.login)
	}
	if resp := get(s.login); resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("the printed link: %s, %d cookies; want 303 with the cookie", resp.Status, len(resp.Cookies()))
	}

	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}
	code, out, errOut := run(t, env, "dashboard")
	link := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(link, "http://"+s.http+"/login?code=") || link == s.login || !strings.Contains(errOut, "signs you in once") {
		t.Fatalf("hearth dashboard: %d %q %q", code, out, errOut)
	}
	if resp := get(link); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("hearth dashboard's link: %s", resp.Status)
	}
	if resp := get(link); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("hearth dashboard's link, twice: %s", resp.Status)
	}
	code, out, _ = run(t, env, "dashboard", "--json")
	var j dashboardLink
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || !strings.HasPrefix(j.URL, "http://"+s.http+"/login?code=") || j.Expires.IsZero() {
		t.Errorf("hearth dashboard --json: %d %s", code, out)
	}
}

func TestDashboardWithoutADaemon(t *testing.T) {
	code, _, errOut := run(t, nil, "dashboard")
	if code != 1 || !strings.Contains(errOut, "no daemon serves this data directory") || !strings.Contains(errOut, "serve") {
		t.Errorf("hearth dashboard without a daemon: %d %q", code, errOut)
	}
}
