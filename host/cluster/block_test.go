package cluster

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// decodeBlock parses src as a file holding one cluster block and decodes
// it as hearth's config does (host/config hands the block to Decode).
func decodeBlock(t testing.TB, src, dir string) (*Config, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "c.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse: %v", diags)
	}
	var raw struct {
		Cluster *Block `hcl:"cluster,block"`
	}
	diags = gohcl.DecodeBody(f.Body, nil, &raw)
	c, d := raw.Cluster.Decode(dir)
	return c, append(diags, d...)
}

// TestBlockDecode: the block sets what it names, every other setting
// but the host ID takes its default, and relative TLS files are read
// against the config file's directory.
func TestBlockDecode(t *testing.T) {
	c, diags := decodeBlock(t, `cluster {
  endpoints        = ["https://10.0.0.5:2379", "https://10.0.0.6:2379"]
  advertise        = "10.0.0.7:7420"
  lease_ttl        = "15s"
  publish_interval = "500ms"
  compact_interval = "30m"
  tls {
    ca_file   = "etcd/ca.pem"
    cert_file = "etcd/../etcd/host.pem"
    key_file  = "/etc/hearth//host-key.pem"
  }
}
`, "/srv/conf")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := Config{
		Endpoints: []string{"https://10.0.0.5:2379", "https://10.0.0.6:2379"}, Advertise: "10.0.0.7:7420",
		LeaseTTL: 15 * time.Second, PublishInterval: 500 * time.Millisecond, DialTimeout: DefaultDialTimeout, CompactInterval: 30 * time.Minute,
		TLS: &TLS{CAFile: filepath.FromSlash("/srv/conf/etcd/ca.pem"), CertFile: filepath.FromSlash("/srv/conf/etcd/host.pem"), KeyFile: filepath.FromSlash("/etc/hearth/host-key.pem")},
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("got  %+v %+v\nwant %+v %+v", *c, *c.TLS, want, *want.TLS)
	}

	c, diags = decodeBlock(t, "cluster {\n  endpoints = [\"http://a:1\"]\n  host_id = \"\"\n}\n", "/d")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if c.HostID != "" || c.Advertise != "" || c.LeaseTTL != DefaultLeaseTTL || c.PublishInterval != DefaultPublishInterval || c.CompactInterval != DefaultCompactInterval || c.TLS != nil {
		t.Errorf("got %+v: want the defaults, the host ID and the address left to hearth serve", c)
	}
	if err := c.WithDefaults("box", "/d").Validate(); err == nil || !strings.Contains(err.Error(), "advertise") {
		t.Errorf("without an address: %v, want only advertise refused (hearth serve sets it)", err)
	}

	if c, diags := decodeBlock(t, "", "/d"); c != nil || diags.HasErrors() {
		t.Errorf("no block: %+v, %v; want no cluster", c, diags)
	}
}

// badSettings holds, for every setting of the cluster block, values its
// decoding or its check refuses, each with what its error says and the
// text of the value it must point at (nil for a setting that takes any
// value). TestBlockErrorsAtTheSetting fails for a setting of Block
// without a row: a new setting comes with its check, reported where the
// setting is written, or says it has none.
var badSettings = map[string][]struct{ value, at, detail string }{
	"endpoints": {
		{`["https://a:1", "a:2"]`, `"a:2"`, `endpoints[1] "a:2" has no scheme: write etcd's client URL`},
		{`["ftp://a:1"]`, `"ftp://a:1"`, `has scheme "ftp", not http, https, unix or unixs`},
		{`[]`, `[]`, "endpoints is empty: list etcd's client URLs"},
		{`["http://a:1"]`, `"http://a:1"`, `endpoints[0] "http://a:1" is plain http while a tls block is set`},
	},
	"advertise": {
		{`"0.0.0.0:7420"`, `"0.0.0.0:7420"`, "is a wildcard address: other hosts cannot dial 0.0.0.0"},
		{`"a:0"`, `"a:0"`, `advertise "a:0" is not host:port`},
	},
	"host_id": {
		{`"a b"`, `"a b"`, `host_id "a b" holds ' '`},
		{`".."`, `".."`, `host_id ".." is a path element`},
	},
	"lease_ttl": {
		{`"1s"`, `"1s"`, "lease_ttl is 1s: set it within 2s to 5m0s"},
		{`"2500ms"`, `"2500ms"`, `lease_ttl is 2.5s: etcd's leases count whole seconds; set it to 3s`},
		{`"7d"`, `"7d"`, `lease_ttl must be a duration such as "30s", "5m" or "1h30m"; "7d" is not one: durations stop at hours, so write "168h".`},
	},
	"publish_interval": {
		{`"1ms"`, `"1ms"`, "publish_interval is 1ms: set it within 100ms to 1m0s"},
		{`"-1s"`, `"-1s"`, "publish_interval must be positive (got -1s)."},
	},
	"dial_timeout": {
		{`"soon"`, `"soon"`, `dial_timeout must be a duration such as "30s", "5m" or "1h30m"; "soon" is not one.`},
		{`"0s"`, `"0s"`, "dial_timeout must be positive (got 0s)."},
	},
	"compact_interval": {
		{`"10s"`, `"10s"`, "compact_interval is 10s: set it within 1m0s to 24h0m0s"},
		{`"25h"`, `"25h"`, "compact_interval is 25h0m0s"},
	},
	"tls.ca_file":   {{`""`, `""`, "tls.ca_file is empty: name the file"}},
	"tls.cert_file": {{`" "`, `" "`, "tls.cert_file is empty: name the file"}},
	"tls.key_file":  {{`""`, `""`, "tls.key_file is empty: name the file; a tls block needs ca_file, cert_file and key_file"}},
}

