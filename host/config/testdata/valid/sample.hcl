# hearth configuration: every setting, with its default.
#
# Check a file with `hearth config validate FILE`; try its guards with
# `hearth guard check`. A running host reloads its file on SIGHUP. Unknown
# settings are errors: the file says what it means or it does not load.

# Where hearth keeps its state (sessions, events, runs); a relative path
# is read against this file. By default it is one directory per config
# file in the user's state directory ($XDG_STATE_HOME/hearth, else
# ~/.local/state/hearth), outside every agent's workspace: a confined
# plugin can never reach the data directory, and Landlock grants whole
# directory trees, so one inside a workspace would cost the plugin its
# own workspace root. The --data-dir flag and HEARTH_DATA_DIR override it.
# data_dir = "/var/lib/hearth"

# On Linux, plugins run under Landlock: their workspace, what programs
# need (/usr, /lib, /etc), the paths their block grants, nothing else;
# never the data directory (docs/confinement.md). "auto" confines where
# the kernel can and says so at start where it cannot; "require" refuses
# to start plugins there; "off". Each agent block may set its own.
# confinement = "auto"

# An agent is a plugin program. Declare one block per agent; its name is
# what tasks and guards refer to.
agent "gotour" {
  # Exactly one of bundled (an agent that ships inside the hearth binary)
  # and command (your own plugin program, relative to this file).
  bundled = "gotour"
  # command = ["./bin/my-agent", "--flag"]
  # sha256  = "<64 hex digits>"  # refuse to start a command whose program changed

  # capacity      = 1        # tasks a session runs at once; default: what the agent declares
  # start_timeout = "10s"    # spawn + handshake + first call
  # task_timeout  = "10m"    # a task running longer is a hung plugin: its session is stopped
  # health_interval = "10s"  # how often live plugins are pinged
  # workspace = "."          # tool-use paths are made relative to it (default: this file's directory)
  # env = { LOG_FORMAT = "json" }
  # pass_env = ["PATH", "HOME"]  # host variables the plugin gets (default: PATH, HOME, USER, LANG, LC_ALL, TZ, TMPDIR; nothing else)
  # require_checks = true    # a guarded tool use reported without asking fails its task (default: flagged only)
  # confinement   = "auto"   # as the file's; "off" runs this agent's plugins unconfined
  # read_paths    = []       # beyond the workspace, read (and execute) only
  # write_paths   = []       # beyond the workspace, read and write
  # connect_ports = [443]    # TCP connects to these ports only (default: TCP not restricted)

  pool {
    max_sessions = 4       # plugin processes at most
    idle_timeout = "30m"   # idle sessions are retired: state saved, process stopped
    when_full    = "wait"  # or "retire_idle": retire the least recently used idle session
    max_dormant  = 64      # retired sessions kept for rehydration
  }

  # What a session remembers of what it touched, least recently used
  # forgotten first.
  fingerprint {
    max_files        = 1000
    max_directories  = 256
    max_technologies = 32
  }
}

# A managed Claude Code agent: hearth starts, resumes and places Claude
# Code sessions, one per hearth session, with the hooks wired by hearth
# (plugins/claude). The block grants claude's directory and the model
# endpoint's port; every setting is optional.
# agent "coder" {
#   bundled = "claude"
#   claude_code {
#     command              = "claude"             # a path, or a name in PATH
#     model                = "claude-sonnet-4-5"  # default: Claude Code's
#     permission_mode      = "default"            # Claude Code's --permission-mode
#     allowed_tools        = ["Read", "Bash(go test:*)"]
#     disallowed_tools     = []
#     max_turns            = 40                   # per task
#     append_system_prompt = ""
#     settings             = {}                   # more Claude Code settings (not hooks)
#     base_url             = ""                   # ANTHROPIC_BASE_URL: a proxy or a local server
#     api_key_env          = "ANTHROPIC_API_KEY"  # the variable holding the key
#   }
# }

# An external agent is a program hearth does not start, whose sessions
# report through hooks: Claude Code's, through `hearth hook` or the
# daemon's /hooks/claude-code (see examples/claude-code). Its sessions get
# fingerprints and pre_tool_use guards; `hearth place` points at one to
# resume. Only pool and fingerprint settings apply to it.
agent "claude-code" {
  external = "claude-code"
  # workspace = "/src/app"  # tool-use paths are made relative to it (default: kept absolute)
}

