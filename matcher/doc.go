// Package matcher decides where a task runs: on a warm session of its agent
// that already holds the task's context, or on a new one.
//
// The host describes each session of one agent by a fingerprint, a
// [Candidate]: the files and directories it worked in, the technologies it
// is primed for, its last activity, its load and capacity, and whether it is
// dormant (persisted, to be rehydrated) or live. A task brings [Hints]:
// files, directories and technologies. The matcher scores every candidate on
// five factors, ranks them and returns a [Decision]: reuse the best session,
// or spawn. The package is pure scoring: it does no I/O, reads no clock (the
// caller passes now), has no mutable globals and imports only the standard
// library, so the same input always gives the same decision.
//
// [Scan] is the reference: it scores every candidate. An [Index] holds one
// agent's fingerprints, updated incrementally as hooks report tool uses, and
// returns exactly the decision Scan would return on [Index.Candidates],
// score for score, bit for bit, without scoring every session.
//
// # Paths and technologies
//
// Paths are slash-separated and relative to the workspace. [NormalizePath]
// cleans them with path.Clean, which also strips a leading "./" and a
// trailing "/"; "" and "/" become "." (the workspace root). An absolute path
// is kept as it is after cleaning: the host relativizes paths before it
// calls the matcher. Hints and fingerprints are both normalized on entry, so
// "./src/a.go", "src/a.go" and "src//a.go" are one file and "src/" and "src"
// one directory. A file name that is empty or normalizes to "." names no
// file and is ignored. Technologies are trimmed and lower-cased ("Go " is
// "go"); empty ones are ignored.
//
// The depth of a directory is its number of path components: "." has depth
// 0, "src" 1, "src/models" 2 (and "/abs/dir" 2).
//
// # Factors
//
// The task's directories T_d are its hint directories together with the
// directory of each hint file (path.Dir, normalized). A session's directories
// are the ones it was given; the host already includes the parents of every
// file it accessed. Each factor is a number in [0, 1]:
//
//   - Directory (weight 0.30), coverage of the task's directories. For each
//     task directory d, m(d) is the largest closeness(s, d) over the
//     session's directories s, where closeness is 1 if s == d;
//     depth(s)/depth(d) if s is a proper ancestor of d (a session that
//     worked in "src" scores 0.5 for a task in "src/models"); depth(d)/depth(s)
//     if s is a proper descendant of d (it knows a corner of d); and 0
//     otherwise: siblings, unrelated directories, and "." against anything
//     but "." (it has depth 0). The factor is the mean of m(d) over T_d,
//     summed in sorted order of T_d.
//   - File (0.25): |task files ∩ session files| / |task files|.
//   - Tech (0.20): |task techs ∩ session techs| / |task techs|.
//   - Freshness (0.15): max(0, 1 − idle/IdleTimeout), where idle is now minus
//     the last activity, taken as 0 if negative (clock skew). It decays
//     linearly from 1 to exactly 0 at the idle timeout (30 minutes by
//     default), the age at which the host reaps an idle session anyway.
//     Times are compared on the wall clock: monotonic readings are dropped,
//     as they are when a fingerprint is persisted and restored.
//   - Load (0.10): 1 − load/capacity, where a capacity below 1 counts as 1
//     and a negative load as 0; 0 for a full session.
//
// File, tech and directory are coverage of what the task needs, not Jaccard
// similarity: a session that knows more than the task needs is not
// penalized, since its warm cache is a superset.
//
// A factor the task gives no hints for does not apply: directory applies if
// T_d is not empty, file if the task names files, tech if it names
// technologies; freshness and load always apply. The total is
//
//	Σ w_i·f_i over applicable factors / Σ w_i over applicable factors
//
// (0 if that weight sum is 0), summed in the order directory, file, tech,
// freshness, load. Scoring an unhinted factor as a vacuous 1 would let a
// Python session win a Go task that gave only tech hints, on directory and
// file scores it never earned; renormalizing keeps what the task did say
// decisive. A task with no hints at all is decided by freshness and load
// alone, so an idle warm session is reused rather than paying a cold start.
//
// # Decision
//
// A candidate whose load is at or above its capacity is ineligible and never
// chosen, whatever its score: cache-aware LLM routers (SGLang's among them)
// gate on load before affinity, since a warm cache behind a queue is slower
// than a cold start. Its scores are still computed and reported.
//
// Candidates are ranked eligible first, then by total descending; exact ties
// go to the lower load/capacity ratio, then the more recent last activity,
// then live before dormant, then the smaller session ID (byte order). Session
// IDs are unique, so the order is total and the decision deterministic.
//
// The outcome is [Reuse] when the best eligible total is strictly above the
// threshold (0.6 by default: a score of exactly 0.6 spawns),
// [SpawnNoCandidates] when there is no candidate, [SpawnAllBusy] when there
// are candidates but none is eligible, and [SpawnBelowThreshold] otherwise.
// The [Decision] carries the top K ranked candidates (5 by default) with
// every factor, for logs and for the dashboard. Candidates the caller
// excludes (a reuse guard vetoed them) are skipped entirely: not scored, not
// counted as considered.
package matcher
