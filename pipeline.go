package hearth

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Defaults of a pipeline, which Pipeline.Defaults fills in.
const (
	DefaultRetryAttempts = 3
	DefaultRetryBackoff  = time.Second
	DefaultMaxBackoff    = 30 * time.Second
	// DefaultContextBudget caps the context block chained into a task:
	// the same as contextchain.DefaultBudget (a test pins them equal).
	DefaultContextBudget = 4096
	DefaultPauseAfter    = 24 * time.Hour
	DefaultAbandonAfter  = 7 * 24 * time.Hour
	DefaultOnFailure     = OnFailureFail
	// NameRule says what a task or stage name is made of.
	NameRule = "letters, digits, '-', '_' and '.'"
)

// Pipeline is a graph of tasks run together: `pipeline "name" { ... }`.
// The same type defines a run through the Go API; zero fields mean their
// defaults there too (Defaults fills them in).
type Pipeline struct {
	Name        string
	Description string
	// Parallel is how many of its tasks may run at once.
	Parallel int
	// Tasks in the order the file declares them; that order breaks ties
	// between tasks ready at the same time.
	Tasks []*PipelineTask
	// Budget caps the run's total cost; 0 means no cap. A task that
	// would start with the run at or over its budget is not started.
	Budget float64
	// OnFailure is what a task that failed for good does to its run.
	OnFailure OnFailure
	Retry     Retry
	Context   Context
	State     State
	// Files are attached to every run of the pipeline: absolute paths.
	Files     []string
	Retention Retention
	// RequireChecks fails a task of the pipeline that reports a tool use
	// a pre_tool_use guard covers without having asked about it.
	RequireChecks bool
	// Stages are the rules of the stages that have any (`stage "name" {
	// ... }`), one per stage its tasks name; a stage without one has
	// none.
	Stages []*Stage
}

// PipelineTask is one `task "name" { ... }` of a pipeline.
type PipelineTask struct {
	// Name is unique in its pipeline and made of letters, digits, '-',
	// '_' and '.': it is part of idempotency keys and store keys.
	Name      string
	Agent     string
	Prompt    string
	Hints     sdk.Hints
	DependsOn []string
	// Stage is the run stage the task belongs to ("writing"); entering it
	// is a transition that transition guards may block. Empty: none.
	Stage string
	// Metadata is passed to the agent with the task.
	Metadata map[string]string
	// Attempts overrides the pipeline's retry.attempts; 0 keeps it.
	Attempts int
	// OnFailure overrides the pipeline's on_failure; empty keeps it.
	OnFailure OnFailure
}

// OnFailure is what a run does when one of its tasks fails for good
// (its attempts are spent, or the failure is permanent).
type OnFailure string

// Escalations.
const (
	// OnFailureFail fails the run. A failed run can still be resumed
	// once the cause is fixed.
	OnFailureFail OnFailure = "fail"
	// OnFailurePause pauses the run for a person, with a report of what
	// failed and why.
	OnFailurePause OnFailure = "pause"
)

// Retry is how failed tasks are tried again: up to Attempts attempts in
// all, waiting Backoff after the first failure, doubling each time up to
// MaxBackoff.
type Retry struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Delay is the wait after the failed attempt number failure (1-based):
// Backoff, doubled for each failure before it, capped at MaxBackoff. It
// never overflows, and is 0 for a Backoff of 0 or less.
func (r Retry) Delay(failure int) time.Duration {
	d := r.Backoff
	if d <= 0 {
		return 0
	}
	// At most 63 doublings: d stops at the cap, before it could overflow.
	for i := 1; i < failure && d < r.MaxBackoff; i++ {
		if d > r.MaxBackoff/2 {
			d = r.MaxBackoff
			break
		}
		d *= 2
	}
	return max(0, min(d, r.MaxBackoff))
}

// MaxOutput is the most a task's output may be, in bytes. A task of a run
// that returns more fails, saying so; up to it, outputs are stored and
// readable through the daemon (whose messages are sized for it).
const MaxOutput = 16 << 20

// ContextPlaceholder, written in a pipeline task's prompt, is replaced by
// the rendered context block of the task's ancestors when the task
// starts, and the block is then not given again in sdk.Task.Context: a
// pipeline places it into the prompt explicitly, once, where it wants it.
// A prompt without it reaches the agent exactly as written, the block
// beside it.
const ContextPlaceholder = "{{context}}"

// Context is how ancestors' artifacts are chained to a task: as
// structured data (sdk.Task.Upstream) and as a rendered block
// (sdk.Task.Context, or in the prompt at ContextPlaceholder).
type Context struct {
	// Budget caps the rendered block in bytes; 0 means
	// DefaultContextBudget, a negative value no cap.
	Budget int
	// Template replaces the default layout (contextchain.WithTemplate).
	Template string
}

