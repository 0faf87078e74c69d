package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host/internal/apipb"
)

// TokenName is the file in the data directory that holds the HTTP side's
// bearer token when the config names no token_file: `hearth serve`
// makes it, owner-only, on first start.
const TokenName = "token"

// The dashboard's sign-in. A person gets into the dashboard without
// pasting the token: `hearth serve` prints, and `hearth dashboard` asks
// the daemon for, a link to /login with a code the daemon signed. The
// code works once and not for long; redeemed, it sets a cookie the
// daemon signed too, which the browser sends with the page's own reads.
const (
	loginPath  = "/login"
	loginTTL   = 15 * time.Minute
	sessionTTL = 24 * time.Hour
	// The code and the cookie are expiry (8 bytes) | nonce (16) | MAC (32).
	nonceLen  = 16
	signedLen = 8 + nonceLen + sha256.Size
)

// What a signed value is for: a login code never passes as a cookie.
const (
	purposeLogin   = 'L'
	purposeSession = 'S'
)

// httpAuth decides who may use the HTTP side: a client with the bearer
// token (Authorization: Bearer, never a query parameter, which ends up in
// logs, histories and Referer headers), or the browser a person signed in
// with a login link, for the dashboard's reads only.
type httpAuth struct {
	token []byte
	// key signs login codes and cookies. It is made at each start, and
	// again when the sessions are revoked, and never leaves the process:
	// a restart or a revocation signs everyone out, and no file holds
	// anything that forges a cookie.
	key    atomic.Pointer[[32]byte]
	base   string // http://addr
	cookie string // the cookie's name, with the port: cookies ignore ports
	now    func() time.Time

	mu   sync.Mutex
	used map[[nonceLen]byte]time.Time // redeemed codes, until they expire
}

func newHTTPAuth(token, addr string, now func() time.Time) *httpAuth {
	a := &httpAuth{token: []byte(token), base: "http://" + addr, cookie: "hearth_session", now: now,
		used: map[[nonceLen]byte]time.Time{}}
	if _, port, err := net.SplitHostPort(addr); err == nil {
		a.cookie += "_" + port
	}
	a.rekey()
	return a
}

// rekey makes a new signing key: every code and cookie signed before is
// void.
func (a *httpAuth) rekey() {
	var k [32]byte
	if _, err := io.ReadFull(rand.Reader, k[:]); err != nil {
		panic("hearth: no randomness to sign the dashboard's logins with: " + err.Error())
	}
	a.key.Store(&k)
}

// Revoke signs every browser out and voids every login link not yet
// used.
func (a *httpAuth) Revoke() { a.rekey() }

// sign makes a value for purpose that expires at exp.
func (a *httpAuth) sign(purpose byte, exp time.Time) string {
	b := make([]byte, signedLen)
	binary.BigEndian.PutUint64(b, uint64(exp.Unix()))
	_, _ = rand.Read(b[8 : 8+nonceLen])
	copy(b[8+nonceLen:], a.mac(purpose, b[:8+nonceLen]))
	return base64.RawURLEncoding.EncodeToString(b)
}

func (a *httpAuth) mac(purpose byte, msg []byte) []byte {
	m := hmac.New(sha256.New, a.key.Load()[:])
	m.Write([]byte{purpose})
	m.Write(msg)
	return m.Sum(nil)
}

// verify checks a signed value for purpose: its MAC, and that it has
// not expired. It returns the value's nonce.
func (a *httpAuth) verify(purpose byte, v string) (nonce [nonceLen]byte, exp time.Time, ok bool) {
	if len(v) != base64.RawURLEncoding.EncodedLen(signedLen) {
		return nonce, exp, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(b) != signedLen || !hmac.Equal(b[8+nonceLen:], a.mac(purpose, b[:8+nonceLen])) {
		return nonce, exp, false
	}
	exp = time.Unix(int64(binary.BigEndian.Uint64(b)), 0)
	if !a.now().Before(exp) {
		return nonce, exp, false
	}
	copy(nonce[:], b[8:])
	return nonce, exp, true
}

// LoginLink makes a link that signs a browser in, once, until it expires.
func (a *httpAuth) LoginLink() (string, time.Time) {
	exp := a.now().Add(loginTTL).Truncate(time.Second)
	return a.base + loginPath + "?code=" + a.sign(purposeLogin, exp), exp
}

// redeem uses a login code up: true the first time a valid one is shown.
func (a *httpAuth) redeem(code string) bool {
	nonce, exp, ok := a.verify(purposeLogin, code)
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for n, e := range a.used {
		if !now.Before(e) {
			delete(a.used, n)
		}
	}
	if _, seen := a.used[nonce]; seen {
		return false
	}
	a.used[nonce] = exp
	return true
}

// bearer reports whether r carries an Authorization header, and whether
// it holds the token.
func (a *httpAuth) bearer(r *http.Request) (present, ok bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return false, false
	}
	got, found := strings.CutPrefix(h, "Bearer ")
	return true, found && subtle.ConstantTimeCompare([]byte(got), a.token) == 1
}