// settings lists the attributes of a gohcl-tagged block type, by their
// names in the file, a nested block's as "name.attribute".
func settings(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, kind, _ := strings.Cut(f.Tag.Get("hcl"), ",")
		switch {
		case name == "":
		case kind == "block":
			out = append(out, settings(f.Type.Elem(), prefix+name+".")...)
		default:
			out = append(out, prefix+name)
		}
	}
	return out
}

// TestBlockErrorsAtTheSetting sweeps every setting of the block: each bad
// value gives one error, saying what is wrong and what to write, at the
// line and column where the value (or its bad element) is written, in a
// block where every other setting is good.
func TestBlockErrorsAtTheSetting(t *testing.T) {
	all := settings(reflect.TypeFor[Block](), "")
	for _, s := range all {
		if _, ok := badSettings[s]; !ok {
			t.Errorf("setting %s has no row in badSettings: give values its check refuses (nil: it takes any value)", s)
		}
	}
	for s := range badSettings {
		if !slices.Contains(all, s) {
			t.Errorf("badSettings names %s, which is no setting of Block", s)
		}
	}
	for _, name := range all {
		for _, bad := range badSettings[name] {
			t.Run(name+"="+bad.value, func(t *testing.T) {
				src, line, i := blockWith(name, bad.value)
				_, diags := decodeBlock(t, src, "/d")
				errs := diags.Errs()
				if len(errs) != 1 {
					t.Fatalf("%d errors, want 1:\n%v", len(errs), diags)
				}
				d := diags[0]
				col := strings.Index(line, bad.at) + 1
				if d.Subject == nil || d.Subject.Filename != "c.hcl" || d.Subject.Start.Line != i+1 || d.Subject.Start.Column != col {
					t.Errorf("error at %v, want c.hcl:%d:%d (%s in %q)", d.Subject, i+1, col, bad.at, line)
				}
				if !strings.Contains(d.Detail, bad.detail) {
					t.Errorf("error says %q, want %q", d.Detail, bad.detail)
				}
			})
		}
	}
}

// blockWith is a good block, with TLS so that tls.* can be set, whose
// setting name is value: it replaces the setting's line or comes before
// the tls block. It returns the block, that line and its index.
func blockWith(name, value string) (src, line string, i int) {
	lines := []string{"cluster {", `  endpoints = ["https://a:1"]`, `  advertise = "a:1"`, `  tls {`, `    ca_file = "ca"`, `    cert_file = "c"`, `    key_file = "k"`, `  }`, `}`}
	indent, attr := "  ", name
	if a, ok := strings.CutPrefix(name, "tls."); ok {
		indent, attr = "    ", a
	}
	line = indent + attr + " = " + value
	i = slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, indent+attr+" = ") })
	if i < 0 {
		i = 3 // before the tls block
		lines = slices.Insert(lines, i, line)
	} else {
		lines[i] = line
	}
	return strings.Join(lines, "\n") + "\n", line, i
}

// FuzzBlockDecode: whatever a cluster block holds, decoding it does not
// panic, and every error points into the file.
func FuzzBlockDecode(f *testing.F) {
	f.Add("cluster {\n  endpoints = [\"http://a:1\"]\n  advertise = \"a:1\"\n}\n")
	f.Add("cluster {\n  endpoints = [\"https://a:1\", \"b\"]\n  lease_ttl = \"7d\"\n  tls {\n    ca_file = \"\"\n    cert_file = \"c\"\n    key_file = \"k\"\n  }\n}\n")
	f.Add("cluster {\n  endpoints = []\n  host_id = \"..\"\n  dial_timeout = \"-1s\"\n  compact_interval = \"1.5d\"\n}\n")
	for name, rows := range badSettings {
		for _, bad := range rows {
			src, _, _ := blockWith(name, bad.value)
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, diags := hclsyntax.ParseConfig([]byte(src), "c.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		var raw struct {
			Cluster *Block   `hcl:"cluster,block"`
			Rest    hcl.Body `hcl:",remain"`
		}
		if gohcl.DecodeBody(file.Body, nil, &raw).HasErrors() {
			return
		}
		c, diags := raw.Cluster.Decode("/d")
		if (c == nil) != (raw.Cluster == nil) {
			t.Fatalf("block %v gave config %v", raw.Cluster != nil, c)
		}
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename != "c.hcl" || d.Subject.End.Byte > len(src) || d.Subject.Start.Line < 1 {
				t.Fatalf("%s: error at %v, not in the file", d.Detail, d.Subject)
			}
		}
	})
}
