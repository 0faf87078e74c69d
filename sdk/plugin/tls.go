package plugin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// Mutual TLS between a hearth host and its plugins.
//
// go-plugin's AutoMTLS makes both sides generate a P-521 certificate for
// every plugin start; on a 2-core machine that is about 33 ms of a 40 ms
// cold start (P-521 sign+verify is ~30x P-256's). hearth keeps AutoMTLS's
// property, mutual TLS with a fresh key for every plugin, but the host
// makes the keys, with P-256: one host certificate per host process, one
// plugin certificate per spawn. The plugin's certificate and key reach it
// through an inherited pipe named by EnvTLSFD, never the environment, so
// the agent's own child processes never see them. A plugin started by a
// host that does not do this (a plain go-plugin host) falls back to
// go-plugin's AutoMTLS.

// EnvTLSFD names the file descriptor from which a plugin reads its TLS
// material.
const EnvTLSFD = "HEARTH_PLUGIN_TLS_FD"

// HostTLS is a host's half of mutual TLS with its plugins.
type HostTLS struct {
	cert    tls.Certificate
	certPEM []byte
}

// NewHostTLS generates the host's certificate. A host makes one and uses
// it for every plugin it starts.
func NewHostTLS() (*HostTLS, error) {
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &HostTLS{cert: cert, certPEM: certPEM}, nil
}

// PluginTLS is the TLS material of one plugin start.
type PluginTLS struct {
	// Config is what the host uses to talk to the plugin, and to serve
	// its callbacks.
	Config *tls.Config
	pipe   *os.File
}

// ForPlugin generates a certificate for one plugin start. Attach it to the
// plugin's command, and Close it once the command has started.
func (h *HostTLS) ForPlugin() (*PluginTLS, error) {
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("plugin certificate does not parse")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// About 1.5 KB: well under any pipe buffer, so the write completes
	// before the plugin reads.
	_, err = w.Write(bytes.Join([][]byte{certPEM, keyPEM, h.certPEM}, nil))
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return &PluginTLS{
		Config: &tls.Config{
			Certificates: []tls.Certificate{h.cert},
			RootCAs:      pool,
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ServerName:   "localhost",
			MinVersion:   tls.VersionTLS12,
		},
		pipe: r,
	}, nil
}

// Attach arranges for cmd, not yet started, to inherit the material.
func (p *PluginTLS) Attach(cmd *exec.Cmd) {
	cmd.ExtraFiles = append(cmd.ExtraFiles, p.pipe)
	cmd.Env = append(cmd.Env, EnvTLSFD+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
}

// Close closes the host's copy of the pipe; the started plugin has its own.
func (p *PluginTLS) Close() error { return p.pipe.Close() }

// pluginTLS reads the plugin's TLS material from the descriptor named by
// EnvTLSFD; nil when the host did not provide any.
func pluginTLS() (*tls.Config, error) {
	v := os.Getenv(EnvTLSFD)
	if v == "" {
		return nil, nil
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q is not a file descriptor", EnvTLSFD, v)
	}
	f := os.NewFile(uintptr(fd), "hearth-tls")
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read TLS material from fd %d: %w", fd, err)
	}
	var blocks []*pem.Block
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		blocks = append(blocks, blk)
	}
	if len(blocks) != 3 {
		return nil, fmt.Errorf("TLS material from fd %d holds %d PEM blocks, want 3", fd, len(blocks))
	}
	cert, err := tls.X509KeyPair(pem.EncodeToMemory(blocks[0]), pem.EncodeToMemory(blocks[1]))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem.EncodeToMemory(blocks[2])) {
		return nil, errors.New("host certificate does not parse")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		RootCAs:      pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// selfSigned makes a P-256 certificate for "localhost" that is its own CA,
// as go-plugin's AutoMTLS certificates are.
func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"hearth"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		NotBefore:             time.Now().Add(-30 * time.Second),
		// A host is one process; its certificate must outlive any
		// daemon's uptime, as go-plugin's AutoMTLS ones do.
		NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}
