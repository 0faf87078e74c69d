// Package hearth holds hearth's vocabulary: the words orchestrators, the CLI,
// the daemon and its client speak, and nothing that does the work. A task
// and what it came to (Task, Outcome), where it was placed and why
// (Decision, Candidate), what happened (Event), sessions and runs as they
// are described (SessionInfo, RunInfo, RunDetail, ...), pipelines
// (Pipeline), a cluster's members and runs (Member, ClusterRuns), every
// sentinel and structured error, and the services as small interfaces
// (Placer, SessionReader, RunReader, RunController, Service,
// ClusterReader). It imports only package sdk and the standard library, so a
// program that only talks to a daemon links none of the engine.
//
// It is the module's root package, so the words read as what they are:
// hearth.Task, hearth.Service. The directory host/ holds the parts of one
// host, a hearth process with its data directory and a member of a
// cluster; the engine (engine.Engine) is its composition root; an agent
// reaches the host during a task through sdk.Callbacks.
// docs/architecture.md ("Names") says why each word means one thing.
//
// # Where the work is done
//
// Each part below lives in host/ and is one host's:
//
//   - host/engine is the in-process engine: the composition root that
//     wires the parts below, owns the event bus and implements the
//     services. engine.New starts one on a config.
//   - host/process runs one plugin process: launch, mutual TLS, health
//     checks, stop, and the classification of its failures.
//   - host/pool keeps one agent's sessions, live and dormant, their
//     fingerprints and external sessions, places tasks on them (one
//     policy: a pure decision, then the act) and serves a task's calls
//     back to the host.
//   - host/runs executes pipelines as runs: scheduling, attempts and
//     gates, checkpoints, resume, fork, revisit and retention.
//   - host/store keeps everything in Badger, and reads a data directory
//     no host serves (it implements Reader).
//   - host/config decodes the HCL config file into these types;
//     host/guard compiles and evaluates guard rules; host/claudecode
//     reads Claude Code's hook payloads; host/api serves the engine as a
//     daemon, and host/api/client is its Go client (a Service).
//   - host/cluster makes several hosts one cluster on etcd: the rules
//     (no I/O) in the package, a host's membership in host/cluster/member,
//     which the engine takes as an option and `hearth serve` joins.
//
// Where a change belongs: a new word or error, here; a new hook point, in
// host/guard (its environment) and where the engine reaches it; a new
// placement factor, in package matcher; a new CLI read command, in
// cmd/hearth against RunReader or SessionReader.
package hearth
