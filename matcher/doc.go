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
// library and, to decode its block of the config file, HCL, so the same
// input always gives the same decision.
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
// 0, "src" 1, "src/models" 2 (and "/abs/dir" 2). The ancestors of a
// directory are the directories on its path up to the root: "src/models"
// has "src" and "."; "/abs/dir" has "/abs" and ".".
//
// # Fingerprints
//
// A session's directories are the ones it worked in: where it read or
// wrote files, or that it listed. The host records the directory of each
// file and each listed directory, the root "." like any other (a session
// that read "main.go" worked in "."), but not their ancestors: the
// matcher derives those, and tells a session that worked in "src/models"
// from one that worked in "src". A session worked under a directory if it
// worked in one of its descendants, and it knows a directory if it worked
// in it or under it: every session that worked anywhere knows ".".
//
// Two counts over all the sessions (the candidates given to Scan, or the
// sessions in the Index, excluded and full ones included) weigh
// directories, as a search engine weighs a rare term above a common one.
// N is the number of sessions and n(x) the number that know directory x.
// The rarity of x is
//
//	r(x) = 1 − n(x)/(N+1)
//
// the share of sessions, counting the new one a spawn would add (which
// knows nothing), that do not know x: 1 for a directory nobody knows,
// 1/(N+1) for one every session knows, such as the root, a repository's
// top directory or "github.com". Since the counts cover every session,
// excluding a candidate never changes the scores of the others.
//
// # Factors
//
// The task's directories T_d are its hint directories together with the
// directory of each hint file (path.Dir, normalized). Each factor is a
// number in [0, 1]:
//
//   - Directory (weight 0.30): the mean of m(d), defined below, over the
//     task directories d, weighted by their rarities r(d) and summed in
//     sorted order of T_d; with one task directory, it is m(d).
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
// For a task directory d of depth dd, a session's m(d) is the first of
// these that applies:
//
//  1. 1 if it worked in d.
//  2. 0 if another session worked in d: when some session holds the task's
//     own directory, knowing its neighborhood earns nothing.
//  3. dd/(dd+1) if it worked under d: it knows a part of d (0 for the root,
//     whose parts say nothing about it).
//  4. depth(c)/dd · r(c), where c is the deepest proper ancestor of d it
//     knows (it worked beside d, or above it): the share of d's path that
//     c covers, times c's rarity.
//  5. 0: it knows no ancestor of d but the root, of depth 0.
//
// Worked examples, with the seed's weights:
//
//   - Directory. Five sessions; a task in "a/b/c/d" (depth 4). If s-1
//     worked in "a/b/c/d", it scores 1 and every other session 0, however
//     close. If nobody did: a session that worked in "a/b/c/d/x" scores
//     4/5 = 0.8; one that worked in "a/b/c/e" knows "a/b/c", and if 2 of
//     the 5 sessions know "a/b/c" it scores 3/4 · (1 − 2/6) = 0.5, and
//     only 3/4 · 1/6 = 0.125 if all 5 know it; one that worked only in
//     "x/y" scores 0. A task naming "go.mod" and "host/pool.go" has
//     T_d = {".", "host"}; with 5 sessions, all knowing "." and 1 knowing
//     "host", r(".") = 1/6 and r("host") = 5/6, so a session that read only
//     "go.mod" scores (1/6 · 1 + 5/6 · 0) / (6/6) = 0.17 on directory.
//   - File. A task naming "a.go" and "b.go", a session that read "a.go":
//     1/2 = 0.5.
//   - Tech. A task needing "go" and "sql", a session primed for "go": 0.5.
//   - Freshness. Last active 6 minutes ago, idle timeout 30 minutes:
//     1 − 6/30 = 0.8.
//   - Load. One task running, capacity 4: 1 − 1/4 = 0.75.
//
// File, tech and directory are coverage of what the task needs, not Jaccard
// similarity: a session that knows more than the task needs is not
// penalized, since its warm cache is a superset.
//
// # Total
//
// A factor the task gives no hints for does not apply: directory applies if
// T_d is not empty (so whenever the task names files or directories), file
// if it names files, tech if it names technologies; freshness and load
// always apply. Freshness and load say how ready a session is, not whether
// it knows anything; they count in proportion to the context agreement
//
//	A = the larger of directory and file, among those that apply
//	  = 1 if the task names neither directories nor files
//
// and the total is, over the applicable factors, summed in this order,
//
//	(0.30·dir + 0.25·file + 0.20·tech + 0.15·A·fresh + 0.10·A·load) / W
//
// where W is the sum of the applicable weights (the total is 0 if W is 0).
// So a session that knows none of a task's directories and files (A = 0)
// owes its total to technology alone: at most 0.20/0.75 = 0.27 with the
// seed's weights, never above the threshold, however fresh and idle. A
// session that worked in the task's directory keeps its place for the
// whole idle timeout: for a task naming its directory and technology,
// dir 1, tech 1 and A = 1 total at least (0.30 + 0.20 + 0.10)/0.75 = 0.80
// even at freshness 0; naming only the directory, 0.40/0.55 = 0.73.
//
// A task with only technology hints has A = 1: (0.20·tech + 0.15·fresh +
// 0.10·load) / 0.45, so a fresh idle session of the right technology scores
// 1 and one of another technology 0.56 (spawn). A task with no hints at
// all is decided by freshness and load alone, (0.15·fresh + 0.10·load) /
// 0.25, so an idle warm session is reused rather than paying a cold start.
// Scoring an unhinted factor as a vacuous 1 would let a Python session win
// a Go task that gave only tech hints, on directory and file scores it
// never earned; renormalizing keeps what the task did say decisive.
//
// Worked totals, a task naming directory "net/http" and technology "go"
// (W = 0.75): the session that worked in "net/http", idle 6 minutes
// (fresh 0.8), load 0: (0.30 + 0.20 + 0.15·0.8 + 0.10) / 0.75 = 0.96,
// reused. A fresh idle session that worked only in "net/url": another
// session worked in "net/http", so m = 0, A = 0, and its total is
// 0.20/0.75 = 0.27. Had nobody worked in "net/http", and 2 of 4 sessions
// knew "net": m = 1/2 · (1 − 2/5) = 0.3 = A, and (0.30·0.3 + 0.20 +
// 0.15·0.3 + 0.10·0.3) / 0.75 = 0.49: below the threshold, so a new
// session is spawned if the pool has room.
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
// excludes (a reuse guard vetoed them) are skipped: not scored, not counted
// as considered, though they count in N and n(x) like every session.
//
// # Owners
//
// A session may have an owner ([Candidate.Owner]), a name the caller
// chooses: in hearth, the host the session runs on, "" for the host's
// own. Owners play no part in scores. [Index.DecideOwned] decides among
// one owner's sessions: every other session is left out as if its ID were
// excluded (never ranked nor considered, counted in [Decision.Excluded]
// and, like every session, in N and n(x)). A host whose index also holds
// the other hosts' sessions, so that a decision across hosts scores them
// all alike, thus decides among its own at about the cost of an index of
// its own alone, instead of excluding thousands of sessions one by one.
//
// # Factors and their configuration
//
// The package owns everything a factor is, so that adding one changes no
// other package: its weight in the config file's matcher block ([Block],
// whose weights block's attributes are the factors' names, decoded and
// checked here with errors at file:line:col), its default, and how a
// decision shows it ([Ranked.Factors]: name, weight, score, applied and
// its share of the total, the list a host copies into its own
// decisions, stores, sends and draws without naming a factor). The
// factors are listed once, in factors.go. A factor's share is its term
// of the total's sum (for freshness and load, scaled by A) over W, 0
// when it did not apply, so that a candidate's shares add up to its
// total: with the seed's weights, the worked total 0.96 above is
// directory 0.40, tech 0.27, freshness 0.16 and load 0.13.
//
// A score printed beside the threshold goes through [FormatScore], which
// prints as many decimals as it takes to show on which side it lies:
// "0.6004 > 0.6000", never "0.60 > 0.60".
package matcher
