// Package sdk is what hearth agent authors import: the agent contract in
// plain Go, Serve to run an agent as a plugin, and the go-plugin glue that
// carries the contract between a hearth host and a plugin process.
//
// An agent implements Agent (and, to be rehydratable, StateExporter). Its
// whole main is one call:
//
//	func main() {
//		sdk.Serve(&myAgent{})
//	}
//
// While a task runs the agent talks back through the Host it is given:
// ReportToolUse for every tool use it made (the on-tool-use hook that keeps
// its session's context current; reads and searches count as much as
// writes), CheckToolUse before a tool use (the pre-tool-use hook, where the
// host's guards may deny it), and ReportProgress.
//
// # The wire
//
// Calls travel as protobuf over gRPC through hashicorp/go-plugin, with
// automatic mutual TLS. The host dispenses the Agent service; the plugin
// reaches the host's callbacks over a GRPCBroker connection opened once per
// session, and all callbacks name their task, so concurrent tasks share it.
// Tool-use reports of a task go over one client stream, which the host
// acknowledges only once every report on it is durable; Run returns its
// result after that acknowledgement. Protocol versions are negotiated at
// the handshake (VersionedPlugins): a host and a plugin with no version in
// common refuse each other with an error naming both.
//
// Errors keep their kind across the boundary: context cancellation and
// deadlines, Permanent failures (not worth retrying), ErrStateNotSupported,
// ErrAgentPanicked (a panic in an agent method is recovered in the plugin
// and returned) and ErrConnectionLost (the plugin went away mid-call).
//
// # Lifetime
//
// A plugin never outlives its host: hearth hosts start plugins with a
// parent-death signal on Linux and in their own process group, and Serve
// also watches its parent process and exits, taking its process group
// with it, once the host is gone. Processes an agent starts should be
// created with Command, so they die with the plugin too.
//
// Test agents without building a binary with package sdktest.
package sdk
