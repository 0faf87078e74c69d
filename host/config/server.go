package config

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/text"
)

// External agent kinds: sessions hearth does not run but follows through
// the hooks their program calls.
const (
	// ExternalClaudeCode is Claude Code: its sessions report through
	// `hearth hook` (a command hook) or the daemon's HTTP hook endpoint.
	ExternalClaudeCode = "claude-code"
)

// externalKinds are the kinds an `external` attribute may name.
var externalKinds = []string{ExternalClaudeCode}

// DefaultExternalAgent is the external agent Default declares, so that a
// daemon started without a config file follows Claude Code sessions.
const DefaultExternalAgent = "claude-code"

// Defaults of the server and hooks blocks.
const (
	// DefaultHTTP is where `hearth serve` serves the dashboard, /metrics
	// and the HTTP hook endpoint: loopback only.
	DefaultHTTP = "127.0.0.1:7411"
	// SocketName is the API's unix socket, in the data directory unless
	// server.socket says otherwise.
	SocketName = hearth.SocketName
)

// Server is the `server` block: how `hearth serve` listens.
//
// The API is served on a unix socket created owner-only (0600): the
// socket's permissions are its access control. TCP is off unless Listen
// is set, and then needs TLS with client certificates (mutual TLS) or a
// bearer token, or both. HTTP serves the dashboard, /metrics and the
// hook endpoint, always behind a token: TokenFile's, or one the daemon
// makes in the data directory; bound to anything but loopback it needs
// TokenFile.
type Server struct {
	// Socket is the unix socket's path; empty means SocketName in the data
	// directory.
	Socket string
	// Listen is a TCP address for the API; empty: no TCP.
	Listen string
	// HTTP is the dashboard's address; empty: no HTTP.
	HTTP string
	// TokenFile holds the bearer token TCP and HTTP clients present; it
	// must be owner-only. Empty: no token over TCP, and for HTTP the
	// token file the daemon makes in the data directory.
	TokenFile string
	// TLS, when set, serves the TCP API over TLS.
	TLS *ServerTLS
}

// ServerTLS is the server's certificate and key, and the CA its clients'
// certificates must be signed by (mutual TLS); without ClientCAFile,
// clients are not asked for certificates and the token is required.
type ServerTLS struct {
	CertFile     string
	KeyFile      string
	ClientCAFile string
}

// DefaultServer returns the server settings used without a server block.
func DefaultServer() Server { return Server{HTTP: DefaultHTTP} }

// Hooks is the `hooks` block: how `hearth hook` behaves.
type Hooks struct {
	// Agent is the external agent hook reports belong to; by default the
	// first claude-code agent.
	Agent string
	// WhenUnreachable is what `hearth hook` answers a PreToolUse with when
	// the daemon cannot be reached: "allow" (fail open, the default: a
	// host that is down must not lock a person out of their editor) or
	// "deny" (fail closed).
	WhenUnreachable string
}

// What `hearth hook` does when it cannot reach the daemon.
const (
	HookAllow = "allow"
	HookDeny  = "deny"
)

type rawServer struct {
	Socket    *string       `hcl:"socket,optional"`
	Listen    *string       `hcl:"listen,optional"`
	HTTP      *string       `hcl:"http,optional"`
	TokenFile *string       `hcl:"token_file,optional"`
	TLS       *rawServerTLS `hcl:"tls,block"`
	Body      hcl.Body      `hcl:",body"`
	DefRange  hcl.Range     `hcl:",def_range"`
}

type rawServerTLS struct {
	CertFile     string    `hcl:"cert_file"`
	KeyFile      string    `hcl:"key_file"`
	ClientCAFile *string   `hcl:"client_ca_file,optional"`
	Body         hcl.Body  `hcl:",body"`
	DefRange     hcl.Range `hcl:",def_range"`
}

type rawHooks struct {
	Agent           *string   `hcl:"agent,optional"`
	WhenUnreachable *string   `hcl:"when_unreachable,optional"`
	Body            hcl.Body  `hcl:",body"`
	DefRange        hcl.Range `hcl:",def_range"`
}

