// Package cluster is what hosts share to place tasks across machines: who
// is a member, what each host's sessions know, and the rules for sending a
// task to another host and for running one sent here. It stands on etcd
// (membership by lease, watched prefixes, transactions).
//
// Cluster mode is one feature in this folder: the rules here, each a type
// or function that does no I/O and takes no lock of its caller's, tested
// as tables; their shells in the packages beside it:
//
//   - cluster/member is a host's membership, the one shell the host
//     sees: made from the config's cluster block, handed to the engine as
//     an option (which attaches its pools and the means to run a task
//     here), joined with one call, left on shutdown. It runs [Forward]'s
//     steps, answers forwarded tasks from [Accepted], publishes the host
//     ([Summary], [HostRecord]) and lists members and runs.
//   - cluster/etcd talks to etcd: registration under a lease, batched
//     publishing, the watch that feeds the [View].
//   - cluster/peer is the hosts' API to one another, server and client,
//     over mutual TLS.
//
// This package imports only the vocabulary, the matcher, HCL (for the
// cluster block, [Block], which it decodes itself as the matcher does its
// own) and the standard library, so that the config, the pools, the store
// and the daemon's client can use its types without linking etcd's client
// or gRPC. The contract between a host's engine and its member is here
// too (Deps, Pool, KeyStore, and ForwardRecord, which the store keeps):
// the engine names its member through it and stands on no cluster
// implementation. A host's settings and its record are here as well: a
// field the cluster block sets and the host publishes lands in [Block],
// [Config] and [Config.Member], and etcd's record carries every field of
// hearth.Member without naming them ([HostRecord]). Each host keeps its
// own store, runs, guards and config. What is shared is small and
// rate-limited: a record per host and a summary per session.
//
// # Key layout
//
// Everything lives under [Prefix], /hearth/v1/:
//
//	/hearth/v1/hosts/<host>               HostRecord, JSON, bound to the host's lease
//	/hearth/v1/sessions/<host>/<session>  Summary, JSON, bound to the host's lease
//
// Host IDs are 1 to 63 letters, digits, '.', '_' or '-' ([CheckHostID]);
// by default the host name and a hash of the data directory
// ([DefaultHostID]). Session IDs are what the host calls them (at most 256
// bytes). Values carry a version ("v": 1); a value of another version, or
// out of bounds, is logged and left out ([ErrBadRecord]), never guessed
// at. The values are JSON so that `etcdctl get --prefix /hearth/v1/`
// reads them.
//
// # Lease and TTL
//
// A host grants a lease of lease_ttl (default 10 s, 2 s to 5 min, whole
// seconds), puts its record and every session summary under it, and keeps
// it alive (etcd's client renews it every TTL/3). Closing a host revokes
// the lease: the others drop it and its sessions at once. A host that dies
// (kill -9, power loss) stops renewing; etcd deletes its keys when the
// lease expires, at most lease_ttl after its last renewal, and every
// other host's watch removes it from placement then.
//
// A host ID is registered by one host at a time. A host finding its ID
// taken compares identities ([Identity]: a digest of the machine's name
// and the data directory): the same identity is an earlier start of the
// same host, whose place it takes at once, deleting what that start
// published and no longer exists; another identity is another host, and
// the start fails with [ErrHostIDInUse].
//
// # Summaries and the write-rate bound
//
// A summary holds what the matcher needs: the agent, the session's most
// recent directories and files (at most [MaxSummaryDirs] and
// [MaxSummaryFiles], 32 each, paths up to [MaxPathBytes]), its
// technologies (at most [MaxSummaryTechs]), last activity, load, capacity
// and whether it is dormant. An encoded summary is at most
// [MaxSummaryBytes] (16 KiB; typically 1 to 3 KiB): the oldest entries go
// first when it would be larger. Hosts score remote sessions with their
// own matcher configuration.
//
// A tool use only marks its session changed. Once per publish_interval
// (default 1 s, 100 ms to 1 min) the host reads the changed sessions'
// summaries and writes those that differ from what etcd holds in one
// transaction; a summary whose only change is a last activity moved by
// less than 10 s is not written (freshness moves by 1/1800 a second). The
// bound, whatever the rate of tool uses:
//
//	write transactions per host per second <= ceil(changed / 128) / publish_interval
//
// where changed counts the host's sessions whose summary changed in the
// interval, plus its record (a placement that taught a session
// something is published at once, rate-limited to one more transaction
// per interval after a burst: etcd.Node.PublishNow and docs/cluster.md):
// one transaction per interval (1 a second by
// default, 10 at the 100 ms minimum) whenever fewer than 128 sessions
// changed in it. Only sessions that work change, and a pool runs at most
// max_sessions of them (4 by default); dormant sessions do not change. A
// batch is also split at 1 MiB (etcd takes 1.5 MiB per request), so with
// every summary at its 16 KiB maximum the divisor drops to 63. Bytes
// written per interval are at most changed x 16 KiB. Each transaction is
// one etcd revision. Registering writes at most two transactions plus the
// session batches, at start and after a lost lease; lease renewals write
// no key.
//
// # The view and placement
//
// Every host lists the prefix at one revision, then watches it from the
// next revision, applying each response to a [View]: the members, and one
// matcher index per agent of the other hosts' sessions, named
// [RemoteID] ("host/session"; local session IDs never hold a '/'). When
// the watch fails (etcd compacted the revision it would resume from, a
// lost leader, a closed stream) or the host registers again, it lists
// again. The member keeps the remote sessions in the host's pools'
// matcher indexes too ([View.SetSink]), so that one index of every host's
// sessions decides with the pools' one placement policy (a score depends
// on every session in the index: two decisions over disjoint sets do not
// merge into the union's). The policy's answer ([Placement]) becomes a
// target with [View.Target]: a remote session's host, or, for a spawn,
// the member [View.SpawnHost] names (the least loaded that runs the
// agent), or this host.
//
// # Forwarding and idempotency
//
// A task placed on another host is forwarded to that host's API under an
// idempotency key; [Forward] is the retry state machine the member runs,
// sending through cluster/peer. A target that refused or was never
// reached is left out and the task placed again; a forward whose outcome
// is unknown (a timeout, a connection lost after sending) asks the host
// about the key and waits while it is running there or while the host,
// unanswering, is still a member. The receiving host keeps each accepted
// key and its result, in memory and in its store (the key durable before
// the task starts, the result just after the answer, its completion in
// etcd before it), so a repeated forward never starts the task twice, across a
// restart of that host too, within its idempotency window (an hour, at
// most 10,000 keys: docs/cluster.md); [Accepted] is that rule. A key whose task it stopped
// before it finished (a restart, its lease lost) is answered with
// ErrInterrupted (TaskInterrupted): the task is placed elsewhere, as when
// a host leaves the cluster mid-task.
//
// Fencing: a host runs the tasks forwarded to it under the context of its
// lease (Node.Fence in cluster/etcd), which ends when its lease is lost,
// and [Held] says whether the lease is held for certain at a given
// instant, even before that context ends (a host that wakes from a pause
// longer than its lease). A forwarded task completes only by writing its
// [Completion] to etcd in a transaction that etcd refuses once the host's
// record is no longer bound to the lease the task ran under: the lease is
// the fencing token, checked by the store that takes the write. The
// forwarding host reads the completion before it places a task again
// ([StepCheck]): one found is the result, delivered whether or not the
// host that wrote it ever answers; one not found by the time the lease
// expired never will be. A task's result is therefore accepted once,
// whatever was paused; what an attempt whose result was refused had
// already done to the world outside (a file it wrote) is not undone, and
// its plugin, whose host stopped answering, stopped itself within a
// third of the lease TTL (docs/cluster.md, "Fencing").
//
// # Partitions
//
// A host cut off from etcd keeps serving: its own sessions, runs and
// store need nothing of the cluster. Publishing pauses. When its lease
// runs out (lease_ttl without an answer), it notices, cancels forwarded
// tasks (fencing), and empties its view, so that it places only on its
// own sessions, since it no longer knows who is alive; the other hosts
// see it leave at the same time. When etcd answers again it registers
// under a new lease, republishes every session, revokes the old lease
// (dropping whatever it still held), lists the cluster again and places
// across hosts as before. A shorter cut loses nothing: changes wait and
// go out with the next batch, and the watch resumes where it stopped, or
// lists again if etcd compacted meanwhile.
//
// # Runs
//
// A run stays with the host that started it: its state, checkpoints and
// files are in that host's store. [RunDirectory] lists runs across the
// cluster by asking every member at once (each within a timeout) and
// marks a host that did not answer as unreachable, or gone once it left,
// with the runs it listed last. Those runs resume when their host comes
// back.
//
// Moving runs between hosts is a later step. It would take: a run
// directory in etcd (/hearth/v1/runs/<run> -> owner, status, updated;
// not bound to a lease, so that it outlives its owner, and written on
// status changes only, a few times a run); handing a run over as a
// transaction that moves the owner key only if it still names the old
// owner and its lease (so that at most one host owns a run); carrying the
// run's state document, its newest checkpoint and its files to the new
// owner (the store's backup format, or a shared object store for files);
// and the old owner, when it comes back, finding it no longer owns the run
// and dropping its copy rather than resuming it.
package cluster
