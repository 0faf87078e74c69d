package config

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/paths"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/matcher"
)

// Options tell Load what the running hearth provides.
type Options struct {
	// Bundled lists the agents the hearth binary serves itself.
	Bundled []string
	// StateHome is where the default data directory is made (see
	// internal/paths.DefaultDataDir); "" means paths.StateHome(os.Getenv).
	StateHome string
	// Getenv reads hearth's environment, where a model's key must be
	// set; nil means os.Getenv.
	Getenv func(string) string
}

// Load reads and validates the configuration file at path. A non-nil error
// is an *Error when the file was read but is not valid.
func Load(path string, opts Options) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(src, path, opts)
}

// Parse validates the configuration src, read from filename. Relative paths
// in it are resolved against filename's directory.
func Parse(src []byte, filename string, opts Options) (*Config, error) {
	p := hclparse()
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	p.files[filename] = file
	if diags.HasErrors() {
		return nil, p.fail(diags)
	}
	// gohcl decodes what it can and reports the rest; validating the
	// partial result too lets one run report every problem in the file.
	var raw rawFile
	diags = append(diags, gohcl.DecodeBody(file.Body, evalContext(), &raw)...)
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", filename, err)
	}
	v := &validator{dir: dir, file: filepath.Join(dir, filepath.Base(filename)), opts: opts, partial: diags.HasErrors(), diags: diags, src: src}
	cfg := v.config(&raw, file.Body)
	cfg.Path = filename
	if v.diags.HasErrors() {
		return nil, p.fail(v.diags)
	}
	cfg.Warnings, cfg.files = v.warnings, p.files
	return cfg, nil
}

type parser struct{ files map[string]*hcl.File }

func hclparse() *parser { return &parser{files: make(map[string]*hcl.File)} }

func (p *parser) fail(diags hcl.Diagnostics) error {
	return &Error{Diagnostics: diags, files: p.files}
}

// The raw* types mirror the file's syntax; validator turns them into the
// typed Config. Pointers tell "absent" from "zero".

type rawFile struct {
	DataDir   *string        `hcl:"data_dir,optional"`
	Agents    []rawAgent     `hcl:"agent,block"`
	Matcher   *matcher.Block `hcl:"matcher,block"`
	Pipelines []rawPipeline  `hcl:"pipeline,block"`
	Guards    []rawGuard     `hcl:"guard,block"`
	GuardPath *rawGuardPaths `hcl:"guards,block"`
	Server    *rawServer     `hcl:"server,block"`
	Hooks     *rawHooks      `hcl:"hooks,block"`
	Cluster   *cluster.Block `hcl:"cluster,block"`
	Store     *rawStore      `hcl:"store,block"`
	Telemetry *rawTelemetry  `hcl:"telemetry,block"`
	// Confinement is every agent's default confinement (confine.go).
	Confinement *string `hcl:"confinement,optional"`
}

type rawAgent struct {
	Name           string            `hcl:"name,label"`
	Bundled        *string           `hcl:"bundled,optional"`
	Command        []string          `hcl:"command,optional"`
	External       *string           `hcl:"external,optional"`
	SHA256         *string           `hcl:"sha256,optional"`
	Capacity       *int              `hcl:"capacity,optional"`
	StartTimeout   *string           `hcl:"start_timeout,optional"`
	TaskTimeout    *string           `hcl:"task_timeout,optional"`
	HealthInterval *string           `hcl:"health_interval,optional"`
	Env            map[string]string `hcl:"env,optional"`
	PassEnv        []string          `hcl:"pass_env,optional"`
	Workspace      *string           `hcl:"workspace,optional"`
	RequireChecks  *bool             `hcl:"require_checks,optional"`
	Confinement    *string           `hcl:"confinement,optional"`
	ReadPaths      []string          `hcl:"read_paths,optional"`
	WritePaths     []string          `hcl:"write_paths,optional"`
	ConnectPorts   []int             `hcl:"connect_ports,optional"`
	Pool           *rawPool          `hcl:"pool,block"`
	Fingerprint    *rawFingerprint   `hcl:"fingerprint,block"`
	Model          *rawModel         `hcl:"model,block"`
	ClaudeCode     *rawClaudeCode    `hcl:"claude_code,block"`
	Body           hcl.Body          `hcl:",body"`
	DefRange       hcl.Range         `hcl:",def_range"`
}

type rawPool struct {
	MaxSessions *int     `hcl:"max_sessions,optional"`
	MaxDormant  *int     `hcl:"max_dormant,optional"`
	IdleTimeout *string  `hcl:"idle_timeout,optional"`
	WhenFull    *string  `hcl:"when_full,optional"`
	Placement   *string  `hcl:"placement,optional"`
	Body        hcl.Body `hcl:",body"`
}

