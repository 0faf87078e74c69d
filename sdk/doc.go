// Package sdk is what hearth agent authors import: the agent contract in
// plain Go, and the tool helpers that keep it. Package sdk/plugin runs an
// agent as a plugin: it is the go-plugin glue that carries the contract
// between a hearth host and a plugin process, kept apart so that code
// that only speaks the contract's types (hearth's vocabulary, the
// daemon's client) does not link go-plugin.
//
// An agent implements Agent (and, to be rehydratable, StateExporter). Its
// whole main is one call:
//
//	func main() {
//		plugin.Serve(&myAgent{}) // import "github.com/hearth-dev/hearth/sdk/plugin"
//	}
//
// # A task
//
// Run is given a Task and its Callbacks, the agent's way back to the host
// for the task. The task's Prompt is exactly as written in the pipeline or
// submitted: the host never rewrites it. What the tasks
// it depends on learned comes beside it, as data (Task.Upstream, nearest
// first) and as one rendered text block (Task.Context) for agents that
// want text; why the task was sent back or revisited is in Task.Feedback.
// Run returns a Result whose Artifact is what this task learned, for the
// tasks that depend on it.
//
// While a task runs the agent talks back through its Callbacks: CheckToolUse
// before each tool use (the pre-tool-use hook, where the host's guards may
// deny it), ReportToolUse after it (the on-tool-use hook that keeps the
// session's context current; reads and searches count as much as writes),
// and ReportProgress. Tools does the first two around the work for the
// common tools (read, write, edit, list, search, run a command): the honest
// path is the easy one. A report must say how the tool use ended
// (Outcome): one that does not is refused, and the task fails. The
// Callbacks of a task that belongs to a run are also RunCallbacks, which
// reach the run's state, checkpoints, files and chunks:
//
//	if rcb, ok := cb.(sdk.RunCallbacks); ok { ... }
//
// Guards stop what an agent asks about. They cannot stop an agent's own
// code from calling the operating system; a host may flag tool uses that
// were reported without being asked about.
//
// # What a tool use tells the host
//
// The host keeps each session's fingerprint (the files, directories and
// technologies it touched) from its tool uses, and places tasks by it. A
// ToolUse's Kind says what its Paths are:
//
//	read, write   files (read, written or edited)
//	list          directories (listed)
//	search        the directories searched; when a search also names files
//	              (those it matched), its directories end in "/" and the
//	              paths without one are files
//	exec          files the command named (not the program)
//	other         files
//	(empty)       unknown: inferred from the tool's name, as for external
//	              sessions and agents built before kinds: LS, List, Glob,
//	              CD and Tree name directories, every other tool files
//
// Whatever the kind, a path that ends in "/" is a directory. A file counts
// its directory, and that directory's ancestors, as directories touched.
// Technologies are inferred from file extensions by the table in
// TechnologyOf (.go is "go", .py "python", ...); ToolUse.Technologies adds
// to them. Only tool uses with OutcomeOK change the fingerprint.
//
// # The wire
//
// Calls travel as protobuf over gRPC through hashicorp/go-plugin, with
// automatic mutual TLS. The host dispenses the Agent service; the plugin
// reaches the host's callbacks over a GRPCBroker connection opened once per
// session, and all callbacks name their task, so concurrent tasks share it.
// Tool-use reports of a task go over one client stream, which the host
// acknowledges only once every report on it is durable; Run returns its
// result after that acknowledgement.
//
// Protocol versions are negotiated at the handshake (VersionedPlugins): a
// host and a plugin with no version in common refuse each other with an
// error naming both. This SDK's plugins serve version 2 (ProtocolVersion);
// its hosts speak 2 and 1. Version 2 added, beside the prompt, the upstream
// artifacts, the rendered context and the feedback; the artifact in Run's
// response (version 1 asked for it with a Summarize call after Run); tool
// kinds; and the rule that a tool use has an outcome (version 1 read a
// missing one as OK). To a version-1 plugin a host writes the context and
// feedback into the prompt, as version-1 hosts did, and calls Summarize.
// docs/protocol.md in the hearth repository describes the wire for SDKs in
// other languages.
//
// Errors keep their kind across the boundary: context cancellation and
// deadlines, Permanent failures (not worth retrying), ErrNotOwner,
// ErrStateNotSupported, ErrAgentPanicked (a panic in an agent method is
// recovered in the plugin and returned) and ErrConnectionLost (the plugin
// went away mid-call). Other errors, such as a DeniedError returned from
// Run, arrive as their message.
//
// # Lifetime
//
// A plugin never outlives its host: hearth hosts start plugins with a
// parent-death signal on Linux and in their own process group, and Serve
// also watches its parent process and exits, taking its process group
// with it, once the host is gone. Processes an agent starts should be
// created with Command, so they die with the plugin too.
//
// Test agents without building a binary with package sdktest (New serves
// one in the test's process) and package conformance, whose TestAgent
// checks an agent against the contract.
package sdk
