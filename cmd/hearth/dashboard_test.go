package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeSignsTheDashboardIn: hearth serve makes the HTTP side's token
// in the data directory (owner-only); hearth dashboard asks the daemon
// for a sign-in link, which signs a browser in once, and the API refuses
// anyone without the token or the cookie. Serve prints no link when its
// output is not a terminal (a log, a file: issue 25, finding 8, where
// another user read one from a log), and --revoke signs every browser
// out and voids the links not yet used.
func TestServeSignsTheDashboardIn(t *testing.T) {
	t.Parallel()
	s := serve(t, nil)
	if want := filepath.Join(s.dataDir, "token"); s.tokenFile != want {
		t.Fatalf("serve printed the token file %q; want %q", s.tokenFile, want)
	}
	fi, err := os.Stat(s.tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v; want mode 0600", fi, err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string, cookies ...*http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("http://" + s.http + "/api/snapshot"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the snapshot without the token: %s", resp.Status)
	}
	if strings.Contains(s.login, "code=") || !strings.Contains(s.login, "dashboard prints a sign-in link") {
		t.Fatalf("serve, its output piped, printed %q for signing in; want no link, and where to get one", s.login)
	}

	env := map[string]string{"HEARTH_DATA_DIR": s.dataDir}
	code, out, errOut := run(t, env, "dashboard")
	link := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(link, "http://"+s.http+"/login?code=") || !strings.Contains(errOut, "signs you in once") {
		t.Fatalf("hearth dashboard: %d %q %q", code, out, errOut)
	}
	resp := get(link)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("hearth dashboard's link: %s, %d cookies; want 303 with the cookie", resp.Status, len(resp.Cookies()))
	}
	cookie := resp.Cookies()[0]
	if resp := get(link); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("hearth dashboard's link, twice: %s", resp.Status)
	}
	if resp := get("http://"+s.http+"/api/snapshot", cookie); resp.StatusCode != http.StatusOK {
		t.Errorf("the snapshot with the cookie: %s", resp.Status)
	}
	code, out, _ = run(t, env, "dashboard", "--json")
	var j dashboardLink
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || !strings.HasPrefix(j.URL, "http://"+s.http+"/login?code=") || j.Expires.IsZero() {
		t.Errorf("hearth dashboard --json: %d %s", code, out)
	}

	code, _, errOut = run(t, env, "dashboard", "--revoke")
	if code != 0 || !strings.Contains(errOut, "signed every browser out") {
		t.Fatalf("hearth dashboard --revoke: %d %q", code, errOut)
	}
	if resp := get("http://"+s.http+"/api/snapshot", cookie); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the snapshot with a revoked cookie: %s", resp.Status)
	}
	if resp := get(j.URL); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a link made before the revocation: %s", resp.Status)
	}
}

func TestDashboardWithoutADaemon(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, nil, "dashboard")
	if code != 1 || !strings.Contains(errOut, "no daemon serves this data directory") || !strings.Contains(errOut, "serve") {
		t.Errorf("hearth dashboard without a daemon: %d %q", code, errOut)
	}
}

// TestExampleClaudeCodeHTTP replays the recorded session through the
// HTTP hooks examples/claude-code/settings-http.json wires, as Claude
// Code sends them: headers with $VAR filled in for the variables the
// hook lists in allowedEnvVars (an empty string for any other), the
// token from the daemon's token file in HEARTH_TOKEN. Without the token,
// every call is refused and nothing is tracked.
func TestExampleClaudeCodeHTTP(t *testing.T) {
	t.Parallel()
	dir := "../../examples/claude-code"
	s := serve(t, nil, "--config", filepath.Join(dir, "hearth.hcl"))
	tok, err := os.ReadFile(s.tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type           string            `json:"type"`
				URL            string            `json:"url"`
				Headers        map[string]string `json:"headers"`
				AllowedEnvVars []string          `json:"allowedEnvVars"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "settings-http.json"))
	if err != nil || json.Unmarshal(b, &settings) != nil {
		t.Fatalf("settings-http.json: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "payloads", "*.json"))
	post := func(env map[string]string) (denied, refused int) {
		for _, f := range files {
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p struct {
				Event string `json:"hook_event_name"`
			}
			_ = json.Unmarshal(payload, &p)
			if p.Event == "SessionStart" {
				// Claude Code runs no HTTP hook for it: the session's
				// first report attaches it.
				if _, ok := settings.Hooks[p.Event]; ok {
					t.Errorf("settings-http.json wires SessionStart, which Claude Code never sends to an HTTP hook")
				}
				continue
			}
			groups := settings.Hooks[p.Event]
			if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Type != "http" {
				t.Fatalf("settings-http.json wires %s to %+v; want one http hook", p.Event, groups)
			}
			h := groups[0].Hooks[0]
			url := strings.Replace(h.URL, "127.0.0.1:7411", s.http, 1)
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(payload)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range h.Headers {
				req.Header.Set(k, os.Expand(v, func(name string) string {
					for _, allowed := range h.AllowedEnvVars {
						if allowed == name {
							return env[name]
						}
					}
					return ""
				}))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusUnauthorized:
				refused++
			case resp.StatusCode != http.StatusOK || resp.Header.Get("X-Hearth-Error") != "":
				t.Errorf("%s: %s %s", f, resp.Status, resp.Header.Get("X-Hearth-Error"))
			case strings.Contains(string(body), `"permissionDecision":"deny"`):
				denied++
			}
		}
		return denied, refused
	}
	if denied, refused := post(map[string]string{}); refused != len(files)-1 || denied != 0 {
		t.Errorf("without HEARTH_TOKEN: %d of %d refused; want all but SessionStart's", refused, len(files)-1)
	}
	if denied, refused := post(map[string]string{"HEARTH_TOKEN": strings.TrimSpace(string(tok))}); refused != 0 || denied != 1 {
		t.Errorf("with HEARTH_TOKEN: %d refused, %d denied; want none refused and the .env read denied", refused, denied)
	}
}