type rawFingerprint struct {
	MaxFiles        *int     `hcl:"max_files,optional"`
	MaxDirectories  *int     `hcl:"max_directories,optional"`
	MaxTechnologies *int     `hcl:"max_technologies,optional"`
	Body            hcl.Body `hcl:",body"`
}

// evalContext is what expressions in the file may use: no variables, and
// the env function for values that differ between machines.
func evalContext() *hcl.EvalContext {
	return &hcl.EvalContext{
		Functions: map[string]function.Function{
			"env": function.New(&function.Spec{
				Description: "The value of an environment variable, or \"\" when it is not set.",
				Params:      []function.Parameter{{Name: "name", Type: cty.String}},
				Type:        function.StaticReturnType(cty.String),
				Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
					return cty.StringVal(os.Getenv(args[0].AsString())), nil
				},
			}),
		},
	}
}

type validator struct {
	// dir is the file's directory, absolute: relative paths are read
	// against it; file is the file's absolute path, for messages.
	dir, file string
	opts      Options
	// partial is set when decoding failed somewhere: an attribute that did
	// not decode looks absent, so absence is not reported.
	partial bool
	diags   hcl.Diagnostics
	// warnings are problems that do not stop the file from loading.
	warnings hcl.Diagnostics
	// src is the file, to place errors inside guard conditions.
	src []byte
	// confinement is the file's default for agents (its confinement
	// attribute), and dataDir the data directory, which no grant may
	// lie in.
	confinement Confinement
	dataDir     string
}

func (v *validator) errorf(subject hcl.Range, summary, detail string, args ...any) {
	v.diags = append(v.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  subject.Ptr(),
	})
}

func (v *validator) warnf(subject hcl.Range, summary, detail string, args ...any) {
	v.warnings = append(v.warnings, &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  subject.Ptr(),
	})
}

func (v *validator) config(raw *rawFile, body hcl.Body) *Config {
	// Every relative path in a file is read against the file's directory,
	// the default data directory included: where state lands must not
	// depend on where the command was run from.
	cfg := &Config{Matcher: v.matcher(raw.Matcher)}
	if raw.DataDir != nil {
		r := hclspot.Attr(body, "data_dir", hclspot.Block(body, hcl.Range{}))
		if strings.TrimSpace(*raw.DataDir) == "" {
			v.errorf(r, "Empty data directory", `data_dir is empty. Remove the line to use the default (in the user's state directory), or name a directory.`)
		}
		cfg.DataDir = v.path(*raw.DataDir)
		cfg.DataDirFrom = "data_dir in " + v.file
	} else {
		home := v.opts.StateHome
		if home == "" {
			home = paths.StateHome(os.Getenv)
		}
		cfg.DataDir, cfg.DataDirFrom, cfg.DataDirMove = paths.DefaultDataDir(v.file, v.dir, home)
	}
	v.confinement, v.dataDir = v.confinementMode(raw.Confinement, hclspot.Attr(body, "confinement", hclspot.Block(body, hcl.Range{})), ConfinementAuto), cfg.DataDir
	seen := make(map[string]hcl.Range)
	for i := range raw.Agents {
		ra := &raw.Agents[i]
		if prev, dup := seen[ra.Name]; dup {
			v.errorf(ra.DefRange, "Duplicate agent", "An agent named %q is already declared at %s. Give each agent block its own name.", ra.Name, prev)
			continue
		}
		seen[ra.Name] = ra.DefRange
		cfg.Agents = append(cfg.Agents, v.agent(ra))
	}
	pseen := make(map[string]hcl.Range)
	for i := range raw.Pipelines {
		rp := &raw.Pipelines[i]
		if prev, dup := pseen[rp.Name]; dup {
			v.errorf(rp.DefRange, "Duplicate pipeline", "A pipeline named %q is already declared at %s. Give each pipeline its own name.", rp.Name, prev)
			continue
		}
		pseen[rp.Name] = rp.DefRange
		cfg.Pipelines = append(cfg.Pipelines, v.pipeline(rp, cfg))
	}
	v.guardPaths(raw.GuardPath, cfg)
	v.guards(raw.Guards, cfg, v.src)
	cfg.Server = v.server(raw.Server)
	cfg.Hooks = v.hooks(raw.Hooks, cfg)
	cfg.Cluster = v.cluster(raw.Cluster)
	cfg.Store = v.store(raw.Store)
	cfg.Telemetry = v.telemetry(raw.Telemetry)
	return cfg
}

func (v *validator) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(v.dir, p)
}