# How `hearth serve` listens. The API's unix socket is owner-only: that is
# its access control. TCP is off unless listen is set, and then needs
# token_file or a tls block with client_ca_file (mutual TLS), or both.
server {
  # socket     = "./.hearth/hearth.sock"  # default: hearth.sock in the data directory
  # listen     = "0.0.0.0:7410"          # the API over TCP (default: off)
  http = "127.0.0.1:7411" # the dashboard, /metrics, POST /hooks/claude-code; "" for none
  # token_file = "/etc/hearth/token"     # the bearer token TCP (and non-loopback HTTP) clients present
  # tls {
  #   cert_file      = "server.pem"
  #   key_file       = "server.key"
  #   client_ca_file = "clients-ca.pem"  # clients must present a certificate it signed
  # }
}

# How `hearth hook` reports Claude Code's hooks.
hooks {
  # agent = "claude-code"     # default: the first external claude-code agent
  when_unreachable = "allow" # no daemon: tool uses go ahead ("deny": fail closed)
}

# How the store meets a full or stuck disk (docs/recovery.md).
store {
  min_free_space = "256MiB" # below it writes are refused: runs pause with the reason
                            # and resume once there is room; "0" turns this off
  stall_timeout  = "30s"    # a commit hanging longer fails its writes
  close_timeout  = "5s"     # the longest wait for the final flush on exit
}

# Traces over OTLP, to Jaeger, Tempo, Honeycomb, Langfuse, Phoenix or any
# OpenTelemetry collector (docs/telemetry.md): a span per task,
# placement, plugin start, tool use and model call. Off unless
# this block is here or the standard OTEL_* variables ask for OTLP
# (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER=otlp);
# OTEL_SDK_DISABLED=true turns it off. Each setting left out takes its
# OTEL_* variable, then the default shown.
# telemetry {
#   enabled     = true
#   endpoint    = "http://localhost:4318"  # OTEL_EXPORTER_OTLP_ENDPOINT (4317 for grpc)
#   protocol    = "http/protobuf"          # or "grpc", "http/json"
#   headers     = { "x-api-key" = env("TRACES_KEY") }
#   sampler     = "parentbased_always_on"  # OTEL_TRACES_SAMPLER's names
#   sampler_arg = 1                        # the ratio of a *traceidratio sampler
#   service_name        = "hearth"
#   resource_attributes = { "deployment.environment" = "dev" }
#   trace_url   = "http://localhost:16686/trace/{trace_id}"  # the dashboard's link
# }

# How tasks are placed: a session scoring strictly above the threshold is
# reused. The weights sum to 1; see the matcher package for each factor.
matcher {
  threshold = 0.6
  top_k     = 5 # candidates each decision reports
  weights {
    directory = 0.30
    file      = 0.25
    tech      = 0.20
    freshness = 0.15
    load      = 0.10
  }
}

# Guards are rules, written as expr expressions (https://expr-lang.org), that
# act when their condition is true. Each watches one hook:
#
#   hook            the condition sees                          action
#   pre_tool_use    tool, kind, input, paths, targets, cwd,     deny
#                   unread, session, task, run
#   task_admission  task, run                                   deny
#   transition      from, to, state, run                        block
#   task_result     result, task, run                           retry, send_back
#   session_reuse   session, score, task                        veto
#
# and now. Helpers: glob(path, "**/pattern"), under(path, dir), ext, base,
# dir, dates(from, to), days_between(a, b), and expr's builtins (any, all,
# filter, map, len, ...). Filters narrow a guard: agents, tasks (pipeline
# task names), and, for transitions, from and to (stage names).
#
# A pre_tool_use guard sees every path of the call canonical: absolute,
# clean, and followed through symbolic links; shell commands are parsed,
# and Grep's and Glob's patterns read. Its path helpers cannot be fooled
# by how a path is spelled: touches, reads, writes and names take a
# pattern ("**/.env", "~/.ssh/id_*"; a relative one matches at any
# depth), touches_under, reads_under and writes_under a directory
# ("~/.ssh"). docs/guards.md says what a guard can and cannot stop.