// State is a run's shared state document: its first value, and which
// agent may read and write which top-level sections.
type State struct {
	// Initial holds the document's first sections, as JSON.
	Initial map[string]json.RawMessage
	// Owners, when any are declared, limit each agent to its sections:
	// an agent without an owner block reads everything and writes
	// nothing. With none declared, every agent reads and writes all.
	Owners []*Owner
}

// Owner is one `owner "agent" { ... }` block: the sections an agent reads
// and writes.
type Owner struct {
	Agent string
	// Reads lists the sections the agent reads; nil means all.
	Reads  []string
	Writes []string
}

// Owner returns the owner block of agent, or nil.
func (s State) Owner(agent string) *Owner {
	for _, o := range s.Owners {
		if o.Agent == agent {
			return o
		}
	}
	return nil
}

// CanRead reports whether agent may read section.
func (s State) CanRead(agent, section string) bool {
	o := s.Owner(agent)
	return o == nil || o.Reads == nil || slices.Contains(o.Reads, section)
}

// CanWrite reports whether agent may write section.
func (s State) CanWrite(agent, section string) bool {
	if len(s.Owners) == 0 {
		return true
	}
	o := s.Owner(agent)
	return o != nil && slices.Contains(o.Writes, section)
}

// Retention is how long an idle run is kept as it is. A run idle (no
// task started or finished, no state written) for PauseAfter is paused;
// paused and idle for AbandonAfter, it is flagged abandoned; idle for
// DeleteAfter it is deleted with its files and outputs. Zero or a
// negative duration turns a step off; but the zero Retention means the
// defaults (Defaults fills it in), so runs kept forever are RetentionOff.
type Retention struct {
	PauseAfter   time.Duration
	AbandonAfter time.Duration
	DeleteAfter  time.Duration
}

// RetentionOff keeps idle runs as they are, forever: every step off. A
// retention block that turns every step off decodes to it.
var RetentionOff = Retention{PauseAfter: -1, AbandonAfter: -1, DeleteAfter: -1}

// Check returns what is wrong with r's order, and the setting to blame:
// each step that is on must come after the steps on before it, or it
// would act first. It returns "", "" when r is in order.
func (r Retention) Check() (field, problem string) {
	on := func(d time.Duration) bool { return d > 0 }
	switch {
	case on(r.AbandonAfter) && on(r.PauseAfter) && r.AbandonAfter <= r.PauseAfter:
		return "abandon_after", fmt.Sprintf("abandon_after (%s) is not longer than pause_after (%s): a run would be flagged abandoned as soon as it is paused", r.AbandonAfter, r.PauseAfter)
	case on(r.DeleteAfter) && on(r.AbandonAfter) && r.DeleteAfter <= r.AbandonAfter:
		return "delete_after", fmt.Sprintf("delete_after (%s) is not longer than abandon_after (%s): a run would be deleted before it is flagged abandoned", r.DeleteAfter, r.AbandonAfter)
	case on(r.DeleteAfter) && on(r.PauseAfter) && r.DeleteAfter <= r.PauseAfter:
		return "delete_after", fmt.Sprintf("delete_after (%s) is not longer than pause_after (%s): a run would be deleted before it is paused", r.DeleteAfter, r.PauseAfter)
	}
	return "", ""
}

// Stage is the rules of entering a stage of a run, `stage "deploy" {
// not_before = "2026-12-01T09:00:00Z" }`: the run enters a stage when
// the first task that names it is ready, and Opens says whether it may
// yet. Its settings are the rows of StageSettings, which the config file
// decodes by name and the store keeps as this type's JSON: a new rule is
// a field here, a row there and a clause in Opens, and nothing outside
// this file changes for it.
type Stage struct {
	// Name is the stage's, as its tasks name it.
	Name string `json:"name"`
	// NotBefore is the earliest time the run may enter the stage; zero
	// means any time.
	NotBefore time.Time `json:"not_before,omitzero"`
}

// Opens answers whether a run may enter the stage at now, the one
// question the scheduler asks before the run enters it; when it may
// not, at is when to ask again (the earliest time it could open; a rule
// may still keep it closed then), or zero when it never will. A nil
// Stage, a stage without a block, is always open.
func (s *Stage) Opens(now time.Time) (open bool, at time.Time) {
	if s == nil {
		return true, time.Time{}
	}
	// Each rule that keeps the stage closed says when it would let it
	// open; the stage opens when none keeps it closed, so the next time
	// to ask is the latest of those.
	closed := false
	later := func(t time.Time) {
		closed = true
		if t.After(at) {
			at = t
		}
	}
	if now.Before(s.NotBefore) {
		later(s.NotBefore)
	}
	if !closed {
		return true, time.Time{}
	}
	return false, at
}