func (v *validator) agent(ra *rawAgent) *Agent {
	a := DefaultAgent(ra.Name)
	a.Workspace = v.dir
	at := func(name string) hcl.Range { return hclspot.Attr(ra.Body, name, ra.DefRange) }

	if !validName(ra.Name) {
		v.errorf(ra.DefRange, "Invalid agent name", "Agent name %q must start with a letter and hold only letters, digits, '-' and '_'; it is used in session IDs and log names.", ra.Name)
	}
	switch {
	case ra.External != nil:
		v.external(ra, a)
	case ra.Bundled == nil && ra.Command == nil:
		if v.partial {
			break
		}
		v.errorf(ra.DefRange, "Agent without a program",
			"Agent %q needs a program: set bundled = \"<name>\" for an agent that ships with hearth (%s), command = [\"path/to/agent\"] for your own, or external = %q for sessions hearth does not run but follows through hooks.",
			ra.Name, text.OrNone(v.opts.Bundled), ExternalClaudeCode)
	case ra.Bundled != nil && ra.Command != nil:
		v.errorf(at("command"), "Conflicting program", "Agent %q sets both bundled and command; keep only one.", ra.Name)
	case ra.Bundled != nil:
		a.Bundled = *ra.Bundled
		if !slices.Contains(v.opts.Bundled, a.Bundled) {
			v.errorf(at("bundled"), "Unknown bundled agent", "There is no bundled agent named %q%s. Bundled agents: %s.",
				a.Bundled, text.Suggest(a.Bundled, v.opts.Bundled), text.OrNone(v.opts.Bundled))
		}
		if ra.SHA256 != nil {
			v.errorf(at("sha256"), "Checksum on a bundled agent", "sha256 pins the program of a command; a bundled agent is part of the hearth binary. Remove sha256, or use command.")
		}
	default:
		if len(ra.Command) == 0 || strings.TrimSpace(ra.Command[0]) == "" {
			v.errorf(at("command"), "Empty command", "command must name a program, as in command = [\"./bin/my-agent\", \"--flag\"].")
		} else {
			a.Command = slices.Clone(ra.Command)
			if strings.ContainsRune(a.Command[0], filepath.Separator) {
				a.Command[0] = v.path(a.Command[0])
			}
		}
	}
	if ra.SHA256 != nil && ra.Bundled == nil {
		sum := strings.ToLower(strings.TrimSpace(*ra.SHA256))
		if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
			v.errorf(at("sha256"), "Invalid checksum", "sha256 must be 64 hexadecimal digits, as printed by `sha256sum %s`.", firstOr(ra.Command, "path/to/agent"))
		}
		a.SHA256 = sum
	}
	if ra.Capacity != nil {
		a.Capacity = *ra.Capacity
		if a.Capacity < 1 {
			v.errorf(at("capacity"), "Invalid capacity", "capacity is the number of tasks one session runs at once; it must be at least 1 (got %d). Remove it to use the capacity the agent declares.", a.Capacity)
		}
	}
	a.StartTimeout = v.duration(ra.StartTimeout, at("start_timeout"), "start_timeout", a.StartTimeout)
	a.TaskTimeout = v.duration(ra.TaskTimeout, at("task_timeout"), "task_timeout", a.TaskTimeout)
	a.HealthInterval = v.duration(ra.HealthInterval, at("health_interval"), "health_interval", a.HealthInterval)
	if ra.Env != nil {
		a.Env = ra.Env
	}
	if ra.PassEnv != nil {
		a.PassEnv = append([]string{}, ra.PassEnv...)
		for _, name := range a.PassEnv {
			if name == "" || strings.ContainsAny(name, "= ") {
				v.errorf(at("pass_env"), "Invalid pass_env", "pass_env lists the names of the host's environment variables the plugin gets, such as [\"PATH\", \"HOME\"]; %q is not a variable name.", name)
			}
		}
	}
	if ra.Workspace != nil {
		a.Workspace = v.path(*ra.Workspace)
	}
	if ra.Model != nil {
		if ra.External != nil {
			v.errorf(ra.Model.DefRange, "Model on an external agent", "Agent %q is external: hearth does not run it, so a model block configures nothing. Remove it, or use bundled = \"model\".", ra.Name)
		} else {
			v.model(ra, a)
		}
	}
	if ra.RequireChecks != nil {
		a.RequireChecks = *ra.RequireChecks
	}
	if ra.External == nil {
		v.agentConfinement(ra, a)
	}
	if ra.ClaudeCode != nil {
		if ra.External != nil {
			v.errorf(ra.ClaudeCode.DefRange, "claude_code on an external agent", "Agent %q is external: hearth does not run it, so a claude_code block configures nothing. Remove it, or use bundled = \"claude\" for sessions hearth starts.", ra.Name)
		} else {
			v.claudeCode(ra, a)
		}
	}
	if p := ra.Pool; p != nil {
		pat := func(name string) hcl.Range { return hclspot.Attr(p.Body, name, hclspot.Block(p.Body, ra.DefRange)) }
		if p.MaxSessions != nil {
			a.Pool.MaxSessions = *p.MaxSessions
			if a.Pool.MaxSessions < 1 {
				v.errorf(pat("max_sessions"), "Invalid pool size", "max_sessions must be at least 1 (got %d).", a.Pool.MaxSessions)
			}
		}
		a.Pool.IdleTimeout = v.duration(p.IdleTimeout, pat("idle_timeout"), "idle_timeout", a.Pool.IdleTimeout)
		if p.MaxDormant != nil {
			a.Pool.MaxDormant = *p.MaxDormant
			switch {
			case a.Pool.MaxDormant < 0:
				v.errorf(pat("max_dormant"), "Invalid limit", "max_dormant must be 0 (keep no retired sessions) or more (got %d).", a.Pool.MaxDormant)
			case a.Pool.MaxDormant == 0:
				// Zero is the pool's default: keeping none is -1 (Pool).
				a.Pool.MaxDormant = -1
			}
		}
		if p.WhenFull != nil {
			a.Pool.WhenFull = hearth.WhenFull(*p.WhenFull)
			if a.Pool.WhenFull != hearth.WhenFullWait && a.Pool.WhenFull != hearth.WhenFullRetireIdle {
				v.errorf(pat("when_full"), "Invalid full-pool policy", "when_full must be %q (the task waits for a free session) or %q (the least recently used idle session is retired); got %q.",
					hearth.WhenFullWait, hearth.WhenFullRetireIdle, *p.WhenFull)
			}
		}
		if p.Placement != nil {
			a.Pool.Placement = hearth.Placement(*p.Placement)
			switch a.Pool.Placement {
			case hearth.PlacementMatcher, hearth.PlacementFresh, hearth.PlacementRoundRobin:
			default:
				v.errorf(pat("placement"), "Invalid placement", "placement must be %q (hearth's: the session that knows the task's context), or a baseline to measure it against: %q (a new session per task) or %q (a warm pool in rotation); got %q%s.",
					hearth.PlacementMatcher, hearth.PlacementFresh, hearth.PlacementRoundRobin, *p.Placement, text.Suggest(*p.Placement, []string{string(hearth.PlacementMatcher), string(hearth.PlacementFresh), string(hearth.PlacementRoundRobin)}))
			}
		}
	}
	if f := ra.Fingerprint; f != nil {
		fat := func(name string) hcl.Range { return hclspot.Attr(f.Body, name, hclspot.Block(f.Body, ra.DefRange)) }
		v.limit(f.MaxFiles, fat("max_files"), "max_files", &a.Fingerprint.MaxFiles)
		v.limit(f.MaxDirectories, fat("max_directories"), "max_directories", &a.Fingerprint.MaxDirectories)
		v.limit(f.MaxTechnologies, fat("max_technologies"), "max_technologies", &a.Fingerprint.MaxTechnologies)
	}
	return a
}

