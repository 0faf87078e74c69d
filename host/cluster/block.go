package cluster

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/text"
)

// Block is the cluster block of hearth's config file, as gohcl decodes
// it ([Config] shows it written out). It lives here, with the settings it
// becomes, so that a new setting of the block lands in this package
// alone: its attribute here, its field in Config, its line in
// [Block.Decode], its check in [Config.Validate], and its line in
// [Config.Member] if the other hosts are to see it; package host/config
// hands the block over and adds nothing. Pointers tell "absent" from
// "zero" where zero is not the default; bodies say where each setting was
// written, for errors that point at it (file:line:col).
type Block struct {
	Endpoints       []string  `hcl:"endpoints"`
	Advertise       string    `hcl:"advertise,optional"`
	HostID          *string   `hcl:"host_id,optional"`
	LeaseTTL        *string   `hcl:"lease_ttl,optional"`
	PublishInterval *string   `hcl:"publish_interval,optional"`
	DialTimeout     *string   `hcl:"dial_timeout,optional"`
	CompactInterval *string   `hcl:"compact_interval,optional"`
	TLS             *TLSBlock `hcl:"tls,block"`
	Body            hcl.Body  `hcl:",body"`
	DefRange        hcl.Range `hcl:",def_range"`
}

// TLSBlock is the cluster block's tls block.
type TLSBlock struct {
	CAFile   string    `hcl:"ca_file"`
	CertFile string    `hcl:"cert_file"`
	KeyFile  string    `hcl:"key_file"`
	Body     hcl.Body  `hcl:",body"`
	DefRange hcl.Range `hcl:",def_range"`
}

// Decode turns the block into a Config, nil for a nil Block (one host,
// no etcd). Relative TLS files are read against dir, the config file's
// directory. Every default is applied but the host ID's, which stays
// empty unless set: it depends on the data directory, which flags may
// change after loading, so `hearth serve` applies
// [Config.WithDefaults](hostname, dataDir) once it knows it. Each
// problem is a diagnostic at the attribute it is about (an element of
// endpoints, an attribute of the tls block): a duration that does not
// parse, and every *ConfigError of [Config.Validate]. The Config is
// returned whole even then, so that a caller can report every problem
// of the file at once.
func (b *Block) Decode(dir string) (*Config, hcl.Diagnostics) {
	if b == nil {
		return nil, nil
	}
	var diags hcl.Diagnostics
	at := func(name string) hcl.Range { return hclspot.Attr(b.Body, name, b.DefRange) }
	duration := func(s *string, name string, def time.Duration) time.Duration {
		d, diag := parseDuration(s, at(name), name, def)
		if diag != nil {
			diags = append(diags, diag)
		}
		return d
	}
	c := &Config{
		Endpoints:       b.Endpoints,
		Advertise:       b.Advertise,
		LeaseTTL:        duration(b.LeaseTTL, "lease_ttl", DefaultLeaseTTL),
		PublishInterval: duration(b.PublishInterval, "publish_interval", DefaultPublishInterval),
		DialTimeout:     duration(b.DialTimeout, "dial_timeout", DefaultDialTimeout),
		CompactInterval: duration(b.CompactInterval, "compact_interval", DefaultCompactInterval),
	}
	if b.HostID != nil {
		c.HostID = *b.HostID
	}
	if t := b.TLS; t != nil {
		c.TLS = &TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
		for _, f := range []*string{&c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
			if strings.TrimSpace(*f) == "" {
				continue // Validate names it
			}
			if !filepath.IsAbs(*f) {
				*f = filepath.Join(dir, *f)
			}
			*f = filepath.Clean(*f)
		}
	}
	check := *c
	if check.HostID == "" {
		check.HostID = "default" // stands for the default, valid by construction
	}
	if check.Advertise == "" {
		// hearth serve takes --advertise, or server.listen when it names
		// a host others can dial.
		check.Advertise = "default:1"
	}
	err := check.Validate()
	if err == nil {
		return c, diags
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid cluster", Detail: e.Error(), Subject: b.DefRange.Ptr()})
			continue
		}
		r := at(ce.Field)
		switch {
		case strings.HasPrefix(ce.Field, "endpoints["):
			i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(ce.Field, "endpoints["), "]"))
			r = hclspot.Elem(b.Body, "endpoints", i, at("endpoints"))
		case strings.HasPrefix(ce.Field, "tls.") && b.TLS != nil:
			r = hclspot.Attr(b.TLS.Body, strings.TrimPrefix(ce.Field, "tls."), b.TLS.DefRange)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid cluster setting",
			Detail: ce.Field + " " + ce.Problem + ": " + ce.Fix + ".", Subject: r.Ptr()})
	}
	return c, diags
}

// parseDuration reads a duration setting written at r: def when it is
// absent, else a positive duration, or def and a diagnostic saying what
// to write (with host/config's words for every other block's durations).
func parseDuration(s *string, r hcl.Range, name string, def time.Duration) (time.Duration, *hcl.Diagnostic) {
	if s == nil {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(*s))
	switch {
	case err != nil:
		return def, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration", Subject: r.Ptr(),
			Detail: name + ` must be a duration such as "30s", "5m" or "1h30m"; ` + strconv.Quote(*s) + " is not one" + text.DaysHint(*s) + "."}
	case d <= 0:
		return def, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration", Subject: r.Ptr(),
			Detail: name + " must be positive (got " + *s + ")."}
	}
	return d, nil
}
