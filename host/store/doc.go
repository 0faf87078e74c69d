// Package store keeps hearth's state in Badger: sessions and their
// fingerprints, exported agent state, the append-only event log,
// placement decisions, and runs with their checkpoints, outputs and
// files. It is the only package that imports Badger.
//
// Its records are protobuf messages (internal/storepb), and they stay
// inside: every conversion between a record and the vocabulary's types
// (package hearth) or the plain Go records the engine works on
// (record.Session, record.Run, record.Task, record.Output, record.Checkpoint)
// is in convert.go. Offline reads, for commands run without a daemon, are
// methods of Store that return the vocabulary's types (views.go: the same
// hearth.Reader the engine and the daemon's client implement).
//
// # Key layout
//
// Keys are ASCII prefixes and IDs, with sequence numbers as 8 big-endian
// bytes so that they sort in order:
//
//	m/schema                    the layout version (4 bytes, big-endian)
//	q/events                    Badger sequence that numbers events
//	s/<session>                 Session: status, counters, fingerprint
//	t/<session>                 the agent's exported state for a session
//	e/<stream>/<seq>            EventChunk: events of one stream (a session
//	                            ID such as "gotour-1a2b3c4d", a run ID, or
//	                            "host") numbered seq, seq+1, ...
//	d/<seq>                     Event of kind "decision": every placement
//	x/<session>/<seq>           (empty) decision <seq> involved <session>
//	r/<run>                     Run: the run's head (status, stage, cost,
//	                            state document, chunk progress, files)
//	g/<run>                     RunGraph: its pipeline, as at creation
//	rt/<run>/<task>             RunTask: where one task stands
//	c/<run>/<seq>               Checkpoint: immutable, numbered from 1
//	o/<run>/<task>/<version>    TaskOutput: result and context artifact,
//	                            version as 4 big-endian bytes, immutable
//	fr/<sha256>/<run>           (empty) run <run> uses file <sha256>
//	fw/<key>                    Forward: a task another host of a cluster
//	                            forwarded here under idempotency key <key>:
//	                            running, or done with its result; pruned
//	                            by the engine's idempotency window
//
// File contents live beside Badger, in files/<sha256[:2]>/<sha256> under
// the data directory: stored once by content, read-only, removed when no
// run refers to them (fr/).
//
// Event sequence numbers are global and increase with time, so merging the
// streams by sequence gives the host's history in order. A crash may leave
// gaps (Badger leases sequence ranges), never repeats. Events are stored in
// chunks, one value per batch the host wrote (a task's tool uses come in
// batches of up to 256): a value per event made Badger's per-entry work
// the host's bottleneck. A chunk's numbers increase and come from one
// range reserved together (consecutive, but for the events a run's write
// carries, which share one range across their streams: record.RunWrite.Events),
// so the chunks of a stream never overlap and sort in order.
//
// # Encoding
//
// Every value is one schema version byte followed by a protobuf message
// from package internal/storepb. Fields are only added; a change that older code
// cannot ignore gets a new version byte and a migration. m/schema records
// the layout version: Open migrates an older layout forward and refuses a
// newer one, naming both versions.
//
// # Durability
//
// Badger runs with SyncWrites: a write this package acknowledges is on
// disk. Writes go through one committer goroutine that gathers whatever
// is waiting into one transaction, so many writers (a flood of tool-use
// events, several runs' checkpoints) share each fsync: group commit. A
// single write is never split across transactions, so it is atomic.
// Append returns a Pending at once; the event is durable when its Wait
// returns nil.
//
// # Housekeeping
//
// Value-log GC runs in the background (Options.GCInterval). A process
// opening a directory another holds to write, or opening to write one
// others read, is refused with ErrLocked, naming the directory and the
// writer that holds it (the LOCK file has its PID; an OWNER file beside
// it, removed on Close, has its command and start).
// Memory settings are sized for a small machine (Options documents them;
// BENCHMARKS.md has the RSS).
//
// # Faults
//
// The store never returns different data for damaged data, and never lets
// a fault kill or hang the host (docs/recovery.md is the user's side):
//
//   - Reads never write: Open takes a Mode, which every caller names.
//     Read opens a directory with Badger read-only and starts nothing
//     that writes; it deletes, cuts and replays nothing. A directory a
//     crash left with an unreplayed memtable log cannot be read that way
//     (ErrNeedsRecovery): Recover, or a Write open, replays it.
//   - Before Badger sees a directory, Open takes its lock (shared for
//     Read, exclusive for Write; Badger's own is off) and open.go
//     accounts for every file Badger would act on: the MANIFEST parses
//     to its last byte; a table it lists is there and every block of it
//     passes its checksum; a table it does not list is a crash's
//     leftover (its records are elsewhere) or damage; a value log a
//     table points into is there and long enough. (Badger deletes tables
//     the MANIFEST does not list, even read-only: a MANIFEST cut short
//     wiped a store; it panics in its own goroutines on a truncated
//     table, and reads a failing block as a missing key.) A directory
//     that does not add up is a *DirError naming the file; nothing in
//     it is changed.
//   - Values are read with their value-log CRC checked; Badger hands back
//     an empty value for one that fails, and every record has a version
//     byte, so an empty or undecodable record is a *DamageError naming it
//     (damage.go). Verify and VerifyDir check everything.
//   - Free space is checked before each commit (space.go): below
//     MinFreeSpace writes fail with hearth.ErrNoSpace before Badger, whose
//     mapped writes would SIGBUS on a full disk, is asked, and stay
//     refused until it is back above it by an eighth. Half of
//     MinFreeSpace is a reserve for status records (SaveRunStatus: one
//     run's head, nothing else), so that a run stopped by a full disk
//     records that it paused and why. A status record is the caller's
//     head as read from disk, changed in status and reason, so the
//     reserve never lets through work the refused writes held. Below
//     the reserve status records are refused too; the run's record then
//     says running, which readers report as interrupted.
//   - A commit stuck longer than StallTimeout (Badger retries a failed
//     flush forever) fails its writes and every write behind it with
//     ErrStalled until it ends; Close waits at most CloseTimeout.
//   - Backup is one read transaction's snapshot plus the immutable stored
//     files, in a tar with checksums; Restore checks them and refuses a
//     damaged backup, leaving nothing behind (backup.go).
//   - Every number a record reads back with is finite: a NaN or ±Inf
//     that a writer put there (an old, corrupt or hostile record) reads
//     as 0 (convert.go, finite), since JSON, which the daemon answers
//     in, has neither, and a sum with a NaN is NaN for good
//     (TestNonFiniteNumbersReadAsZero).
package store
