# Claude Code sessions, followed by hearth through Claude Code's hooks.
#
#   hearth serve --data-dir ~/.hearth --config examples/claude-code/hearth.hcl
#
# and put settings.json's hooks in ~/.claude/settings.json (or a
# project's .claude/settings.json). Every Claude Code session becomes an
# external hearth session: its reads, searches, listings and edits build
# its fingerprint, guards can deny its tool uses, and `hearth place
# claude-code --dir ...` says which session to resume for new work.

agent "claude-code" {
  external = "claude-code"
  pool {
    idle_timeout = "2h" # a session with no hook report for this long is dormant
  }
}

# Guards see every path of a tool call canonical (absolute, clean, through
# symbolic links), a Bash command's words and Grep's glob included.
# Claude Code's Grep is ripgrep, which skips dot files unless its glob
# names them: a Grep of the project without a glob cannot read .env.
guards {
  searches_skip_hidden = true
}

guard "no-env-files" {
  hook      = "pre_tool_use"
  agents    = ["claude-code"]
  condition = "touches('**/.env*')"
  message   = ".env files hold secrets: read settings through config/settings.go instead"
}

guard "no-force-push" {
  hook      = "pre_tool_use"
  agents    = ["claude-code"]
  condition = "tool == 'Bash' && input.command matches 'git push.*(--force|-f)'"
  message   = "force-pushing rewrites shared history; push a new commit instead"
}

hooks {
  # What `hearth hook` answers a PreToolUse when the daemon is down:
  # "allow" (fail open) or "deny" (fail closed).
  when_unreachable = "allow"
}
