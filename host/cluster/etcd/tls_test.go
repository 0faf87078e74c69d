package etcd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/clustertest"
	"github.com/hearth-dev/hearth/matcher"
)

// writeCert writes a certificate signed by parent (self-signed when
// parent is nil) and its key as PEM files in dir.
func writeCert(t *testing.T, dir, name string, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{name + ".pem": {Type: "CERTIFICATE", Bytes: der}, name + "-key.pem": {Type: "EC PRIVATE KEY", Bytes: kb}} {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestTLS runs hosts against an etcd that requires client certificates
// (mutual TLS), as the cluster block's tls settings configure them; a
// host without a certificate the CA signed is not let in.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	ca, caKey := writeCert(t, dir, "ca", &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil, nil)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
	}
	writeCert(t, dir, "server", leaf(2, "etcd", x509.ExtKeyUsageServerAuth), ca, caKey)
	writeCert(t, dir, "host", leaf(3, "hearth host", x509.ExtKeyUsageClientAuth), ca, caKey)
	writeCert(t, dir, "stranger", leaf(4, "stranger", x509.ExtKeyUsageClientAuth), nil, nil) // not signed by the CA
	path := func(f string) string { return filepath.Join(dir, f) }

	srv := clustertest.NewEtcd(t)
	srv.ClientTLS = &transport.TLSInfo{CertFile: path("server.pem"), KeyFile: path("server-key.pem"), TrustedCAFile: path("ca.pem"), ClientCertAuth: true}
	srv.Start()

	withTLS := func(cert string) func(*Options) {
		return func(o *Options) {
			o.Config.TLS = &cluster.TLS{CAFile: path("ca.pem"), CertFile: path(cert + ".pem"), KeyFile: path(cert + "-key.pem")}
		}
	}
	a, b := startNode(t, srv, "a", withTLS("host")), startNode(t, srv, "b", withTLS("host"))
	waitView(t, b.View(), 5*time.Second, "a and b", func() bool { return slices.Equal(memberIDs(b.View()), []string{"a", "b"}) })
	_ = a

	// A certificate from elsewhere does not get in.
	o := Options{Identity: "x", Source: newSource("x:1")}
	o.Config = cluster.Config{Endpoints: srv.Endpoints(), Advertise: "x:1", HostID: "x", LeaseTTL: testTTL}.WithDefaults("x", "/x")
	withTLS("stranger")(&o)
	o.View = cluster.NewView("x", func(string) matcher.Config { return matcher.DefaultConfig() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// It starts (a host serves locally while it cannot join) but is
	// never registered, and says why.
	n, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("a host whose certificate etcd refuses did not start out of the cluster: %v", err)
	}
	if l, ok := n.Lease(); ok {
		t.Errorf("a host with a certificate the CA did not sign registered under lease %x", l)
	}
	if n.Err() == nil {
		t.Error("a host etcd refuses does not say why it is out of the cluster")
	}
	n.Close()
	if got := memberIDs(b.View()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("b lists %q, want a and b", got)
	}
	// Nor do missing files.
	withTLS("missing")(&o)
	if _, err := Start(ctx, o); err == nil {
		t.Fatal("a host whose certificate file is missing started")
	}
}