// String is the stage as its block in the config file would set it.
func (s *Stage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage %q {", s.Name)
	for _, set := range stageSettings {
		if v := set.Format(s); v != "" {
			fmt.Fprintf(&b, " %s = %q", set.Name, v)
		}
	}
	b.WriteString(" }")
	return b.String()
}

// StageSetting is one setting of a stage block: a row of
// StageSettings.
type StageSetting struct {
	// Name is the setting's attribute in the block: "not_before".
	Name string
	// Doc says in a line what it does, for messages that list them.
	Doc string
	// Example is a value it takes, as the file writes it.
	Example string
	// Parse sets the setting of s from its value as the file writes it
	// (a string); its error says the form expected.
	Parse func(s *Stage, value string) error
	// Format is the setting of s in the form Parse reads, "" when unset.
	Format func(s *Stage) string
	// Check says what is wrong with the setting of s, "" when nothing:
	// what Parse cannot refuse (a value set in Go), or what depends on
	// more than the value.
	Check func(s *Stage) string
}

// stageSettings are the stage block's settings, in the order messages
// list them.
var stageSettings = [...]StageSetting{
	{
		Name:    "not_before",
		Doc:     "the earliest time a run may enter the stage, in RFC 3339 form",
		Example: "2026-12-01T09:00:00Z",
		Parse: func(s *Stage, v string) error {
			tv := strings.TrimSpace(v)
			t, err := time.Parse(time.RFC3339, tv)
			if err != nil && leapSecond(tv) {
				// RFC 3339 allows a leap second (23:59:60); Go's times,
				// and so the store, do not hold one.
				return fmt.Errorf("not_before %q names a leap second, which hearth cannot hold; use the second before it (:59) or after it", v)
			}
			if err != nil {
				return fmt.Errorf("not_before must be a time in RFC 3339 form, with its offset from UTC, as in \"2026-12-01T09:00:00Z\" or \"2026-12-01T10:00:00+01:00\"; %q is not one", v)
			}
			s.NotBefore = t
			return nil
		},
		Format: func(s *Stage) string {
			if s.NotBefore.IsZero() {
				return ""
			}
			return s.NotBefore.Format(time.RFC3339Nano)
		},
		Check: func(s *Stage) string {
			// The form the file and the store write it in has four
			// digits of year.
			if y := s.NotBefore.Year(); !s.NotBefore.IsZero() && (y < 0 || y > 9999) {
				return fmt.Sprintf("not_before %s is not a time of the years 0 to 9999", s.NotBefore)
			}
			// Nor an offset from UTC of 24 hours or more, which Go's
			// parser takes ("+24:00", "+23:60") and RFC 3339 cannot
			// write: the store keeps the rule as JSON, and a run of the
			// pipeline could not start. Any other time the form cannot
			// hold is refused here too, whatever made it so.
			if _, err := s.NotBefore.MarshalText(); !s.NotBefore.IsZero() && err != nil {
				_, off := s.NotBefore.Zone()
				return fmt.Sprintf("not_before %s cannot be written in RFC 3339 form (its offset from UTC is %s; an offset is under 24 hours): %v", s.NotBefore.Format(time.RFC3339), time.Duration(off)*time.Second, err)
			}
			return ""
		},
	},
}

// StageSettings lists the settings of a stage block, in order, as a
// copy: a caller cannot change the table.
func StageSettings() []StageSetting { return slices.Clone(stageSettings[:]) }

// StageSettingNames lists the settings' names, in order.
func StageSettingNames() []string {
	out := make([]string, len(stageSettings))
	for i, set := range stageSettings {
		out[i] = set.Name
	}
	return out
}

// Stage returns the rules of stage name, or nil when it has none.
func (p *Pipeline) Stage(name string) *Stage {
	for _, s := range p.Stages {
		if s != nil && s.Name == name {
			return s
		}
	}
	return nil
}

// TaskStages lists the stages p's tasks name, each once, in the order
// the tasks first name them.
func (p *Pipeline) TaskStages() []string {
	var out []string
	for _, t := range p.Tasks {
		if t.Stage != "" && !slices.Contains(out, t.Stage) {
			out = append(out, t.Stage)
		}
	}
	return out
}

// reservedStages are the stages a run's transitions start from (before
// its first stage) and end in (after its last task); the host names them.
var reservedStages = []string{"created", "completed"}

// StageProblem says what is wrong with a task's stage name, or "".
func StageProblem(stage string) string {
	switch {
	case stage == "":
		return "stage is empty; name one, as in stage = \"writing\", or remove stage for a task outside any stage"
	case !ValidName(stage):
		return fmt.Sprintf("stage %q must be made of %s, as in stage = \"writing\"; remove stage for a task outside any stage", stage, NameRule)
	case slices.Contains(reservedStages, stage):
		return fmt.Sprintf("stage %q is reserved: a run's transitions start from %q and end in %q; name the stage for the work its tasks do, as in stage = \"writing\"", stage, reservedStages[0], reservedStages[1])
	}
	return ""
}

// SharedWrite returns the first section two owners both write, the
// first writer, and the index of the second owner and of the section in
// its Writes; ok is false when each section has one writer.
func (s State) SharedWrite() (section, first string, owner, index int, ok bool) {
	owners := s.Owners
	writer := make(map[string]string)
	for i, o := range owners {
		for j, sec := range o.Writes {
			if w, dup := writer[sec]; dup && w != o.Agent {
				return sec, w, i, j, true
			}
			writer[sec] = o.Agent
		}
	}
	return "", "", 0, 0, false
}

// Defaults fills in the zero fields of p with their defaults. Load has
// done it for pipelines from a file; the Go API calls it for others.
func (p *Pipeline) Defaults() {
	p.Parallel = max(p.Parallel, 1)
	if p.OnFailure == "" {
		p.OnFailure = DefaultOnFailure
	}
	if p.Retry.Attempts == 0 {
		p.Retry.Attempts = DefaultRetryAttempts
	}
	if p.Retry.Backoff == 0 {
		p.Retry.Backoff = DefaultRetryBackoff
	}
	if p.Retry.MaxBackoff == 0 {
		p.Retry.MaxBackoff = max(DefaultMaxBackoff, p.Retry.Backoff)
	}
	if p.Context.Budget == 0 {
		p.Context.Budget = DefaultContextBudget
	}
	if p.Retention == (Retention{}) {
		p.Retention = Retention{PauseAfter: DefaultPauseAfter, AbandonAfter: DefaultAbandonAfter}
	}
}

// Validate checks a pipeline built in Go the way config.Load checks one
// from a file: names, dependencies, cycles and settings. Agents and the
// context template are checked by the engine, which knows them.
func (p *Pipeline) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Name == "" {
		add("the pipeline has no name")
	}
	if len(p.Tasks) == 0 {
		add("pipeline %q has no tasks", p.Name)
	}
	if p.Parallel < 1 {
		add("pipeline %q: parallel must be at least 1 (got %d)", p.Name, p.Parallel)
	}
	if p.Budget < 0 {
		add("pipeline %q: budget must be 0 (none) or positive (got %g)", p.Name, p.Budget)
	}
	if p.OnFailure != OnFailureFail && p.OnFailure != OnFailurePause {
		add("pipeline %q: on_failure must be %q or %q (got %q)", p.Name, OnFailureFail, OnFailurePause, p.OnFailure)
	}
	if p.Retry.Attempts < 1 || p.Retry.Backoff < 0 || p.Retry.MaxBackoff < p.Retry.Backoff {
		add("pipeline %q: retry needs attempts >= 1 and 0 <= backoff <= max_backoff (got %+v)", p.Name, p.Retry)
	}
	names := make(map[string]bool, len(p.Tasks))
	for _, t := range p.Tasks {
		switch {
		case !ValidName(t.Name):
			add("pipeline %q: task name %q must be made of %s", p.Name, t.Name, NameRule)
		case names[t.Name]:
			add("pipeline %q: two tasks are named %q", p.Name, t.Name)
		}
		names[t.Name] = true
		if t.Agent == "" {
			add("task %q names no agent", t.Name)
		}
		if strings.TrimSpace(t.Prompt) == "" {
			add("task %q has an empty prompt", t.Name)
		}
		if t.Attempts < 0 {
			add("task %q: attempts must be at least 1, or 0 for the pipeline's (got %d)", t.Name, t.Attempts)
		}
		if t.OnFailure != "" && t.OnFailure != OnFailureFail && t.OnFailure != OnFailurePause {
			add("task %q: on_failure must be %q or %q (got %q)", t.Name, OnFailureFail, OnFailurePause, t.OnFailure)
		}
		if t.Stage != "" {
			if msg := StageProblem(t.Stage); msg != "" {
				add("task %q: %s", t.Name, msg)
			}
		}
	}
	if _, problem := p.Retention.Check(); problem != "" {
		add("pipeline %q: retention: %s", p.Name, problem)
	}
	for _, t := range p.Tasks {
		for _, d := range t.DependsOn {
			if d == t.Name {
				add("task %q depends on itself", t.Name)
			} else if !names[d] {
				add("task %q depends on %q, which is not a task of pipeline %q", t.Name, d, p.Name)
			}
		}
	}
	if cycle := FindCycle(p.Tasks); cycle != nil {
		add("the tasks of pipeline %q depend on each other in a circle: %s", p.Name, strings.Join(append(cycle, cycle[0]), " -> "))
	}
	owners := make(map[string]bool, len(p.State.Owners))
	for _, o := range p.State.Owners {
		if owners[o.Agent] {
			add("pipeline %q: agent %q has two owner entries; merge them", p.Name, o.Agent)
		}
		owners[o.Agent] = true
		for _, sec := range slices.Concat(o.Reads, o.Writes) {
			if sec == "" {
				add("pipeline %q: owner %q names an empty section", p.Name, o.Agent)
			}
		}
	}
	if sec, first, i, _, ok := p.State.SharedWrite(); ok {
		add("pipeline %q: section %q of the state is written by both %q and %q; a section has one owner", p.Name, sec, first, p.State.Owners[i].Agent)
	}
	errs = append(errs, p.validateStages()...)
	return errors.Join(errs...)
}