// matcher decodes the matcher block: the block, its defaults and its
// checks are package matcher's (matcher.Block), so that a new placement
// factor's weight needs nothing here.
func (v *validator) matcher(b *matcher.Block) Matcher {
	// The idle timeout is each agent pool's, not the block's
	// (engine.PoolSettings, pool.Spec.WithDefaults).
	c, diags := b.Decode(evalContext())
	v.diags = append(v.diags, diags...)
	return Matcher{Weights: c.Weights, Threshold: c.Threshold, TopK: c.TopK}
}

func (v *validator) duration(s *string, r hcl.Range, name string, def time.Duration) time.Duration {
	if s == nil {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(*s))
	if err != nil {
		v.errorf(r, "Invalid duration", "%s must be a duration such as \"30s\", \"5m\" or \"1h30m\"; %q is not one%s.", name, *s, text.DaysHint(*s))
		return def
	}
	if d <= 0 {
		v.errorf(r, "Invalid duration", "%s must be positive (got %s).", name, *s)
		return def
	}
	return d
}

func (v *validator) limit(n *int, r hcl.Range, name string, dst *int) {
	if n == nil {
		return
	}
	if *n < 1 {
		v.errorf(r, "Invalid limit", "%s must be at least 1 (got %d).", name, *n)
		return
	}
	*dst = *n
}

func validName(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func firstOr(s []string, def string) string {
	if len(s) > 0 && s[0] != "" {
		return s[0]
	}
	return def
}
