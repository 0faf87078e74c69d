// Package mcp serves hearth to agents that orchestrate agents, over the
// Model Context Protocol: a Claude Code session, an IDE assistant or a
// chat client hands a part of its job ("look at package X") to the warm
// hearth session that already read X, by calling a tool.
//
// New returns an MCP server (the official Go SDK's) over a
// hearth.Service: the in-process engine, or the daemon's client, chosen
// by the caller (hearth mcp chooses as every other command does; the
// daemon mounts the streamable-HTTP handler, Handler, behind its token).
// The package never sees the engine: it takes the Service, and two more
// of the vocabulary's services found by type assertion, which the engine
// and the client both are: hearth.EventSource (progress notifications
// while a submitted task runs) and hearth.StatusReader (the version, and
// the configured agents, named in the tool descriptions so that a model
// picks a real one).
//
// Tools:
//
//	submit_task    run a task on the warm session that fits it; waits,
//	               with progress notifications as the task runs
//	place_task     say where a task would run and why, running nothing
//	list_sessions  the sessions, most recently active first
//	show_session   one session: what it knows, its events and decisions
//	start_run      start a pipeline from a config file and follow it
//	list_runs      the runs, most recently active first
//	show_run       one run: its tasks, state and history
//
// Resources: hearth://sessions and hearth://runs (the lists), and the
// templates hearth://sessions/{id} and hearth://runs/{id}.
//
// Errors a model can act on come back as tool errors (isError, the text
// says what to change): an unknown agent lists the configured ones; a
// task an admission guard refused names the guard and its message; a
// task that failed says so with the agent's error. Only a malformed call
// is a protocol error.
package mcp
