package cluster

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

func validConfig() Config {
	return Config{Endpoints: []string{"http://127.0.0.1:2379"}, Advertise: "10.0.0.7:7420"}.WithDefaults("box", "/var/lib/hearth")
}

func TestConfigDefaults(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if c.LeaseTTL != DefaultLeaseTTL || c.PublishInterval != DefaultPublishInterval || c.DialTimeout != DefaultDialTimeout || c.CompactInterval != DefaultCompactInterval {
		t.Errorf("got ttl %v publish %v dial %v compact %v, want the defaults", c.LeaseTTL, c.PublishInterval, c.DialTimeout, c.CompactInterval)
	}
	if c.HostID != DefaultHostID("box", "/var/lib/hearth") {
		t.Errorf("got host ID %q, want the default", c.HostID)
	}
	set := Config{HostID: "a", LeaseTTL: 3 * time.Second}.WithDefaults("box", "/d")
	if set.HostID != "a" || set.LeaseTTL != 3*time.Second {
		t.Errorf("WithDefaults replaced set fields: %+v", set)
	}
}

func TestDefaultHostID(t *testing.T) {
	a := DefaultHostID("Build.Box_1", "/var/lib/hearth")
	if !strings.HasPrefix(a, "build.box_1-") || len(a) != len("build.box_1-")+8 {
		t.Errorf("got %q, want build.box_1- and 8 hex digits", a)
	}
	if b := DefaultHostID("Build.Box_1", "/var/lib/hearth"); b != a {
		t.Errorf("not stable: %q then %q", a, b)
	}
	if b := DefaultHostID("Build.Box_1", "/var/lib/hearth2"); b == a {
		t.Errorf("two data dirs give one ID %q", a)
	}
	for _, h := range []string{"", "ünïcode host/with:odd chars", strings.Repeat("x", 200)} {
		if err := CheckHostID(DefaultHostID(h, "d")); err != nil {
			t.Errorf("DefaultHostID(%q) = %q: %v", h, DefaultHostID(h, "d"), err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, "endpoints"},
		{"endpoint without scheme", func(c *Config) { c.Endpoints = []string{"127.0.0.1:2379"} }, "endpoints[0]"},
		{"endpoint with bad scheme", func(c *Config) { c.Endpoints = []string{"ftp://a:1"} }, "endpoints[0]"},
		{"endpoint without port", func(c *Config) { c.Endpoints = []string{"http://a"} }, "endpoints[0]"},
		{"http with tls", func(c *Config) { c.TLS = &TLS{CAFile: "a", CertFile: "b", KeyFile: "c"} }, "endpoints[0]"},
		{"tls without key", func(c *Config) {
			c.Endpoints = []string{"https://a:1"}
			c.TLS = &TLS{CAFile: "a", CertFile: "b"}
		}, "tls.key_file"},
		{"no advertise", func(c *Config) { c.Advertise = "" }, "advertise"},
		{"advertise port 0", func(c *Config) { c.Advertise = "a:0" }, "advertise"},
		{"advertise wildcard", func(c *Config) { c.Advertise = "0.0.0.0:7420" }, "advertise"},
		{"host ID with slash", func(c *Config) { c.HostID = "a/b" }, "host_id"},
		{"host ID too long", func(c *Config) { c.HostID = strings.Repeat("a", 64) }, "host_id"},
		{"host ID dot dot", func(c *Config) { c.HostID = ".." }, "host_id"},
		{"ttl too short", func(c *Config) { c.LeaseTTL = time.Second }, "lease_ttl"},
		{"ttl too long", func(c *Config) { c.LeaseTTL = time.Hour }, "lease_ttl"},
		{"ttl fraction", func(c *Config) { c.LeaseTTL = 2500 * time.Millisecond }, "lease_ttl"},
		{"publish too often", func(c *Config) { c.PublishInterval = time.Millisecond }, "publish_interval"},
		{"negative dial timeout", func(c *Config) { c.DialTimeout = -1 }, "dial_timeout"},
		{"compaction too often", func(c *Config) { c.CompactInterval = 59 * time.Second }, "compact_interval"},
		{"compaction too rare", func(c *Config) { c.CompactInterval = 25 * time.Hour }, "compact_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want an error wrapping ErrInvalidConfig", err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("got %v, want the field %s", err, tc.field)
			}
			if ce.Fix == "" || !strings.HasPrefix(err.Error(), "cluster "+tc.field+" ") {
				t.Errorf("message %q names no field or fix", err)
			}
		})
	}
	ok := validConfig()
	ok.Endpoints = []string{"https://a:2379", "unix:///run/etcd.sock"}
	ok.TLS = &TLS{CAFile: "ca", CertFile: "c", KeyFile: "k"}
	if err := ok.Validate(); err != nil {
		t.Errorf("https and unix endpoints with tls: %v", err)
	}
}

// TestConfigMember: what a host publishes from its settings is its ID
// and the address the others dial, and nothing it knows only running
// (cluster/member adds that), so a listing never shows a setting's zero
// as if the host had said it.
func TestConfigMember(t *testing.T) {
	c := validConfig()
	c.HostID = "box-1"
	got := c.Member()
	want := hearth.Member{ID: "box-1", Addr: "10.0.0.7:7420"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
