package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth/host/cluster"
)

// rawCluster is the cluster block: several hosts sharing membership and
// a view of their sessions through etcd (package host/cluster).
type rawCluster struct {
	Endpoints       []string       `hcl:"endpoints"`
	Advertise       string         `hcl:"advertise,optional"`
	HostID          *string        `hcl:"host_id,optional"`
	LeaseTTL        *string        `hcl:"lease_ttl,optional"`
	PublishInterval *string        `hcl:"publish_interval,optional"`
	DialTimeout     *string        `hcl:"dial_timeout,optional"`
	CompactInterval *string        `hcl:"compact_interval,optional"`
	TLS             *rawClusterTLS `hcl:"tls,block"`
	Body            hcl.Body       `hcl:",body"`
	DefRange        hcl.Range      `hcl:",def_range"`
}

type rawClusterTLS struct {
	CAFile   string    `hcl:"ca_file"`
	CertFile string    `hcl:"cert_file"`
	KeyFile  string    `hcl:"key_file"`
	Body     hcl.Body  `hcl:",body"`
	DefRange hcl.Range `hcl:",def_range"`
}

// cluster decodes the cluster block; nil without one (one host, no etcd).
// The host ID stays empty unless set: its default depends on the data
// directory, which flags may change after loading, so `hearth serve`
// applies cluster.Config.WithDefaults(hostname, dataDir) once it knows
// it. Every other default is applied here.
func (v *validator) cluster(rc *rawCluster) *cluster.Config {
	if rc == nil {
		return nil
	}
	at := func(name string) hcl.Range { return attrRange(rc.Body, name, rc.DefRange) }
	c := &cluster.Config{
		Endpoints:       rc.Endpoints,
		Advertise:       rc.Advertise,
		LeaseTTL:        v.duration(rc.LeaseTTL, at("lease_ttl"), "lease_ttl", cluster.DefaultLeaseTTL),
		PublishInterval: v.duration(rc.PublishInterval, at("publish_interval"), "publish_interval", cluster.DefaultPublishInterval),
		DialTimeout:     v.duration(rc.DialTimeout, at("dial_timeout"), "dial_timeout", cluster.DefaultDialTimeout),
		CompactInterval: v.duration(rc.CompactInterval, at("compact_interval"), "compact_interval", cluster.DefaultCompactInterval),
	}
	if rc.HostID != nil {
		c.HostID = *rc.HostID
	}
	if t := rc.TLS; t != nil {
		c.TLS = &cluster.TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
		for _, f := range []*string{&c.TLS.CAFile, &c.TLS.CertFile, &c.TLS.KeyFile} {
			if strings.TrimSpace(*f) != "" {
				*f = v.path(*f)
			}
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
		return c
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *cluster.ConfigError
		if !errors.As(e, &ce) {
			v.errorf(rc.DefRange, "Invalid cluster", "%v", e)
			continue
		}
		r := at(ce.Field)
		switch {
		case strings.HasPrefix(ce.Field, "endpoints["):
			i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(ce.Field, "endpoints["), "]"))
			r = elemRange(rc.Body, "endpoints", i, at("endpoints"))
		case strings.HasPrefix(ce.Field, "tls.") && rc.TLS != nil:
			r = attrRange(rc.TLS.Body, strings.TrimPrefix(ce.Field, "tls."), rc.TLS.DefRange)
		}
		v.errorf(r, "Invalid cluster setting", "%s %s: %s.", ce.Field, ce.Problem, ce.Fix)
	}
	return c
}
