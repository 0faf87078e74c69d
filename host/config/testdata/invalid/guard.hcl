# A guard with a misspelled field in its condition: the error points into
# the heredoc, at the field.
guard "no-stale-reuse" {
  hook      = "session_reuse"
  condition = <<-EXPR
    session.agent == "coder" &&
      session.ages > duration("4h")
  EXPR
  message   = "sessions older than four hours start fresh"
}
