package api_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/host/config"
)

const token = "correct-horse-battery-staple-42"

func TestTCPNeedsTheToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := &config.Config{Agents: []*config.Agent{testAgent("coder")}, Server: config.Server{
		Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", TokenFile: writeSecret(t, dir, "token", token+"\n"),
	}}
	d := startDaemon(t, cfg)
	ctx := context.Background()

	for _, tc := range []struct {
		name, token string
	}{{"no token", ""}, {"wrong token", "not-the-token-at-all-1234"}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Dial(ctx, client.Options{Address: d.l.TCP, Token: tc.token})
			if st, _ := status.FromError(err); st.Code() != codes.Unauthenticated {
				t.Fatalf("got %v; want Unauthenticated", err)
			}
			if !contains(err.Error(), "needs a bearer token") {
				t.Errorf("message %q does not say what is missing", err)
			}
		})
	}
	if !contains(d.log.String(), "refused a request without a valid bearer token", "peer=127.0.0.1") {
		t.Errorf("refusals not logged:\n%s", d.log)
	}
	// Refused again and again from one address, it is one warning: a
	// client polling without the token does not fill the log.
	for range 5 {
		if _, err := client.Dial(ctx, client.Options{Address: d.l.TCP}); err == nil {
			t.Fatal("dialled without the token")
		}
	}
	if n := strings.Count(d.log.String(), "refused a request without a valid bearer token"); n != 1 {
		t.Errorf("%d warnings for refusals from one address, want 1:\n%s", n, d.log)
	}
	c := dial(t, client.Options{Address: d.l.TCP, Token: token})
	if _, err := c.Sessions(ctx); err != nil {
		t.Errorf("with the token: %v", err)
	}
	// The unix socket needs none: its permissions are its access control.
	if _, err := d.c.Sessions(ctx); err != nil {
		t.Errorf("over the socket: %v", err)
	}
	// The HTTP side needs it too when it is set.
	resp, err := http.Get("http://" + d.l.HTTP + "/api/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("snapshot without the token: %s", resp.Status)
	}
	if body := httpGet(t, "http://"+d.l.HTTP+"/api/snapshot", token); !contains(body, `"sessions"`) {
		t.Errorf("snapshot with the token: %s", body)
	}
}

func TestTCPWithMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newCA(t, "hearth test CA")
	srvCert, srvKey := ca.issue(t, dir, "server", true)
	cliCert, cliKey := ca.issue(t, dir, "client", false)
	other := newCA(t, "someone else's CA")
	badCert, badKey := other.issue(t, dir, "intruder", false)
	caFile := ca.write(t, dir, "ca.pem")

	cfg := &config.Config{Agents: []*config.Agent{testAgent("coder")}, Server: config.Server{
		Listen: "127.0.0.1:0",
		TLS:    &config.ServerTLS{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: caFile},
	}}
	d := startDaemon(t, cfg)
	ctx := context.Background()

	c := dial(t, client.Options{Address: d.l.TCP, CAFile: caFile, CertFile: cliCert, KeyFile: cliKey})
	if _, err := c.Sessions(ctx); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	for _, tc := range []struct {
		name string
		opts client.Options
	}{
		{"no client certificate", client.Options{Address: d.l.TCP, CAFile: caFile}},
		{"a certificate of another CA", client.Options{Address: d.l.TCP, CAFile: caFile, CertFile: badCert, KeyFile: badKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := client.Dial(ctx, tc.opts); err == nil {
				t.Fatal("the daemon took a client without a valid certificate")
			}
		})
	}
	if !contains(d.log.String(), "refused a connection: TLS handshake failed") {
		t.Errorf("refusals not logged:\n%s", d.log)
	}
}

func TestListenRefusesBadSetups(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, &config.Config{Agents: []*config.Agent{testAgent("coder")}})
	dir := shortTempDir(t)
	for _, tc := range []struct {
		name string
		cfg  config.Server
		want string
	}{
		{"short token", config.Server{Socket: filepath.Join(dir, "a.sock"), TokenFile: writeSecret(t, dir, "tok", "short")}, "use at least 16"},
		{"a token others can read", config.Server{Socket: filepath.Join(dir, "d.sock"), TokenFile: writeFile(t, dir, "tok644", token)}, "chmod 600 " + filepath.Join(dir, "tok644")},
		{"missing certificate", config.Server{Socket: filepath.Join(dir, "b.sock"), Listen: "127.0.0.1:0", TLS: &config.ServerTLS{CertFile: "/nope.pem", KeyFile: "/nope.key"}}, "load the server's certificate"},
		{"socket path too long", config.Server{Socket: filepath.Join(dir, longName(120))}, "longer than the 107"},
		{"port taken", config.Server{Socket: filepath.Join(dir, "c.sock"), HTTP: d.l.HTTP}, "pick another address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.srv.Listen(tc.cfg, d.dir)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error saying %q", err, tc.want)
			}
		})
	}
	// What failed half way is closed: the socket of the last case is gone.
	if _, err := os.Stat(filepath.Join(dir, "c.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Listen left its socket: %v", err)
	}
}

func longName(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b) + ".sock"
}

// ca is a certificate authority for tests.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func newCA(t testing.TB, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &ca{cert: cert, key: key, der: der}
}

func (c *ca) write(t testing.TB, dir, name string) string {
	t.Helper()
	return writeFile(t, dir, name, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})))
}

// issue makes a certificate and key signed by the CA, for a server on
// 127.0.0.1 or a client, and returns their files.
func (c *ca) issue(t testing.TB, dir, name string, server bool) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = writeFile(t, dir, name+".pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyFile = writeFile(t, dir, name+".key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	return certFile, keyFile
}

// TestHTTPRefusesRebindingAndCrossSiteCalls: on loopback without a token,
// a web page the person visits must not reach the daemon, through DNS
// rebinding (another Host) or a cross-site "simple" POST.
func TestHTTPRefusesRebindingAndCrossSiteCalls(t *testing.T) {
	t.Parallel()
	d := claudeCodeDaemon(t)
	payload := payloads(t)["01-session-start"]
	do := func(method, path, host, origin, contentType string) int {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+d.l.HTTP+path, bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		req.Header.Set("Authorization", "Bearer "+d.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, port, _ := net.SplitHostPort(d.l.HTTP)
	for _, tc := range []struct {
		name                              string
		method, path, host, origin, ctype string
		want                              int
	}{
		{"the dashboard", "GET", "/api/snapshot", "", "", "", http.StatusOK},
		{"by localhost", "GET", "/api/snapshot", "localhost:" + port, "", "", http.StatusOK},
		{"a rebound name", "GET", "/api/snapshot", "evil.example:" + port, "", "", http.StatusMisdirectedRequest},
		{"a hook", "POST", "/hooks/claude-code", "", "", "application/json", http.StatusOK},
		{"a hook from a page", "POST", "/hooks/claude-code", "", "http://evil.example", "application/json", http.StatusForbidden},
		{"a simple cross-site POST", "POST", "/hooks/claude-code", "", "", "text/plain", http.StatusUnsupportedMediaType},
		{"the page's own origin", "GET", "/api/snapshot", "", "http://" + d.l.HTTP, "", http.StatusOK},
	} {
		if got := do(tc.method, tc.path, tc.host, tc.origin, tc.ctype); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	sessions, err := d.c.Sessions(context.Background())
	if err != nil || len(sessions) != 1 {
		t.Errorf("sessions %+v, %v; want only the one the accepted hook made", sessions, err)
	}
}