# How guards read paths (every setting, with its default):
# guards {
#   case_sensitive = false  # ".ENV" is ".env"; true where every file system tells case apart
#   searches_skip_hidden = false  # true: agents' own search tools skip dot files (never Claude Code's Grep: it passes --hidden)
#   shell          = "bash" # the shell agents' commands run in: "bash" (also sh, dash) or "zsh"
#   path_fields    = {}     # input fields holding paths, by tool: { "mcp__fs__*" = ["path", "dest"] }
# }

guard "no-secrets" {
  hook      = "pre_tool_use"
  condition = "touches('**/.env*') || touches('**/*.pem') || touches_under('~/.ssh')"
  message   = "secrets are off limits: read configuration through the app, not its files"
}

guard "no-force-push" {
  hook      = "pre_tool_use"
  condition = <<-EXPR
    tool == "Bash" && input.command matches "git push .*(--force|-f)\\b"
  EXPR
  message   = "force-pushing is not allowed; open a pull request"
}

guard "budget" {
  hook      = "task_admission"
  condition = "run.budget > 0 && run.cost >= run.budget"
  message   = "the run has spent its budget"
}

guard "no-stale-reuse" {
  hook      = "session_reuse"
  condition = "session.age > duration('4h')"
  message   = "sessions older than four hours start fresh"
}

# A quality gate: a task_result guard that sends a task's work back to a
# task it depends on, with the message as feedback in that task's prompt;
# it and everything after it run again. Metrics an agent did not report
# read as 0, hence the `in` test. max_loops (default 3) bounds the
# send-backs in one run; then the run stops for a person.
guard "summary-quality" {
  hook      = "task_result"
  tasks     = ["server"]        # the gated task
  action    = "send_back"       # or "retry": run the gated task again
  back_to   = "http"            # a task the gated one depends on
  max_loops = 3
  condition = "'quality' in result.metrics && result.metrics.quality < 0.8"
  message   = "the summary missed what the Server lookup needed; cover its fields"
}

# A pipeline is a graph of tasks; `hearth run FILE PIPELINE` runs it. Each
# run keeps its state, checkpoints, events and costs: `hearth runs`.
pipeline "overview" {
  agent    = "gotour"  # default agent of its tasks
  parallel = 2         # tasks at once (default 1)
  # description = "a walk through net/http"
  # budget      = 5.00     # total cost; a task that would start at or over it does not (default: none)
  # on_failure  = "fail"   # a task failed for good fails the run; "pause" pauses it for a person
  # files       = ["brief.md"]  # attached to every run, relative to this file
  # require_checks = true      # as the agent block's, for the tasks of this pipeline

  # A failed task is tried again after backoff, doubled each time up to
  # max_backoff; attempts counts tries in all.
  retry {
    attempts    = 3
    backoff     = "1s"
    max_backoff = "30s"
  }

  # What finished tasks learned is put in the prompts of the tasks that
  # depend on them, up to budget bytes (-1: no cap).
  context {
    budget = 4096
    # template = <<-TMPL
    #   {{range .Steps}}## {{.Name}}
    #   {{range .KeyDecisions}}- {{.}}
    #   {{end}}{{end}}
    # TMPL
  }

  # The run's shared state document. With owner blocks, each agent writes
  # only its sections (a section has one owner) and reads its reads (all
  # when it lists none); an agent without one reads all and writes nothing.
  # state {
  #   initial = { inputs = { package = "net/http" } }
  #   owner "gotour" {
  #     reads  = ["inputs"]
  #     writes = ["notes"]
  #   }
  # }

  # Idle runs: paused, then flagged abandoned, then deleted with their
  # files; "0" turns a step off.
  retention {
    pause_after   = "24h"
    abandon_after = "168h"
    delete_after  = "0"
  }

  # A stage's rules: the run enters stage "lookup" (a task's stage, below)
  # not before this time; its task waits till then.
  # stage "lookup" {
  #   not_before = "2026-12-01T09:00:00Z"
  # }

  task "http" {
    prompt       = "summary net/http"
    directories  = ["net/http"]  # hints for the matcher: files, directories, technologies
    technologies = ["go"]
  }
  task "server" {
    prompt     = "symbol net/http Server"
    depends_on = ["http"]
    # agent      = "gotour"    # default: the pipeline's
    # stage      = "lookup"    # entering a stage is a transition guards may block
    # metadata   = { depth = "1" }  # strings passed to the agent
    # attempts   = 3           # default: retry.attempts
    # on_failure = "pause"     # default: the pipeline's
  }
}