// validateStages checks the stages' blocks: each names a stage a task
// names, once, and each setting passes its check.
func (p *Pipeline) validateStages() []error {
	var errs []error
	used := p.TaskStages()
	seen := make(map[string]bool, len(p.Stages))
	for i, s := range p.Stages {
		if s == nil {
			errs = append(errs, fmt.Errorf("pipeline %q: stages[%d] is nil; remove it", p.Name, i))
			continue
		}
		switch {
		case StageProblem(s.Name) != "":
			errs = append(errs, fmt.Errorf("pipeline %q: %s", p.Name, StageProblem(s.Name)))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("pipeline %q: stage %q has two blocks; merge them", p.Name, s.Name))
		case !slices.Contains(used, s.Name):
			errs = append(errs, fmt.Errorf("pipeline %q: stage %q is the stage of no task; name it in a task's stage, or remove its block (the tasks' stages: %s)", p.Name, s.Name, orNone(used)))
		}
		seen[s.Name] = true
		for _, set := range stageSettings {
			if set.Check == nil {
				continue
			}
			if msg := set.Check(s); msg != "" {
				errs = append(errs, fmt.Errorf("pipeline %q: stage %q: %s", p.Name, s.Name, msg))
			}
		}
	}
	return errs
}

// orNone is a list for a message: "a, b", or "none".
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Task returns the task named name, or nil.
func (p *Pipeline) Task(name string) *PipelineTask {
	for _, t := range p.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Ancestors lists the tasks name depends on, directly or not, nearest
// first.
func (p *Pipeline) Ancestors(name string) []string {
	var out []string
	seen := map[string]bool{name: true}
	queue := []string{name}
	for len(queue) > 0 {
		t := p.Task(queue[0])
		queue = queue[1:]
		if t == nil {
			continue
		}
		for _, d := range t.DependsOn {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
				queue = append(queue, d)
			}
		}
	}
	return out
}