// external checks an external agent: it names a known kind, and nothing
// that only a program hearth starts has.
func (v *validator) external(ra *rawAgent, a *Agent) {
	at := func(name string) hcl.Range { return hclspot.Attr(ra.Body, name, ra.DefRange) }
	a.makeExternal(*ra.External)
	if !slices.Contains(externalKinds, a.External) {
		v.errorf(at("external"), "Unknown external agent kind", "external names the program whose sessions report through hooks; hearth knows %s, not %q%s.",
			text.OrNone(externalKinds), a.External, text.Suggest(a.External, externalKinds))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"bundled", ra.Bundled != nil}, {"command", ra.Command != nil}, {"sha256", ra.SHA256 != nil},
		{"capacity", ra.Capacity != nil}, {"start_timeout", ra.StartTimeout != nil}, {"task_timeout", ra.TaskTimeout != nil},
		{"health_interval", ra.HealthInterval != nil}, {"env", ra.Env != nil},
		{"confinement", ra.Confinement != nil}, {"read_paths", ra.ReadPaths != nil}, {"write_paths", ra.WritePaths != nil},
		{"connect_ports", ra.ConnectPorts != nil},
	} {
		if f.set {
			v.errorf(at(f.name), "Setting of a program on an external agent", "Agent %q is external: hearth follows its sessions but does not start them, so %s does not apply. Remove it, or remove external to run a program.", ra.Name, f.name)
		}
	}
}

func (v *validator) server(rs *rawServer) Server {
	s := DefaultServer()
	if rs == nil {
		return s
	}
	at := func(name string) hcl.Range { return hclspot.Attr(rs.Body, name, rs.DefRange) }
	if rs.Socket != nil {
		if strings.TrimSpace(*rs.Socket) == "" {
			v.errorf(at("socket"), "Empty socket path", "socket is empty; remove it to use %s in the data directory, or name a path.", SocketName)
		} else {
			s.Socket = v.path(*rs.Socket)
		}
	}
	if rs.Listen != nil && *rs.Listen != "" {
		s.Listen = *rs.Listen
		if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			v.errorf(at("listen"), "Invalid address", "listen must be host:port, as in listen = \"0.0.0.0:7410\" (%v).", err)
		}
	}
	if rs.HTTP != nil {
		s.HTTP = *rs.HTTP
		if s.HTTP != "" {
			if _, _, err := net.SplitHostPort(s.HTTP); err != nil {
				v.errorf(at("http"), "Invalid address", "http must be host:port, as in http = %q, or \"\" for no dashboard (%v).", DefaultHTTP, err)
			}
		}
	}
	if rs.TokenFile != nil {
		s.TokenFile = v.path(*rs.TokenFile)
	}
	if t := rs.TLS; t != nil {
		s.TLS = &ServerTLS{CertFile: v.path(t.CertFile), KeyFile: v.path(t.KeyFile)}
		if t.ClientCAFile != nil {
			s.TLS.ClientCAFile = v.path(*t.ClientCAFile)
		}
		if s.Listen == "" && !v.partial {
			v.errorf(t.DefRange, "TLS without TCP", "The tls block secures the TCP API, which is off: set listen = \"host:port\", or remove the block (the unix socket needs no TLS).")
		}
	}
	if v.partial {
		return s
	}
	if field, problem := s.exposure(); problem != "" {
		v.errorf(at(field), "Listener without credentials", "%s.", problem)
	}
	return s
}

// Check says what is wrong with the server's listeners as they are, once
// flags have changed them: a TCP API or an HTTP side beyond loopback
// without credentials.
func (s Server) Check() error {
	if _, problem := s.exposure(); problem != "" {
		return errors.New(problem)
	}
	return nil
}

