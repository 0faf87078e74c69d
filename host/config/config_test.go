package config

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var opts = Options{Bundled: []string{"gotour", "echo"}}

func TestParseValid(t *testing.T) {
	src := `
data_dir = "state"

agent "tour" {
  bundled  = "gotour"
  capacity = 2
  pool {
    max_sessions = 8
    idle_timeout = "10m"
    when_full    = "retire_idle"
  }
  fingerprint {
    max_files = 50
  }
}

agent "mine" {
  command       = ["./bin/my-agent", "--verbose"]
  sha256        = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
  start_timeout = "2s"
  task_timeout  = "90s"
  env           = { MODE = "fast" }
  workspace     = "/srv/repo"
}
`
	cfg, err := Parse([]byte(src), "/etc/hearth/hearth.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/etc/hearth/state" {
		t.Errorf("data_dir: got %q, want it resolved against the file's directory", cfg.DataDir)
	}
	tour := cfg.Agent("tour")
	if tour == nil || tour.Bundled != "gotour" || tour.Capacity != 2 {
		t.Fatalf("tour: got %+v", tour)
	}
	wantPool := Pool{MaxSessions: 8, IdleTimeout: 10 * time.Minute, WhenFull: hearth.WhenFullRetireIdle, Placement: hearth.PlacementMatcher}
	if tour.Pool != wantPool {
		t.Errorf("tour pool: got %+v, want %+v", tour.Pool, wantPool)
	}
	if tour.Fingerprint != (Fingerprint{MaxFiles: 50}) {
		t.Errorf("tour fingerprint: got %+v", tour.Fingerprint)
	}
	if tour.StartTimeout != DefaultStartTimeout || tour.Workspace != "/etc/hearth" {
		t.Errorf("tour defaults: got start_timeout %s, workspace %q", tour.StartTimeout, tour.Workspace)
	}
	mine := cfg.Agent("mine")
	if mine.Command[0] != "/etc/hearth/bin/my-agent" || mine.Command[1] != "--verbose" {
		t.Errorf("mine command: got %q, want the program resolved against the file's directory", mine.Command)
	}
	if mine.SHA256 != strings.ToLower("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855") {
		t.Errorf("mine sha256: got %q, want it lower-cased", mine.SHA256)
	}
	if mine.StartTimeout != 2*time.Second || mine.TaskTimeout != 90*time.Second || mine.Env["MODE"] != "fast" || mine.Workspace != "/srv/repo" {
		t.Errorf("mine: got %+v", mine)
	}
	// Numbers left out stay unset: the pool's defaults (host/pool).
	if mine.Pool.MaxSessions != 0 || mine.Pool.MaxDormant != 0 || mine.Pool.WhenFull != hearth.WhenFullWait {
		t.Errorf("mine pool defaults: got %+v", mine.Pool)
	}
}

func TestParseMatcher(t *testing.T) {
	src := `
matcher {
  threshold = 0.5
  top_k     = 3
  weights {
    directory = 0.40
    file      = 0.25
    tech      = 0.10
    freshness = 0.15
    load      = 0.10
  }
}
agent "a" {
  bundled = "gotour"
  pool { idle_timeout = "5m" }
}`
	cfg, err := Parse([]byte(src), "m.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if mc := cfg.Matcher; mc.Threshold != 0.5 || mc.TopK != 3 || mc.Weights.Directory != 0.40 || mc.Weights.Tech != 0.10 {
		t.Errorf("got %+v", mc)
	}
	if idle := cfg.Agent("a").Pool.IdleTimeout; idle != 5*time.Minute {
		t.Errorf("idle_timeout: got %s, want 5m", idle)
	}
	if d := Default(nil).Matcher; d.Threshold != 0.6 || d.Weights.Directory != 0.30 {
		t.Errorf("default matcher: got %+v", d)
	}
}

func TestParsePipeline(t *testing.T) {
	src := `
agent "gotour" { bundled = "gotour" }
agent "other" { bundled = "echo" }
pipeline "tour" {
  description = "a walk"
  parallel    = 2
  agent       = "gotour"
  task "one" {
    prompt      = "summary net/http"
    directories = ["net/http"]
    technologies = ["go"]
  }
  task "two" {
    agent      = "other"
    prompt     = "say hi"
    files      = ["a.go"]
    depends_on = ["one"]
  }
}`
	cfg, err := Parse([]byte(src), "p.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Pipeline("tour")
	if p == nil || p.Parallel != 2 || p.Description != "a walk" || len(p.Tasks) != 2 {
		t.Fatalf("got %+v", p)
	}
	one, two := p.Tasks[0], p.Tasks[1]
	if one.Agent != "gotour" || one.Hints.Directories[0] != "net/http" || one.Hints.Technologies[0] != "go" {
		t.Errorf("one: got %+v", one)
	}
	if two.Agent != "other" || two.DependsOn[0] != "one" || two.Hints.Files[0] != "a.go" {
		t.Errorf("two: got %+v", two)
	}
}

func TestParseEnvFunction(t *testing.T) {
	t.Setenv("HEARTH_TEST_AGENT_BIN", "/opt/agent")
	cfg, err := Parse([]byte(`agent "a" { command = [env("HEARTH_TEST_AGENT_BIN")] }`), "x.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agent("a").Command[0]; got != "/opt/agent" {
		t.Errorf("got %q, want /opt/agent", got)
	}
}

// TestParseErrors pins each kind of error to the position it reports.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  string // file:line:col of the first error
		want string
	}{
		{"syntax", "agent \"a\" {\n  bundled = \n}\n", "t.hcl:2:13", "Invalid expression"},
		{"unknown attribute", "agent \"a\" {\n  bundled = \"gotour\"\n  capacty = 2\n}\n", "t.hcl:3:3", `An argument named "capacty" is not expected here. Did you mean "capacity"?`},
		{"unknown block", "agnet \"a\" {\n}\n", "t.hcl:1:1", `Blocks of type "agnet" are not expected here. Did you mean "agent"?`},
		{"unknown top-level attribute", "datadir = \"x\"\n", "t.hcl:1:1", `An argument named "datadir" is not expected here. Did you mean "data_dir"?`},
		{"wrong type", "agent \"a\" {\n  bundled  = \"gotour\"\n  capacity = \"four\"\n}\n", "t.hcl:3:15", "a number is required"},
		{"no program", "agent \"a\" {\n}\n", "t.hcl:1:1", `Agent "a" needs a program: set bundled = "<name>"`},
		{"both programs", "agent \"a\" {\n  bundled = \"gotour\"\n  command = [\"x\"]\n}\n", "t.hcl:3:13", "sets both bundled and command"},
		{"unknown bundled agent", "agent \"a\" {\n  bundled = \"gotuor\"\n}\n", "t.hcl:2:13", `There is no bundled agent named "gotuor" (did you mean "gotour"?). Bundled agents: gotour, echo.`},
		{"empty command", "agent \"a\" {\n  command = []\n}\n", "t.hcl:2:13", "command must name a program"},
		{"bad checksum", "agent \"a\" {\n  command = [\"./x\"]\n  sha256 = \"abc\"\n}\n", "t.hcl:3:12", "sha256 must be 64 hexadecimal digits"},
		{"checksum on bundled", "agent \"a\" {\n  bundled = \"gotour\"\n  sha256 = \"abc\"\n}\n", "t.hcl:3:12", "a bundled agent is part of the hearth binary"},
		{"bad duration", "agent \"a\" {\n  bundled = \"gotour\"\n  start_timeout = \"5 seconds\"\n}\n", "t.hcl:3:19", `start_timeout must be a duration such as "30s"`},
		{"negative duration", "agent \"a\" {\n  bundled = \"gotour\"\n  task_timeout = \"-1m\"\n}\n", "t.hcl:3:18", "task_timeout must be positive"},
		{"zero capacity", "agent \"a\" {\n  bundled = \"gotour\"\n  capacity = 0\n}\n", "t.hcl:3:14", "it must be at least 1 (got 0)"},
		{"bad pool policy", "agent \"a\" {\n  bundled = \"gotour\"\n  pool {\n    when_full = \"drop\"\n  }\n}\n", "t.hcl:4:17", `when_full must be "wait"`},
		{"bad pool size", "agent \"a\" {\n  bundled = \"gotour\"\n  pool {\n    max_sessions = 0\n  }\n}\n", "t.hcl:4:20", "max_sessions must be at least 1"},
		{"bad limit", "agent \"a\" {\n  bundled = \"gotour\"\n  fingerprint {\n    max_files = -5\n  }\n}\n", "t.hcl:4:17", "max_files must be at least 1"},
		{"duplicate agent", "agent \"a\" {\n  bundled = \"gotour\"\n}\nagent \"a\" {\n  bundled = \"echo\"\n}\n", "t.hcl:4:1", `An agent named "a" is already declared at t.hcl:1,1-10`},
		{"bad name", "agent \"my agent\" {\n  bundled = \"gotour\"\n}\n", "t.hcl:1:1", `Agent name "my agent" must start with a letter`},
		{"empty data dir", "data_dir = \"\"\n", "t.hcl:1:12", "data_dir is empty"},
		{"missing label", "agent {\n  bundled = \"gotour\"\n}\n", "t.hcl:1:7", "Missing name for agent"},
		{"weights do not sum to 1", "matcher {\n  weights {\n    directory = 0.5\n  }\n}\n", "t.hcl:2:11", "matcher weights sum to 1.20"},
		{"negative weight", "matcher {\n  weights {\n    file = -0.25\n    directory = 0.8\n  }\n}\n", "t.hcl:3:12", "weights.file is -0.25"},
		{"threshold out of range", "matcher {\n  threshold = 1.5\n}\n", "t.hcl:2:15", "threshold is 1.50"},
		{"top_k zero", "matcher {\n  top_k = 0\n}\n", "t.hcl:2:11", "top_k"},
		{"pipeline unknown agent", "pipeline \"p\" {\n  agent = \"gotuor\"\n  task \"a\" {\n    prompt = \"x\"\n  }\n}\nagent \"gotour\" {\n  bundled = \"gotour\"\n}\n", "t.hcl:2:11", `There is no agent named "gotuor" (did you mean "gotour"?)`},
		{"pipeline cycle", "agent \"g\" {\n  bundled = \"gotour\"\n}\npipeline \"p\" {\n  agent = \"g\"\n  task \"a\" {\n    prompt = \"x\"\n    depends_on = [\"c\"]\n  }\n  task \"b\" {\n    prompt = \"x\"\n    depends_on = [\"a\"]\n  }\n  task \"c\" {\n    prompt = \"x\"\n    depends_on = [\"b\"]\n  }\n}\n", "t.hcl:8:19", "in a circle: a -> c -> b -> a"},
		{"pipeline unknown dependency", "agent \"g\" {\n  bundled = \"gotour\"\n}\npipeline \"p\" {\n  agent = \"g\"\n  task \"a\" {\n    prompt = \"x\"\n    depends_on = [\"b\"]\n  }\n}\n", "t.hcl:8:19", `depends on "b", which is not a task`},
		{"pipeline without tasks", "pipeline \"p\" {\n}\n", "t.hcl:1:1", "has no tasks"},
		{"task without prompt", "agent \"g\" {\n  bundled = \"gotour\"\n}\npipeline \"p\" {\n  task \"a\" {\n    agent = \"g\"\n  }\n}\n", "t.hcl:5:12", `The argument "prompt" is required`},
		{"unknown external kind", "agent \"cc\" {\n  external = \"claude_code\"\n}\n", "t.hcl:2:14", `hearth knows claude-code, not "claude_code" (did you mean "claude-code"?)`},
		{"external with a command", "agent \"cc\" {\n  external = \"claude-code\"\n  command  = [\"x\"]\n}\n", "t.hcl:3:14", "command does not apply"},
		{"task for an external agent", "agent \"cc\" {\n  external = \"claude-code\"\n}\npipeline \"p\" {\n  task \"a\" {\n    agent  = \"cc\"\n    prompt = \"x\"\n  }\n}\n", "t.hcl:6:14", `Agent "cc" is external`},
		{"tcp without credentials", "server {\n  listen = \"0.0.0.0:7410\"\n}\n", "t.hcl:2:12", "set token_file"},
		{"http beyond loopback", "server {\n  http = \"0.0.0.0:80\"\n}\n", "t.hcl:2:10", "set token_file, or bind it to loopback"},
		{"bad address", "server {\n  http = \"7411\"\n}\n", "t.hcl:2:10", "http must be host:port"},
		{"tls without tcp", "server {\n  tls {\n    cert_file = \"c\"\n    key_file  = \"k\"\n  }\n}\n", "t.hcl:2:3", "The tls block secures the TCP API, which is off"},
		{"hook policy", "hooks {\n  when_unreachable = \"block\"\n}\n", "t.hcl:2:22", `when_unreachable must be "allow"`},
		{"hooks agent not external", "agent \"g\" {\n  bundled = \"gotour\"\n}\nhooks {\n  agent = \"g\"\n}\n", "t.hcl:5:11", `hooks.agent must name an agent with external`},
		{"negative max_dormant", "agent \"a\" {\n  bundled = \"gotour\"\n  pool {\n    max_dormant = -1\n  }\n}\n", "t.hcl:4:19", "max_dormant must be 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "t.hcl", opts)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if !strings.HasPrefix(first, tt.pos+": ") {
				t.Errorf("got %q, want it at %s", first, tt.pos)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestAllErrorsAreReported(t *testing.T) {
	src := "agent \"a\" {\n  bundled = \"nope\"\n  capacity = 0\n  task_timeout = \"soon\"\n}\n"
	_, err := Parse([]byte(src), "t.hcl", opts)
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Diagnostics) != 3 {
		t.Fatalf("got %v, want three errors reported at once", err)
	}
}

// TestDiagnosticsGolden pins the full text an operator sees, source quote
// included. Run with -update to rewrite the golden files.
func TestDiagnosticsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/invalid/*.hcl: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f, opts)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			var buf bytes.Buffer
			if err := ce.Write(&buf, 78, false); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if buf.String() != string(want) {
				t.Errorf("diagnostics differ from %s:\ngot:\n%s\nwant:\n%s", golden, buf.String(), want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.hcl"), opts)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}

func TestDefault(t *testing.T) {
	cfg := Default([]string{"gotour"})
	a := cfg.Agent("gotour")
	if cfg.DataDir != "" || a == nil || a.Bundled != "gotour" || a.Pool.IdleTimeout != 0 || a.Pool.WhenFull != hearth.WhenFullWait {
		t.Errorf("got %+v / %+v", cfg, a)
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.hcl")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`agent "a" { bundled = "gotour" }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, err := Parse(src, "fuzz.hcl", opts)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				// Every diagnostic must point into the file.
				for _, d := range ce.Diagnostics {
					if d.Subject == nil {
						t.Fatalf("diagnostic without a position: %s: %s", d.Summary, d.Detail)
					}
				}
				var buf bytes.Buffer
				_ = ce.Write(&buf, 0, false)
			}
			return
		}
		for _, a := range cfg.Agents {
			// Exactly one of a bundled program, a command, or none
			// (external).
			n := 0
			for _, set := range []bool{a.Bundled != "", len(a.Command) > 0, a.External != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("agent %q validated with %d of bundled, command and external", a.Name, n)
			}
		}
		if cfg.Server.Listen != "" && cfg.Server.TokenFile == "" && (cfg.Server.TLS == nil || cfg.Server.TLS.ClientCAFile == "") {
			t.Fatalf("TCP validated without credentials: %+v", cfg.Server)
		}
		for _, p := range cfg.Pipelines {
			// What a file may hold, the Go API takes as it is.
			cp := *p
			cp.Defaults()
			if !reflect.DeepEqual(cp, *p) {
				t.Fatalf("Defaults changed loaded pipeline %q:\ngot  %+v\nwant %+v", p.Name, cp, *p)
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("Validate refused loaded pipeline %q: %v", p.Name, err)
			}
			for _, task := range p.Tasks {
				if cfg.Agent(task.Agent) == nil {
					t.Fatalf("task %q validated with unknown agent %q", task.Name, task.Agent)
				}
			}
			for _, o := range p.State.Owners {
				if cfg.Agent(o.Agent) == nil {
					t.Fatalf("owner %q validated without its agent", o.Agent)
				}
			}
			if err := checkTemplate(p.Context.Template); err != nil {
				t.Fatalf("context template validated but does not build: %v", err)
			}
			prev := time.Duration(0)
			for _, f := range []int{1, 2, 3, 64, math.MaxInt} {
				d := p.Retry.Delay(f)
				if d <= 0 || d > p.Retry.MaxBackoff || d < prev {
					t.Fatalf("retry %+v: Delay(%d) = %v", p.Retry, f, d)
				}
				prev = d
			}
		}
	})
}

func TestServerHooksAndExternalAgents(t *testing.T) {
	cfg, err := Parse([]byte(`
agent "cc" {
  external = "claude-code"
}
server {
  socket     = "run/hearth.sock"
  listen     = "0.0.0.0:7410"
  http       = ""
  token_file = "token"
}
hooks {
  when_unreachable = "deny"
}
`), "/etc/hearth/hearth.hcl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agent("cc")
	if a.External != ExternalClaudeCode || a.Workspace != "" || a.Capacity != 1 || a.Command != nil {
		t.Errorf("external agent %+v", a)
	}
	want := Server{Socket: "/etc/hearth/run/hearth.sock", Listen: "0.0.0.0:7410", TokenFile: "/etc/hearth/token"}
	if !reflect.DeepEqual(cfg.Server, want) {
		t.Errorf("server %+v, want %+v", cfg.Server, want)
	}
	// The one claude-code agent takes the hooks unless hooks.agent says.
	if cfg.Hooks != (Hooks{Agent: "cc", WhenUnreachable: HookDeny}) {
		t.Errorf("hooks %+v", cfg.Hooks)
	}
	if got := cfg.Server.SocketPath("/var/lib/hearth"); got != want.Socket {
		t.Errorf("socket path %q", got)
	}
	// Without a server block: the dashboard on loopback, the socket in
	// the data directory.
	d := Default(nil)
	if d.Server.HTTP != DefaultHTTP || d.Server.SocketPath("/d/") != "/d/hearth.sock" || d.Hooks.Agent != DefaultExternalAgent {
		t.Errorf("defaults %+v %+v", d.Server, d.Hooks)
	}
}

func TestParseRequireChecks(t *testing.T) {
	cfg, err := Parse([]byte(`
agent "a" {
  command        = ["/opt/agent"]
  require_checks = true
}
agent "b" { command = ["/opt/agent"] }
pipeline "p" {
  agent          = "b"
  require_checks = true
  task "t" { prompt = "x" }
}
pipeline "q" {
  agent = "b"
  task "t" { prompt = "x" }
}`), "x.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Agent("a").RequireChecks || cfg.Agent("b").RequireChecks {
		t.Errorf("agents' require_checks: a %t, b %t; want true, false", cfg.Agent("a").RequireChecks, cfg.Agent("b").RequireChecks)
	}
	if !cfg.Pipeline("p").RequireChecks || cfg.Pipeline("q").RequireChecks {
		t.Errorf("pipelines' require_checks: p %t, q %t; want true, false", cfg.Pipeline("p").RequireChecks, cfg.Pipeline("q").RequireChecks)
	}
}

// TestDiagnosticsInTheSameOrder reproduces issue 14's ninth finding: the
// order of several diagnostics changed between runs (map iteration).
func TestDiagnosticsInTheSameOrder(t *testing.T) {
	src := []byte(`
guards {
  path_fields = { "" = ["path"], "mcp__b" = [""], "mcp__c" = ["", "x"] }
}
agent "a" { command = ["x"] }
pipeline "p" {
  agent = "a"
  task "t" {
    prompt   = "x"
    metadata = { a = null, b = ["list"], c = null, d = {}, e = null }
  }
}
`)
	_, err := Parse(src, "x.hcl", opts)
	if err == nil {
		t.Fatal("no error")
	}
	first := err.Error()
	for i := range 30 {
		if _, err := Parse(src, "x.hcl", opts); err == nil || err.Error() != first {
			t.Fatalf("run %d gave the diagnostics in another order:\n%v\nthe first:\n%s", i, err, first)
		}
	}
}

func TestParsePassEnv(t *testing.T) {
	cfg, err := Parse([]byte(`
agent "a" {
  command  = ["/opt/agent"]
  pass_env = ["PATH", "OPENAI_API_KEY"]
}
agent "b" { command = ["/opt/agent"] }`), "x.hcl", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agent("a").PassEnv; len(got) != 2 || got[1] != "OPENAI_API_KEY" {
		t.Errorf("pass_env = %q", got)
	}
	if cfg.Agent("b").PassEnv != nil {
		t.Errorf("without pass_env: %q, want nil (the default)", cfg.Agent("b").PassEnv)
	}
	_, err = Parse([]byte(`agent "a" {
  command  = ["/opt/agent"]
  pass_env = ["A=B"]
}`), "x.hcl", opts)
	if err == nil || !strings.Contains(err.Error(), "x.hcl:3:") || !strings.Contains(err.Error(), `"A=B" is not a variable name`) {
		t.Errorf("a bad name: %v", err)
	}
}

// TestHookPolicyOf: a config that does not load still fails closed when
// it says so (issue 13: it quietly flipped to allow).
func TestHookPolicyOf(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"deny, and an error elsewhere", "agent \"x\" {\n  bundled = \"nope\"\n}\nhooks {\n  when_unreachable = \"deny\"\n}\n", HookDeny},
		{"allow", "hooks {\n  when_unreachable = \"allow\"\n}\nbogus = 1\n", HookAllow},
		{"no hooks block", "agent \"x\" {\n  bundled = \"nope\"\n}\n", HookAllow},
		{"a value that is not allow", "hooks {\n  when_unreachable = \"Deny\"\n}\n", HookDeny},
		{"not a string", "hooks {\n  when_unreachable = 5\n}\n", HookDeny},
		{"an expression", "hooks {\n  when_unreachable = var.x\n}\n", HookDeny},
		{"broken syntax after deny", "hooks {\n  when_unreachable = \"deny\"\n}\nagent \"x\" {\n  command = [\n", HookDeny},
		{"broken syntax, unquoted", "hooks {\n when_unreachable = deny\n\n{{{", HookDeny},
		{"broken syntax, allow", "hooks {\n  when_unreachable = \"allow\"\n}\n}}}", HookAllow},
		{"empty", "", HookAllow},
	} {
		if got := HookPolicyOf([]byte(tc.src), "hearth.hcl"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzHookPolicyOf: never panics, and on a config that loads it reads
// what loading reads.
func FuzzHookPolicyOf(f *testing.F) {
	for _, s := range []string{
		"hooks {\n  when_unreachable = \"deny\"\n}\n", "hooks {\n  when_unreachable = \"allow\"\n}\n",
		"agent \"c\" {\n  external = \"claude-code\"\n}\nhooks {\n  when_unreachable = \"deny\"\n}\n",
		"agent \"c\" {\n  external = \"claude-code\"\n}\n", "hooks {}\n", "hooks {\nwhen_unreachable = \"deny\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got := HookPolicyOf(src, "hearth.hcl")
		if got != HookAllow && got != HookDeny {
			t.Fatalf("policy %q", got)
		}
		if cfg, err := Parse(src, "hearth.hcl", Options{}); err == nil && cfg.Hooks.WhenUnreachable != got {
			t.Fatalf("the config loads with when_unreachable %q; HookPolicyOf says %q:\n%s", cfg.Hooks.WhenUnreachable, got, src)
		}
	})
}