// ValidName reports whether s can name a task or a stage: letters,
// digits, '-', '_' and '.', as it is part of idempotency and store keys.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// FindCycle returns the tasks of a dependency cycle, in order, or nil.
func FindCycle(tasks []*PipelineTask) []string {
	deps := make(map[string][]string, len(tasks))
	for _, t := range tasks {
		deps[t.Name] = t.DependsOn
	}
	const (
		unseen = iota
		active
		done
	)
	state := make(map[string]int, len(tasks))
	var stack []string
	var visit func(string) []string
	visit = func(n string) []string {
		state[n] = active
		stack = append(stack, n)
		for _, d := range deps[n] {
			if _, ok := deps[d]; !ok || d == n {
				continue // reported elsewhere
			}
			switch state[d] {
			case active:
				i := len(stack) - 1
				for stack[i] != d {
					i--
				}
				return append([]string(nil), stack[i:]...)
			case unseen:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	for _, t := range tasks {
		if state[t.Name] == unseen {
			if c := visit(t.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// leapSecond reports whether s is an RFC 3339 time at second 60 that
// would be valid at second 59: the form of a leap second, told by its
// text rather than by the wording of Go's parse error.
func leapSecond(s string) bool {
	if len(s) < 19 || s[17:19] != "60" {
		return false
	}
	_, err := time.Parse(time.RFC3339, s[:17]+"59"+s[19:])
	return err == nil
}
