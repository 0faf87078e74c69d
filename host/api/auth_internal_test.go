package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// clock is a settable clock for the expiry of codes and cookies.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLoginCodesAndCookiesExpire(t *testing.T) {
	t.Parallel()
	c := &clock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a := newHTTPAuth("correct-horse-battery-staple", "127.0.0.1:7411", c.now)
	if a.cookie != "hearth_session_7411" {
		t.Errorf("cookie name %q; want the port in it", a.cookie)
	}
	link, exp := a.LoginLink()
	if !exp.Equal(c.t.Add(loginTTL)) {
		t.Errorf("expires %v; want %v", exp, c.t.Add(loginTTL))
	}
	code := strings.TrimPrefix(link, "http://127.0.0.1:7411/login?code=")
	c.t = c.t.Add(loginTTL)
	if a.redeem(code) {
		t.Error("a code redeemed when it expired")
	}
	link, _ = a.LoginLink()
	code = strings.TrimPrefix(link, "http://127.0.0.1:7411/login?code=")
	c.t = c.t.Add(loginTTL - time.Second)
	if !a.redeem(code) {
		t.Fatal("a fresh code was refused")
	}
	if a.redeem(code) {
		t.Error("a code redeemed twice")
	}
	// Used codes are forgotten once they expire: the set does not grow.
	c.t = c.t.Add(time.Second)
	link, _ = a.LoginLink()
	a.redeem(strings.TrimPrefix(link, "http://127.0.0.1:7411/login?code="))
	if len(a.used) != 1 {
		t.Errorf("%d used codes remembered; want only the unexpired one", len(a.used))
	}

	cookie := a.sign(purposeSession, c.t.Add(sessionTTL))
	req := func() *http.Request {
		r := httptest.NewRequest("GET", "/api/snapshot", nil)
		r.AddCookie(&http.Cookie{Name: a.cookie, Value: cookie})
		return r
	}
	if !a.signedIn(req()) {
		t.Fatal("a fresh cookie was refused")
	}
	c.t = c.t.Add(sessionTTL)
	if a.signedIn(req()) {
		t.Error("a cookie passed after it expired")
	}
	if _, _, ok := a.verify(purposeLogin, a.sign(purposeSession, c.t.Add(time.Hour))); ok {
		t.Error("a cookie passed as a login code")
	}
}

// FuzzSignedValue: a login code or cookie read from a request never
// panics the daemon and never passes unless the daemon signed it.
func FuzzSignedValue(f *testing.F) {
	c := &clock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a := newHTTPAuth("correct-horse-battery-staple", "127.0.0.1:7411", c.now)
	good := a.sign(purposeSession, c.t.Add(time.Hour))
	f.Add(good, true)
	f.Add(good[:len(good)-1]+"A", false)
	// The same bytes, spelled with the last character's spare bits set:
	// only the canonical spelling passes.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	f.Add(good[:len(good)-1]+string(alphabet[strings.IndexByte(alphabet, good[len(good)-1])^1]), false)
	f.Add("", false)
	f.Add(strings.Repeat("A", len(good)), false)
	f.Add("%%%", false)
	f.Fuzz(func(t *testing.T, v string, _ bool) {
		_, _, ok := a.verify(purposeSession, v)
		if ok && v != good {
			t.Fatalf("%q passed; only the value the daemon signed may", v)
		}
		a.redeem(v)
	})
}

// BenchmarkHTTPAuth: what checking a request's credentials costs, on a
// small static file, against the same handler without a token (the raw
// layer) in the same run.
//
//	go test -run '^$' -bench HTTPAuth -count 3 ./host/api/
func BenchmarkHTTPAuth(b *testing.B) {
	const addr, token = "127.0.0.1:7411", "correct-horse-battery-staple-42"
	open := NewServer(Options{}).HTTPHandler("", addr)
	s := NewServer(Options{})
	guarded := s.HTTPHandler(token, addr)
	a := s.dash.Load()
	cookie := &http.Cookie{Name: a.cookie, Value: a.sign(purposeSession, time.Now().Add(time.Hour))}
	for _, c := range []struct {
		name string
		h    http.Handler
		cred func(*http.Request)
	}{
		{"none", open, func(*http.Request) {}},
		{"bearer", guarded, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }},
		{"cookie", guarded, func(r *http.Request) { r.AddCookie(cookie) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "http://"+addr+"/style.css", nil)
			req.Host = addr
			c.cred(req)
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d", rec.Code)
				}
			}
		})
	}
}
