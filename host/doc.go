// Package host is hearth's host: it runs agents as plugin processes, keeps
// their sessions warm, places each task on the session that already knows
// what it needs, and keeps everything in a store (package host/store). It
// is the Go API orchestrators call: New, Submit, Place, StartRun (and
// the other run methods: see docs/runs.md), Sessions, Subscribe, Close.
//
// # Sessions
//
// A session is one instance of an agent. Live, it is a plugin process
// (see process.go: its own process group, a parent-death signal, health
// checks, and errors that name the agent and session) running up to its
// capacity of tasks at once. Every tool use the agent reports updates the
// session's fingerprint at once: the files, directories (where it read,
// wrote or listed, the workspace root "." included; the matcher derives
// their ancestors) and technologies it touched, each a bounded set that
// evicts its least recently used entries. Reads, searches and listings count as
// much as writes; denied or failed tool uses do not count.
//
// A session idle past its pool's idle_timeout is retired: the agent's state
// is exported (sdk.StateExporter) and stored with the session's record,
// and its process stopped. It is then dormant: no process, its fingerprint
// kept in the store and in the matcher's index. Sessions also save their
// state in the background after each task, so that a host killed with
// kill -9 finds them again. On New, every session of the configured
// agents comes back dormant; tool uses logged after a session's last
// snapshot are replayed into its fingerprint.
//
// # External sessions
//
// An agent declared external (config.Agent.External) has sessions the
// host did not start, reported through hooks: external.go. The first
// report with a new ID makes a live session with a fingerprint; tool uses
// reported update it as a plugin's do, pre_tool_use guards answer its
// tool calls, and it becomes dormant when it ends, goes idle or the host
// stops. It has no process: Submit refuses it, and Place, which may point
// at it, answers ActionResume with the command that resumes it.
//
// # Placement
//
// Submit asks the matcher (package matcher) to score the agent's live and
// dormant sessions against the task's hints, and acts on the decision:
// reuse a live session, rehydrate a dormant one (a new process, handed the
// state the session exported), or spawn a new session. A pool never runs
// more than max_sessions processes; what happens when it is full is
// written in pool.go. Every decision, with each candidate's factor
// scores, is recorded as an event and returned with the task's outcome.
// Place returns the decision without acting on it.
//
// # Runs
//
// StartRun executes a pipeline (a graph of tasks) as a run: runexec.go
// schedules its tasks, places each like a submitted task, chains context
// between them, retries and escalates failures, applies quality gates
// and budgets, and writes each task's outcome, the run's head and a
// checkpoint in one store transaction. runapi.go holds the operations on
// runs (resume, fork, revisit, pause, cancel), runlife.go the statuses and
// their allowed transitions, runstate.go what agents may do to a run
// during a task (state sections, checkpoints, files, chunk marks), and
// retention.go the recovery of interrupted runs and their retention. The
// design is in docs/runs.md.
//
// # Durability
//
// A task's tool uses reach the store in batches, and the SDK's
// acknowledgement of the task's tool-use stream waits until every one is
// durable (taskHost.Sync). Placement decisions are durable before their
// task runs. Session snapshots and lifecycle events are written in the
// background.
//
// # Shutdown
//
// Close refuses new work, lets tasks in flight finish until its context is
// done, cancels the rest, retires every live session and closes the
// store. No plugin process outlives Close.
package host