// signedIn reports whether r comes from a browser signed in to the
// dashboard, and may use its cookie: the cookie is for reading what the
// dashboard shows, from the dashboard itself. SameSite=Strict keeps it
// from cross-site requests, but a "site" ignores ports: a page another
// user serves on this machine's loopback is same-site. Sec-Fetch-Site
// tells them apart (same-origin includes the port); browsers that do not
// send it send no cookie cross-site either, by SameSite.
func (a *httpAuth) signedIn(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if strings.HasPrefix(r.URL.Path, "/hooks/") || r.URL.Path == mcpPath {
		return false
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	c, err := r.Cookie(a.cookie)
	if err != nil {
		return false
	}
	_, _, ok := a.verify(purposeSession, c.Value)
	return ok
}

// serveLogin redeems a login code: the browser gets its cookie and goes
// to the dashboard, without the code in its address bar or history.
func (s *Server) serveLogin(a *httpAuth) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if !a.redeem(r.URL.Query().Get("code")) {
			s.logger.Warn("refused a dashboard login: the code is invalid, expired or used", "peer", r.RemoteAddr)
			signInPage(w, "This sign-in link has expired or was used already: each one works once, for "+loginTTL.String()+".")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: a.cookie, Value: a.sign(purposeSession, a.now().Add(sessionTTL)), Path: "/",
			MaxAge: int(sessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	}
}

// refuse answers a request without credentials: JSON for programs, a
// page that says how to sign in for a person's browser.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, why string) {
	s.logRefused(&s.tokenRefusals, r.RemoteAddr, "refused an HTTP request without a valid token", "", "path", r.URL.Path, "why", why)
	w.Header().Set("WWW-Authenticate", `Bearer realm="hearth"`)
	if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/metrics" {
		signInPage(w, "This hearth daemon needs you to sign in.")
		return
	}
	httpError(w, http.StatusUnauthorized, "this hearth daemon needs its token: send Authorization: Bearer TOKEN (the token is in the daemon's token file, "+
		TokenName+" in its data directory unless server.token_file says otherwise), or sign the browser in with the link `hearth dashboard` prints")
}

// signInPage is a 401 page that tells a person how to get in.
func signInPage(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><title>hearth: sign in</title>
<p>%s</p>
<p>Run <code>hearth dashboard</code> (with the daemon's <code>--data-dir</code>) in a terminal: it opens a link that signs this browser in.</p>
`, html.EscapeString(msg))
}

// DashboardLogin makes a one-time link into the dashboard, or with
// revoke signs every browser out.
func (s *Server) DashboardLogin(_ context.Context, req *apipb.DashboardLoginRequest) (*apipb.DashboardLoginReply, error) {
	if req.GetRevoke() {
		a := s.dash.Load()
		if a == nil {
			return nil, status.Error(codes.FailedPrecondition, "this daemon serves no dashboard (its http address is off): there is nobody to sign out")
		}
		a.Revoke()
		s.logger.Info("signed every dashboard browser out, and voided the sign-in links not yet used")
		return &apipb.DashboardLoginReply{}, nil
	}
	url, exp, err := s.loginLink()
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &apipb.DashboardLoginReply{Url: url, ExpiresUnixNano: exp.UnixNano()}, nil
}

// LoginLink makes a one-time link into the dashboard, as `hearth serve`
// prints at start; an error when there is no dashboard.
func (l *Listeners) LoginLink() (string, time.Time, error) { return l.s.loginLink() }

func (s *Server) loginLink() (string, time.Time, error) {
	a := s.dash.Load()
	if a == nil {
		return "", time.Time{}, errors.New("this daemon serves no dashboard (its http address is off); restart it with --http 127.0.0.1:7411")
	}
	url, exp := a.LoginLink()
	// In the zone a reply's expiry is read in, whatever clock made it.
	return url, exp.Local(), nil
}

// defaultToken returns TokenName in the data directory, made on first
// start: 32 random bytes, owner-only.
func defaultToken(dataDir string) (string, error) {
	path := filepath.Join(dataDir, TokenName)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create the data directory for the token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("create the token file: %w", err)
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("make a token: %w", err)
	}
	_, err = f.WriteString(base64.RawURLEncoding.EncodeToString(b) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("write the token file: %w", err)
	}
	return path, nil
}
