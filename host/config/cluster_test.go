package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/cluster"
)

func TestClusterBlock(t *testing.T) {
	cfg, err := Load("testdata/valid/cluster.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	dir, _ := filepath.Abs("testdata/valid")
	if c == nil || len(c.Endpoints) != 2 || c.Advertise != "10.0.0.7:7420" || c.LeaseTTL != 15*time.Second ||
		c.PublishInterval != 500*time.Millisecond || c.DialTimeout != cluster.DefaultDialTimeout || c.CompactInterval != 30*time.Minute || c.HostID != "" {
		t.Fatalf("got %+v", c)
	}
	if c.TLS == nil || c.TLS.CAFile != filepath.Join(dir, "etcd/ca.pem") || c.TLS.KeyFile != "/etc/hearth/host-key.pem" {
		t.Errorf("tls files %+v, want relative ones resolved against the config's directory", c.TLS)
	}
	if err := c.WithDefaults("box", "/var/lib/hearth").Validate(); err != nil {
		t.Errorf("with the host ID's default: %v", err)
	}

	cfg, err = Parse([]byte(`agent "a" { bundled = "gotour" }`), "t.hcl", opts)
	if err != nil || cfg.Cluster != nil {
		t.Errorf("without a cluster block: %+v, %v; want no cluster", cfg.Cluster, err)
	}
}

// TestClusterErrors: the cluster block's problems come out of Parse at
// file:line:col, those of the file's syntax (a missing or unknown
// attribute) as those of its settings, which package host/cluster
// decodes and checks (cluster.Block; its TestBlockErrorsAtTheSetting
// sweeps every setting).
func TestClusterErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, pos, want string
	}{
		{"no endpoints", "cluster {\n  advertise = \"a:1\"\n}\n", "t.hcl:1:9", `The argument "endpoints" is required`},
		{"host id", "cluster {\n  endpoints = [\"http://a:1\"]\n  advertise = \"a:1\"\n  host_id = \"a b\"\n}\n", "t.hcl:4:13", `host_id "a b" holds ' '`},
		{"unknown attribute", "cluster {\n  endpoints = [\"http://a:1\"]\n  advertise = \"a:1\"\n  ttl = \"5s\"\n}\n", "t.hcl:4:3", `An argument named "ttl" is not expected here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "t.hcl", opts)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.pos) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got\n%v\nwant %s and %q", err, tc.pos, tc.want)
			}
		})
	}
}
