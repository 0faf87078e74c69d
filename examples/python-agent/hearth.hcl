# finder, a hearth agent written in Python (finder.py), searching the
# sample tree. README.md walks through it from nothing.
#
#   ./hearth run .

agent "finder" {
  # A path with a slash is read against this file's directory: the
  # virtual environment the README makes, with hearth-agent installed.
  command = [".venv/bin/python", "finder.py"]
  pool {
    # One session: every task after the first goes to the warm one.
    max_sessions = 1
  }
}

# The finder may search anything but the secrets. cwd is the session's
# workspace (this directory); touches_under also stops a search of a
# directory above the secrets, which would read them too.
guard "no-secrets" {
  hook      = "pre_tool_use"
  agents    = ["finder"]
  condition = "touches_under(cwd + '/sample/secrets')"
  message   = "sample/secrets holds credentials: search the code instead"
}

pipeline "markers" {
  description = "find the TODO and FIXME markers of the sample tree, one part at a time"
  agent       = "finder"

  task "app" {
    prompt      = "TODO|FIXME"
    directories = ["sample/app"]
  }
  task "todos" {
    prompt      = "TODO"
    directories = ["sample/app"]
    depends_on  = ["app"]
  }
  task "secrets" {
    prompt      = "TODO|FIXME"
    directories = ["sample/secrets"]
    depends_on  = ["todos"]
  }
}
