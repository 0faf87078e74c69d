package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
)

// Defaults and bounds of the cluster block.
const (
	// DefaultLeaseTTL is how long a host that stops renewing its lease
	// stays a member: a host killed with kill -9 leaves placement within
	// this time.
	DefaultLeaseTTL = 10 * time.Second
	// MinLeaseTTL keeps the TTL above a few keep-alive round trips (the
	// client renews every TTL/3) and above etcd's own minimum, which is
	// 1.5 election timeouts; MaxLeaseTTL keeps a dead host from holding
	// placement for long.
	MinLeaseTTL = 2 * time.Second
	MaxLeaseTTL = 5 * time.Minute

	// DefaultPublishInterval is how often a host writes its changed
	// session summaries: at most one etcd transaction per interval (see
	// the package doc for the exact bound).
	DefaultPublishInterval = time.Second
	MinPublishInterval     = 100 * time.Millisecond
	MaxPublishInterval     = time.Minute

	// DefaultDialTimeout bounds connecting to etcd.
	DefaultDialTimeout = 5 * time.Second

	// DefaultCompactInterval is how often the member with the lowest ID
	// compacts etcd's history, to the revision of its previous tick
	// (etcd.Node.Compact): etcd keeps at most two intervals of hearth's
	// writes. MinCompactInterval keeps a watch that a short cut or a GC
	// pause held back able to resume rather than list the cluster again;
	// MaxCompactInterval keeps the history's growth between compactions
	// well under etcd's quota (docs/cluster.md, "etcd kept small").
	DefaultCompactInterval = 5 * time.Minute
	MinCompactInterval     = time.Minute
	MaxCompactInterval     = 24 * time.Hour

	// maxHostIDLen keeps host IDs readable in keys and listings.
	maxHostIDLen = 63
)

// Config is the cluster block of a host's configuration. The zero value of
// each field means its default; [Config.WithDefaults] fills them in and
// [Config.Validate] checks the result.
//
//	cluster {
//	  endpoints        = ["https://10.0.0.5:2379"]  (required)
//	  advertise        = "10.0.0.7:7420"             this host's API, as others dial it (default: server.listen; --advertise)
//	  host_id          = hostname-<hash of data dir>  letters, digits, '.', '_', '-'; the default is applied by hearth serve (flags may move the data dir)
//	  lease_ttl        = "10s"   2s to 5m, whole seconds
//	  publish_interval = "1s"    100ms to 1m
//	  dial_timeout     = "5s"
//	  compact_interval = "5m"    1m to 24h
//	  tls {                      for etcd (mutual TLS); all three files, or none; relative paths: to the config file
//	    ca_file   = "ca.pem"
//	    cert_file = "host.pem"
//	    key_file  = "host-key.pem"
//	  }
//	}
type Config struct {
	// Endpoints are etcd's client URLs ("http://127.0.0.1:2379").
	Endpoints []string
	// TLS, when set, is how the host authenticates to etcd and checks
	// etcd's certificate.
	TLS *TLS
	// Advertise is this host's API address (host:port) as other hosts
	// dial it to forward tasks and list runs.
	Advertise string
	// HostID names this host in the cluster; unique among members.
	HostID          string
	LeaseTTL        time.Duration
	PublishInterval time.Duration
	DialTimeout     time.Duration
	// CompactInterval is how often etcd's history is compacted (by the
	// member with the lowest ID).
	CompactInterval time.Duration
}

// Member is what the host publishes about itself from its settings: its
// ID and the address the others dial. A setting the others should see
// (in listings, or to place with) is copied here, so that it reaches
// etcd's record with no line in cluster/member, whose record adds what
// the host knows only running (host name, start, config hash, version,
// draining, its agents' load).
func (c Config) Member() hearth.Member {
	return hearth.Member{ID: c.HostID, Addr: c.Advertise}
}

// TLS holds the files a host presents to etcd and checks it with.
type TLS struct {
	// CAFile is the CA bundle etcd's certificate must chain to.
	CAFile string
	// CertFile and KeyFile are this host's client certificate and key.
	CertFile string
	KeyFile  string
}

// ConfigError reports one unusable field of the cluster block.
type ConfigError struct {
	Field   string // as written in the config file: "lease_ttl", "tls.ca_file"
	Problem string // what is wrong
	Fix     string // what to do about it
}

