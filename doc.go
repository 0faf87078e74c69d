// Package hearth holds hearth's vocabulary: the words orchestrators, the CLI,
// the daemon and its client speak, and nothing that does the work. A task
// and what it came to (Task, Outcome), where it was placed and why
// (Decision, Candidate), what happened (Event), sessions and runs as they
// are described (SessionInfo, RunInfo, RunDetail, ...), pipelines
// (Pipeline), what a host says of itself (HostStatus), a cluster's
// members and runs (Member, ClusterRuns), every sentinel and structured
// error, and the services as small interfaces (Placer, SessionReader,
// RunReader, RunController, Service; EventSource, StatusReader, Admin,
// ClusterReader). The engine in process and the daemon's client both
// implement the first eight; a cluster's member and the client,
// ClusterReader. It imports only package sdk and the standard library,
// so a program that only talks to a daemon links none of the engine.
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
// The parts of one host live under host/ (host/engine is the composition
// root that implements the services; host/api serves them as a daemon,
// and host/api/client is its client); docs/architecture.md is the map of
// every package, the import rules a test holds them to, and where a
// change belongs.
package hearth