// exposure names the setting that would serve anyone who can reach it,
// and the problem with its fix; "" when there is none.
func (s Server) exposure() (field, problem string) {
	switch {
	case s.Listen != "" && s.TokenFile == "" && (s.TLS == nil || s.TLS.ClientCAFile == ""):
		return "listen", fmt.Sprintf("the TCP API would take requests from anyone who can reach %s: set token_file (a file holding the bearer token clients present), or a tls block with client_ca_file (mutual TLS), or both", s.Listen)
	case s.HTTP != "" && s.TokenFile == "" && !Loopback(s.HTTP):
		return "http", fmt.Sprintf("http = %q would serve the dashboard and the hook endpoint beyond this machine: set token_file, or bind it to loopback (%q)", s.HTTP, DefaultHTTP)
	}
	return "", ""
}

// Loopback reports whether a host:port address is on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) hooks(rh *rawHooks, cfg *Config) Hooks {
	h := Hooks{WhenUnreachable: HookAllow}
	if rh != nil {
		at := func(name string) hcl.Range { return hclspot.Attr(rh.Body, name, rh.DefRange) }
		if rh.WhenUnreachable != nil {
			h.WhenUnreachable = *rh.WhenUnreachable
			if h.WhenUnreachable != HookAllow && h.WhenUnreachable != HookDeny {
				v.errorf(at("when_unreachable"), "Invalid hook policy", "when_unreachable must be %q (fail open: tool uses go ahead when the daemon is down) or %q (fail closed); got %q%s.",
					HookAllow, HookDeny, h.WhenUnreachable, text.Suggest(h.WhenUnreachable, []string{HookAllow, HookDeny}))
			}
		}
		if rh.Agent != nil {
			h.Agent = *rh.Agent
			if a := cfg.Agent(h.Agent); a == nil || a.External == "" {
				v.errorf(at("agent"), "Not an external agent", "hooks.agent must name an agent with external = %q; %q is not one. External agents: %s.",
					ExternalClaudeCode, h.Agent, text.OrNone(agentNames(cfg, true)))
			}
		}
	}
	if h.Agent == "" {
		for _, a := range cfg.Agents {
			if a.External == ExternalClaudeCode {
				h.Agent = a.Name
				break
			}
		}
	}
	return h
}

// agentNames lists the external agents, or those hearth runs itself.
func agentNames(cfg *Config, external bool) []string {
	var out []string
	for _, a := range cfg.Agents {
		if (a.External != "") == external {
			out = append(out, a.Name)
		}
	}
	return out
}

// SocketPath is where the API's unix socket is for a data directory.
func (s Server) SocketPath(dataDir string) string {
	if s.Socket != "" {
		return s.Socket
	}
	return strings.TrimRight(dataDir, "/") + "/" + SocketName
}

// whenUnreachableText finds a when_unreachable setting in a file that
// does not even parse.
var whenUnreachableText = regexp.MustCompile(`(?m)^[ \t]*when_unreachable[ \t]*=[ \t]*"?([A-Za-z_]*)`)

// HookPolicyOf says what `hearth hook` must do when it cannot check a
// tool use, for a config file that does not load (src, its bytes). A
// config that fails to load for any reason — an agent's program gone
// missing, a typo elsewhere — must not quietly turn a fail-closed
// setting into fail-open: so as far as the file can be read at all, a
// hooks block's when_unreachable that says anything but "allow" means
// HookDeny. With no such setting, HookAllow, the default.
func HookPolicyOf(src []byte, filename string) string {
	policy := func(v string) string {
		if v == "" || v == HookAllow {
			return HookAllow
		}
		return HookDeny
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if body, ok := f.Body.(*hclsyntax.Body); ok && body != nil && !diags.HasErrors() {
		for _, b := range body.Blocks {
			if b.Type != "hooks" {
				continue
			}
			if a, ok := b.Body.Attributes["when_unreachable"]; ok {
				v, vd := a.Expr.Value(nil)
				if vd.HasErrors() || v.IsNull() || !v.Type().Equals(cty.String) || !v.IsKnown() {
					return HookDeny // set, to something that is not "allow"
				}
				return policy(v.AsString())
			}
		}
		return HookAllow
	}
	// Broken syntax: read the setting from the text.
	if m := whenUnreachableText.FindSubmatch(src); m != nil {
		return policy(string(m[1]))
	}
	return HookAllow
}