func (e *ConfigError) Error() string {
	return "cluster " + e.Field + " " + e.Problem + ": " + e.Fix
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// WithDefaults returns c with every zero field set to its default. The
// default host ID is derived from hostname and dataDir: see
// [DefaultHostID].
func (c Config) WithDefaults(hostname, dataDir string) Config {
	if c.HostID == "" {
		c.HostID = DefaultHostID(hostname, dataDir)
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.PublishInterval == 0 {
		c.PublishInterval = DefaultPublishInterval
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.CompactInterval == 0 {
		c.CompactInterval = DefaultCompactInterval
	}
	return c
}

// DefaultHostID is the host's name, made safe for a key (lower case;
// anything but letters, digits, '.', '_' and '-' becomes '-'), a dash, and
// the first 8 hex digits of the SHA-256 of the absolute data directory.
// The name says which machine a member is; the hash tells apart two hosts
// on one machine, which need two data directories anyway (a store refuses
// a second host), and stays the same when a host restarts, so that it takes
// its own place back instead of appearing twice.
func DefaultHostID(hostname, dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, hostname)
	if name == "" {
		name = "host"
	}
	name = name[:min(len(name), maxHostIDLen-9)]
	return name + "-" + hex.EncodeToString(sum[:4])
}

// Validate reports every unusable field, joined, each a *ConfigError
// wrapping [ErrInvalidConfig]. Call it after [Config.WithDefaults].
func (c Config) Validate() error {
	var errs []error
	bad := func(field, problem, fix string) {
		errs = append(errs, &ConfigError{Field: field, Problem: problem, Fix: fix})
	}
	if len(c.Endpoints) == 0 {
		bad("endpoints", "is empty", `list etcd's client URLs, e.g. ["http://127.0.0.1:2379"]`)
	}
	for i, e := range c.Endpoints {
		if err := checkEndpoint(e, c.TLS != nil); err != "" {
			bad("endpoints["+strconv.Itoa(i)+"]", strconv.Quote(e)+" "+err, `write etcd's client URL, e.g. "https://10.0.0.5:2379"`)
		}
	}
	if c.TLS != nil {
		for _, f := range [...]struct{ name, v string }{{"ca_file", c.TLS.CAFile}, {"cert_file", c.TLS.CertFile}, {"key_file", c.TLS.KeyFile}} {
			if strings.TrimSpace(f.v) == "" {
				bad("tls."+f.name, "is empty", "name the file; a tls block needs ca_file, cert_file and key_file")
			}
		}
	}
	if host, port, err := net.SplitHostPort(c.Advertise); err != nil || host == "" || port == "" || port == "0" {
		bad("advertise", strconv.Quote(c.Advertise)+" is not host:port", "set the address other hosts dial this host's API at, e.g. \"10.0.0.7:7420\" (not a wildcard or port 0)")
	} else if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		bad("advertise", strconv.Quote(c.Advertise)+" is a wildcard address", "other hosts cannot dial "+host+"; advertise this host's own address")
	}
	if err := CheckHostID(c.HostID); err != nil {
		bad("host_id", strconv.Quote(c.HostID)+" "+err.Error(), "use 1 to 63 letters, digits, '.', '_' or '-', or leave it out for hostname-<hash of data dir>")
	}
	switch {
	case c.LeaseTTL < MinLeaseTTL || c.LeaseTTL > MaxLeaseTTL:
		bad("lease_ttl", "is "+c.LeaseTTL.String(), "set it within "+MinLeaseTTL.String()+" to "+MaxLeaseTTL.String()+"; "+DefaultLeaseTTL.String()+" is the default")
	case c.LeaseTTL%time.Second != 0:
		bad("lease_ttl", "is "+c.LeaseTTL.String(), "etcd's leases count whole seconds; set it to "+c.LeaseTTL.Round(time.Second).String())
	}
	if c.PublishInterval < MinPublishInterval || c.PublishInterval > MaxPublishInterval {
		bad("publish_interval", "is "+c.PublishInterval.String(), "set it within "+MinPublishInterval.String()+" to "+MaxPublishInterval.String()+"; "+DefaultPublishInterval.String()+" is the default")
	}
	if c.DialTimeout <= 0 {
		bad("dial_timeout", "is "+c.DialTimeout.String(), "set it above 0; "+DefaultDialTimeout.String()+" is the default")
	}
	if c.CompactInterval < MinCompactInterval || c.CompactInterval > MaxCompactInterval {
		bad("compact_interval", "is "+c.CompactInterval.String(), "set it within "+MinCompactInterval.String()+" to "+MaxCompactInterval.String()+"; "+DefaultCompactInterval.String()+" is the default")
	}
	return errors.Join(errs...)
}

// checkEndpoint returns what is wrong with an etcd endpoint, or "".
func checkEndpoint(e string, tls bool) string {
	scheme, rest, ok := strings.Cut(e, "://")
	if !ok {
		return "has no scheme"
	}
	switch scheme {
	case "http":
		if tls {
			return "is plain http while a tls block is set"
		}
	case "https":
	case "unix", "unixs":
		if rest == "" {
			return "names no socket"
		}
		return ""
	default:
		return "has scheme " + strconv.Quote(scheme) + ", not http, https, unix or unixs"
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		return "has no host:port"
	}
	return ""
}

// CheckHostID reports whether id can name a host: 1 to 63 letters, digits,
// '.', '_' or '-', not "." or "..". A host ID is a key segment, so it never
// holds a '/'.
func CheckHostID(id string) error {
	if id == "" || len(id) > maxHostIDLen {
		return errors.New("is not 1 to 63 characters long")
	}
	if id == "." || id == ".." {
		return errors.New("is a path element")
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return errors.New("holds " + strconv.QuoteRune(r))
		}
	}
	return nil
}
