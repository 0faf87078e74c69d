// Package contextchain passes what finished tasks learned into the prompts of
// the tasks that depend on them.
//
// When a task of a run is about to start, the host hands [Collect] the task's
// name, the run's task graph and the ContextArtifacts the run has so far.
// Collect walks the task's ancestors and returns a [Chain]; a [Renderer] turns
// the chain into a Markdown block that fits a size budget, and [Prompt] puts
// that block before the task's own prompt. The package is pure: it imports
// nothing of hearth (the host converts its own types into [Artifact] and
// [Graph]), does no I/O and reads no clock, so the same input always gives the
// same block, byte for byte.
//
// # Ordering
//
// Ancestors are visited breadth-first from the task: its direct dependencies
// (distance 1) first, then their dependencies (distance 2), and so on. A task
// reachable by several paths counts once, at its shortest distance, and a
// cycle in the graph ends the walk instead of looping. Within one distance,
// steps are ordered newest first (CreatedAt descending), then by task name, so
// that ties do not depend on map order. This order is the priority order used
// by deduplication and by the budget: closer and fresher knowledge wins.
//
// Only the newest artifact of each task counts: the highest Version, then
// the latest CreatedAt, then the one given last. A task that was re-run
// (a quality gate sent it back) thus contributes what its last run learned,
// not a mix of stale and fresh notes. Ancestors without an artifact are
// skipped and reported in [Chain.Missing]; their own ancestors are still
// visited, since the graph runs through them. Artifacts of tasks that are not
// ancestors, including the task itself, are ignored, so the host may pass all
// of a run's artifacts.
//
// # Deduplication
//
// Items are trimmed and blank ones dropped. A key decision, new pattern or
// potential gotcha whose text equals one already seen in the same list kind,
// compared case-insensitively with runs of white space collapsed, is kept
// only at its first (highest-priority) occurrence. Modified files are
// compared and rendered as cleaned slash paths ("./src//a.go" is
// "src/a.go"), case-sensitively, since file systems are. Each [Step] counts
// the duplicates it lost; a step left with no items is not rendered and is
// not counted as left out, because everything it said is said above.
//
// # Budget
//
// A [Renderer] caps the rendered block at a number of bytes ([DefaultBudget]
// unless [WithBudget] says otherwise; 0 means unlimited). If the whole chain
// fits, it is rendered whole. Otherwise items are considered one at a time in
// priority order, step by step (nearest and newest first) and within a step
// key decisions, then potential gotchas, then new patterns, then modified
// files: what the next agent cannot recover by itself comes before the file
// list it can get from the working tree. An item is included when the block,
// including the note about what was left out, still fits; otherwise it is left
// out and counted, and smaller items after it may still fit. While choosing,
// the note is sized for the largest counts it could report, so that the real
// note is sure to fit; a few bytes of the budget may go unused. Items are never
// cut mid-string. The block then ends with a note such as
//
//	*Context is partial: 2 earlier steps and 5 items left out to fit the 4096-byte context budget.*
//
// so the agent knows its context is incomplete. "Steps" are ancestors of
// which nothing was rendered; "items" are those left out of steps that were
// rendered. When not even the header and the note fit, the block is empty and
// every step is reported as left out. [Result] reports the included and
// omitted counts per step for the host's event log. The rendered block is
// never longer than the budget.
//
// # Rendering
//
// The default block is the seed's:
//
//	# Context from Previous Steps
//	The following context was learned from the "Database Setup" session:
//
//	- **Key Decision:** Used Zod for schema validation.
//	- **Modified:** src/models/User.ts, src/db/schema.sql
//	- **Pattern:** All APIs now require the x-api-key header.
//	- **Note:** The DB migration requires root access, which has been mocked.
//
//	*Use this knowledge to maintain consistency.*
//
// with one "The following context was learned from ..." paragraph per step.
// A chain with nothing to say renders as the empty string, without a header.
//
// [WithTemplate] replaces the layout with a text/template. The template is
// parsed and tried once against sample data when the [Renderer] is built, so
// a typo is an error at configuration time, reported with its line. It runs
// only when at least one item is included, with a [Data] value:
//
//	.Task          the task whose prompt the block goes into
//	.Steps         the steps with at least one included item, in priority
//	               order; each is a [Step]: .Task, .Title, .Name (Title, or
//	               Task when there is no title), .SourceSession, .CreatedAt,
//	               .Version, .Distance (1 = direct dependency), .Duplicates,
//	               and the included .KeyDecisions, .ModifiedFiles,
//	               .NewPatterns and .PotentialGotchas
//	.Missing       ancestors that left no artifact
//	.OmittedSteps  steps left out entirely
//	.OmittedItems  items left out of the steps shown
//	.Note          the sentence about what was left out, or "" when nothing was
//	.Budget        the budget in bytes, 0 when unlimited
//
// and one function besides the text/template built-ins: join (strings.Join).
// [DefaultTemplate] is the default layout written as such a template, a
// starting point for a custom one. Because a template is opaque, a custom
// one is fitted to the budget by rendering it once per item considered (a
// template whose output shrinks as more is left out is then trimmed from the
// lowest-priority item up until it fits); the default layout is measured
// arithmetically instead and renders once. A custom template is
// configuration, trusted like code: its running time is not bounded.
package contextchain
