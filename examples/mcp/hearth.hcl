# hearth as an MCP server for an orchestrating agent (Claude Code, a
# desktop MCP client): the bundled gotour agent answers questions about
# the Go standard library's packages, and keeps each package it has read
# in memory. Hand it "look at package X" twice, and the second question
# lands on the session that read X.
#
#   claude mcp add hearth -- hearth --config "$PWD/examples/mcp/hearth.hcl" mcp

agent "gotour" {
  bundled = "gotour"
  pool {
    max_sessions = 4
  }
}
