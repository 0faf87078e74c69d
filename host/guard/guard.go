// Package guard compiles and evaluates guards: named rules, written by
// operators as expr expressions (github.com/expr-lang/expr) in the config
// file, that stop an agent from doing what it must not, at the host's hook
// points.
//
// A guard watches one hook point, and acts when its condition is true:
//
//	hook            what the condition sees (env type)  actions
//	pre_tool_use    ToolUseEnv                           deny
//	task_admission  AdmissionEnv                         deny
//	transition      TransitionEnv                        block
//	task_result     ResultEnv                            retry, send_back
//	session_reuse   ReuseEnv                             veto
//
// Conditions are compiled once, when the config is loaded, against the
// typed environment of their hook, so a misspelled field or a type mismatch
// is a load-time error with its position (CompileError.Offset), never a
// runtime surprise. Maps from outside (a tool's input, a run's state
// document) are dynamic: their keys are looked up at run time.
//
// Conditions get pure helpers, and nothing with side effects: expr's own
// builtins (any, all, none, filter, map, len, sort, last, date, duration,
// ...) minus now(), which would make a rule depend on when it runs; the
// time a hook fired is the variable now instead. Added helpers:
//
//	glob(path, pattern)   path pattern (see pattern.go) with ** for any depth:
//	                      glob(p, "**/.env*"); the path is cleaned first, and a
//	                      relative pattern matches an absolute path at any depth
//	under(path, dir)      path is dir or inside it (cleaned; a relative dir, at
//	                      any depth of an absolute path)
//	ext(path), base(path), dir(path)
//	dates(from, to)       every day from one YYYY-MM-DD date to another, inclusive
//	days_between(a, b)    whole days from date a to date b (YYYY-MM-DD)
//
// A condition is at most MaxSource bytes and MaxNodes nodes, and runs with
// expr's memory budget capped at MemoryBudget. A condition that fails at
// run time (a missing key in a state document, say) counts as firing, with
// the error in its message: a guard that cannot tell is a guard that says
// no.
//
// # Paths
//
// A pre_tool_use condition sees the paths of the call canonical, read in
// one place (Set.ToolUse, by a Resolver) before any guard runs: absolute
// against the call's working directory (the agent's workspace, or the cwd
// of a Claude Code hook), cleaned, and followed through symbolic links —
// the existing part resolved as the kernel resolves it, the rest, which
// may not exist yet, cleaned on top. paths lists every path the call
// names, as given and where it leads; targets holds the same with what the
// call does there:
//
//	path, real   as given (absolute, clean), and where it leads
//	dir          real is an existing directory
//	access       "read", "write", "list" (names only), "search" (the content
//	             of the file, or of the files below the directory its filter
//	             admits), "any" (may read or write: a shell word, an unknown
//	             tool's field)
//	filter       for a list or search, what below path it reaches ("**", "*",
//	             "**/*.go")
//	from         the input field the path came from, or "paths"
//
// Each tool is read for what it does:
//
//	Read, NotebookRead        file_path, notebook_path: read
//	Write, Edit, MultiEdit,   file_path, notebook_path: write
//	NotebookEdit
//	LS                        path (default: cwd): list of its entries
//	Glob                      the pattern's leading directories, joined to path
//	                          (default: cwd): list of what the rest matches; a
//	                          pattern that climbs ("*/../..") lists anything
//	Grep                      path (default: cwd): search of that file, or of the
//	                          files below it that its glob (read as ripgrep reads
//	                          one) or type admits; everything for a glob that
//	                          excludes ("!x") or a type not in ripgrepTypes
//	Bash                      command: every word of the shell command, parsed
//	                          (see shell.go): what it reads from and writes to,
//	                          and the rest as "any"
//	any other tool            by the kind its agent declares (sdk.ToolCall.Kind):
//	                          "exec" is read as Bash; and its input fields named
//	                          in DefaultPathFields and PathPolicy.Fields (MCP
//	                          tools), as "any" unless the kind says read or write
//
// and the paths an agent lists with a call (sdk.ToolCall.Paths) count too.
// An input field is read under every key that equals its name when case
// is folded, duplicates included: JSON decoders disagree on which of
// {"file_path": a, "FILE_PATH": b} a tool gets, so a guard sees both.
//
// Path helpers answer for the whole call, and cannot be fooled by how a
// path is spelled. A pattern is read as glob() reads one, ~ is the home
// directory of the user the host runs as (PathPolicy.Home), and a pattern
// that is neither absolute nor starts with ** or ~ matches at any depth:
//
//	touches(pattern)          some path the call may read, write or search
//	                          matches, or a directory it lists does
//	reads(pattern)            ... may read the content of (read, search, any)
//	writes(pattern)           ... may write (write, any)
//	names(pattern)            some path the call names, as given or where it
//	                          leads, matches; not what a search finds below it
//	touches_under(dir)        the call may read, write, search or list dir or
//	                          anything below it
//	reads_under(dir), writes_under(dir)
//
// A search reaches what its filter admits below its directory: Grep of
// the workspace without a glob may read a .env anywhere in it, and
// touches("**/.env") refuses it (Claude Code's Grep passes --hidden to
// ripgrep; PathPolicy.SearchesSkipHidden takes an agent's own search tool
// to skip dot files, as ripgrep does by default). A listing shows names, it
// does not open files: it touches the directory it lists, and what it
// shows below counts for the _under helpers. For example:
//
//	touches("**/.env") || touches_under("~/.ssh")
//	writes("/etc/**") || writes("**/.git/hooks/**")
//	tool == "Bash" && reads("**/*.pem")
//	reads("**/.env*") && !names("**/.env.example")
//
// A call that could not be read whole (a command that does not parse, or
// expands past the limits) says why in unread, and the path helpers
// refuse it.
//
// # Case
//
// Matching folds case by default, on every system (PathPolicy.CaseSensitive
// says why): ".ENV" is refused by a guard on ".env", which on a file
// system that folds case is the same file, and on one that does not is a
// name that differs from a secret's by case alone. Folding is Unicode
// lower-casing of both the path and the pattern.
//
// # What a guard cannot stop
//
// A guard reads the call, not what the program it starts will do: a
// path built at run time (a script that joins "~/." and "ssh", a
// variable set outside the command, a file the agent wrote and then
// runs, code passed to python -c), a symbolic link made in the same
// command it is used in, a directory walked by a command (grep -r, find,
// tar) below the names the command gives, and a symbolic link below a
// searched directory that the search's glob does not name (ripgrep,
// Claude Code's Grep, does not follow those unless told to), a hard link
// made before the guard was there, and names that mean something else in
// the agent's process than in the host's (/proc/self, /dev/fd). Nor can
// a pre-tool-use check see a file change between the check and the use. An agent's own code calling
// the operating system is never seen at all. Confinement (Landlock, on
// Linux) is what holds there; guards say no early, with a reason.
package guard

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"github.com/hearth-dev/hearth/internal/text"
)

// Limits on a condition.
const (
	MaxSource    = 4096
	MaxNodes     = 1000
	MemoryBudget = 100_000
)

// Hook is a point where guards are evaluated.
type Hook string

// Hook points.
const (
	PreToolUse    Hook = "pre_tool_use"
	TaskAdmission Hook = "task_admission"
	Transition    Hook = "transition"
	TaskResult    Hook = "task_result"
	SessionReuse  Hook = "session_reuse"
)

// Hooks lists the hook points in a stable order.
var Hooks = []Hook{PreToolUse, TaskAdmission, Transition, TaskResult, SessionReuse}

// Action is what a guard does when its condition is true.
type Action string

// Actions.
const (
	Deny     Action = "deny"
	Block    Action = "block"
	Veto     Action = "veto"
	Retry    Action = "retry"
	SendBack Action = "send_back"
)

// actions lists each hook's actions, the default first.
var actions = map[Hook][]Action{
	PreToolUse:    {Deny},
	TaskAdmission: {Deny},
	Transition:    {Block},
	TaskResult:    {Retry, SendBack},
	SessionReuse:  {Veto},
}

// Actions returns the actions a guard at hook may take, the default first.
func Actions(h Hook) []Action { return actions[h] }

// envs holds a zero value of each hook's environment, for compiling.
var envs = map[Hook]any{
	PreToolUse:    ToolUseEnv{},
	TaskAdmission: AdmissionEnv{},
	Transition:    TransitionEnv{},
	TaskResult:    ResultEnv{},
	SessionReuse:  ReuseEnv{},
}

// Spec is a guard as the config file declares it.
type Spec struct {
	Name      string
	Hook      Hook
	Condition string
	// Action is one of Actions(Hook); empty means the default.
	Action  Action
	Message string
	// To is the task a send_back guard sends the work back to.
	To string
	// MaxLoops bounds how often a retry or send_back guard acts for one
	// run; 0 means 3.
	MaxLoops int
	// Filters: empty means any. Agents and Tasks name the agents and
	// pipeline tasks the guard applies to; From and ToStage the stages of
	// a transition.
	Agents  []string
	Tasks   []string
	From    []string
	ToStage []string
}

// CompileError is a condition that does not compile.
type CompileError struct {
	Guard string
	// Offset is the position of the problem in the condition, in runes
	// from its start; -1 when it is about the condition as a whole.
	Offset int
	Msg    string
	// Hint says what the hook's condition can use.
	Hint string
}

func (e *CompileError) Error() string {
	s := fmt.Sprintf("guard %q: %s", e.Guard, e.Msg)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Rule is a compiled guard. Its methods are safe for concurrent use.
type Rule struct {
	Spec
	program  *vm.Program
	resolver *Resolver
	// blocked is what a verdict says: the spec's message, or one made
	// once here rather than on every verdict.
	blocked string
	// uses holds the environment's top-level names the condition reads,
	// so that callers build only those.
	uses   map[string]bool
	fired  atomic.Uint64
	failed atomic.Uint64
}

// Compile checks a spec and compiles its condition against its hook's
// environment, with paths read under the default PathPolicy.
func Compile(s Spec) (*Rule, error) { return CompileWith(s, nil) }

// CompileWith is Compile with paths read by r (nil: the default
// PathPolicy). The guards of one Set share one Resolver.
func CompileWith(s Spec, r *Resolver) (*Rule, error) {
	if r == nil {
		r = defaultResolver()
	}
	fail := func(offset int, format string, args ...any) (*Rule, error) {
		return nil, &CompileError{Guard: s.Name, Offset: offset, Msg: fmt.Sprintf(format, args...)}
	}
	env, ok := envs[s.Hook]
	if !ok {
		names := make([]string, len(Hooks))
		for i, h := range Hooks {
			names[i] = string(h)
		}
		return fail(-1, "unknown hook %q; guards watch one of: %s", s.Hook, strings.Join(names, ", "))
	}
	if s.Action == "" {
		s.Action = actions[s.Hook][0]
	}
	if !contains(actions[s.Hook], s.Action) {
		return fail(-1, "a %s guard can %s, not %q", s.Hook, joinActions(actions[s.Hook]), s.Action)
	}
	if s.Action == SendBack && s.To == "" {
		return fail(-1, "a send_back guard needs back_to = \"<task>\": the earlier task the work goes back to")
	}
	if s.MaxLoops == 0 {
		s.MaxLoops = 3
	}
	if strings.TrimSpace(s.Condition) == "" {
		return fail(-1, "the condition is empty; write when the guard acts, such as tool == \"Bash\"")
	}
	if len(s.Condition) > MaxSource {
		return fail(-1, "the condition is %d bytes, more than the %d allowed; split it into several guards", len(s.Condition), MaxSource)
	}
	if ce := checkHelpers(s, r); ce != nil {
		return nil, ce
	}
	opts := append(options(r), expr.Env(env), expr.AsBool(), expr.MaxNodes(MaxNodes))
	program, err := expr.Compile(s.Condition, opts...)
	if err != nil {
		ce := &CompileError{Guard: s.Name, Offset: -1, Msg: err.Error()}
		var fe *file.Error
		if errors.As(err, &fe) {
			ce.Offset, ce.Msg = fe.From, fe.Message
		}
		ce.Msg, ce.Hint = explain(s.Hook, env, ce.Msg)
		return nil, ce
	}
	return &Rule{Spec: s, program: program, resolver: r, blocked: cmp.Or(s.Message, "blocked by guard "+s.Name), uses: topLevelNames(program.Node())}, nil
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func joinActions(as []Action) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, " or ")
}

// topLevelNames collects the environment names a condition reads.
func topLevelNames(n ast.Node) map[string]bool {
	names := make(map[string]bool)
	ast.Walk(&n, visitor(func(node *ast.Node) {
		if id, ok := (*node).(*ast.IdentifierNode); ok {
			names[id.Value] = true
		}
	}))
	return names
}

type visitor func(*ast.Node)

func (v visitor) Visit(n *ast.Node) { v(n) }

// Uses reports whether the condition reads the environment's top-level
// name (such as "session").
func (r *Rule) Uses(name string) bool { return r.uses[name] }

// Applies reports whether the guard's filters let it judge m.
func (r *Rule) Applies(m Match) bool {
	return inOrAny(r.Agents, m.Agent) && inOrAny(r.Tasks, m.Task) && inOrAny(r.From, m.From) && inOrAny(r.ToStage, m.To)
}

func inOrAny(list []string, v string) bool { return len(list) == 0 || contains(list, v) }

// Match is what a guard's filters are checked against.
type Match struct {
	Agent, Task, From, To string
}

var vms = sync.Pool{New: func() any { return &vm.VM{MemoryBudget: MemoryBudget} }}

// Eval runs the condition on env, which must be the hook's environment
// type. A condition that fails counts as firing; err says why.
func (r *Rule) Eval(env any) (fired bool, err error) {
	return r.run(r.resolver.prepare(env))
}

// run runs the condition on an environment prepare has made ready.
func (r *Rule) run(env any) (fired bool, err error) {
	machine := vms.Get().(*vm.VM)
	out, err := machine.Run(r.program, env)
	vms.Put(machine)
	if err != nil {
		r.failed.Add(1)
		r.fired.Add(1)
		// One line, for the agent and the event log: expr's own error
		// adds a multi-line snippet of the condition.
		var fe *file.Error
		if errors.As(err, &fe) {
			return true, fmt.Errorf("guard %q could not decide: %s (at column %d of its condition)", r.Name, fe.Message, fe.Column+1)
		}
		return true, fmt.Errorf("guard %q could not decide: %w", r.Name, err)
	}
	if fired, _ = out.(bool); fired {
		r.fired.Add(1)
	}
	return fired, nil
}

// Stats are a guard's counters since it was loaded.
type Stats struct {
	Name   string `json:"name"`
	Hook   Hook   `json:"hook"`
	Fired  uint64 `json:"fired"`
	Failed uint64 `json:"failed"`
}

// Stats returns the guard's counters.
func (r *Rule) Stats() Stats {
	return Stats{Name: r.Name, Hook: r.Hook, Fired: r.fired.Load(), Failed: r.failed.Load()}
}

// Verdict is a guard that fired.
type Verdict struct {
	Guard   string
	Action  Action
	Message string
	// To is the task a send_back verdict returns the work to.
	To       string
	MaxLoops int
	// Err is set when the condition failed to run; the guard counts as
	// fired.
	Err error
}

func (r *Rule) verdict(err error) *Verdict {
	msg := r.blocked
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return &Verdict{Guard: r.Name, Action: r.Action, Message: msg, To: r.Spec.To, MaxLoops: r.MaxLoops, Err: err}
}

// Set is the compiled guards of a config, by hook, in config order. A nil
// Set has no guards. Its methods are safe for concurrent use.
type Set struct {
	byHook map[Hook][]*Rule
	all    []*Rule
}

// NewSet groups rules by hook, keeping their order.
func NewSet(rules []*Rule) *Set {
	s := &Set{byHook: make(map[Hook][]*Rule)}
	for _, r := range rules {
		s.byHook[r.Hook] = append(s.byHook[r.Hook], r)
		s.all = append(s.all, r)
	}
	return s
}

// Rules returns the guards of hook, in config order.
func (s *Set) Rules(h Hook) []*Rule {
	if s == nil {
		return nil
	}
	return s.byHook[h]
}

// Uses reports whether any guard of hook that applies to m reads the
// environment's top-level name: callers skip building what no one reads.
func (s *Set) Uses(h Hook, m Match, name string) bool {
	for _, r := range s.Rules(h) {
		if r.Applies(m) && r.Uses(name) {
			return true
		}
	}
	return false
}

// Any reports whether any guard of hook applies to m.
func (s *Set) Any(h Hook, m Match) bool {
	for _, r := range s.Rules(h) {
		if r.Applies(m) {
			return true
		}
	}
	return false
}

// First evaluates the guards of hook that apply to m, in config order, and
// returns the first that fires, or nil.
func (s *Set) First(h Hook, m Match, env any) *Verdict {
	env = s.resolver().prepare(env)
	for _, r := range s.Rules(h) {
		if !r.Applies(m) {
			continue
		}
		if fired, err := r.run(env); fired {
			return r.verdict(err)
		}
	}
	return nil
}

// prepare reads the paths of a pre_tool_use environment that was not
// built by Set.ToolUse, so that no guard sees a path that is not
// canonical. The environment stays a value in an interface: expr reads
// the fields of such a value in place, where those of a struct behind a
// pointer are copied out one allocation each.
func (r *Resolver) prepare(env any) any {
	if e, ok := env.(ToolUseEnv); ok && !e.read {
		r.fill(&e)
		return e
	}
	return env
}

// Trial is one guard's answer, for trying rules out.
type Trial struct {
	Guard   string
	Applies bool
	Fired   bool
	Action  Action
	Message string
	Err     error
}

// All evaluates every guard of hook and reports each: whether it applies
// to m, whether it fired, and what it said.
func (s *Set) All(h Hook, m Match, env any) []Trial {
	env = s.resolver().prepare(env)
	var out []Trial
	for _, r := range s.Rules(h) {
		o := Trial{Guard: r.Name, Applies: r.Applies(m), Action: r.Action}
		if o.Applies {
			o.Fired, o.Err = r.run(env)
			if o.Fired {
				o.Message = r.verdict(o.Err).Message
			}
		}
		out = append(out, o)
	}
	return out
}

// Stats returns every guard's counters, in config order.
func (s *Set) Stats() []Stats {
	if s == nil {
		return nil
	}
	out := make([]Stats, len(s.all))
	for i, r := range s.all {
		out[i] = r.Stats()
	}
	return out
}

// explain rewords expr's messages about unknown names and fields in the
// config's terms, with the closest name as a suggestion, and says what the
// hook's conditions can use.
func explain(h Hook, env any, msg string) (string, string) {
	if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
		return "unknown name " + name + didYouMean(name, fieldNames(env)), Describe(h)
	}
	// "type guard.Session has no field flies"
	if i := strings.Index(msg, " has no field "); i >= 0 && strings.HasPrefix(msg, "type ") {
		field := msg[i+len(" has no field "):]
		typ := strings.TrimPrefix(msg[:i], "type ")
		if t, ok := envTypes[typ]; ok {
			names := fieldNames(t.value)
			return fmt.Sprintf("%s has no field %s%s; its fields: %s", t.name, field, didYouMean(field, names), strings.Join(slices.Sorted(slices.Values(names)), ", ")), ""
		}
	}
	return msg, hintFor(msg)
}

// helperUse shows how each of hearth's helpers is called.
var helperUse = map[string]string{
	"glob":  "glob(path, pattern), as in any(paths, glob(#, 'crypto/**'))",
	"under": "under(path, dir), as in any(paths, under(#, 'vendor'))",
	"ext":   "ext(path), as in ext(task.files[0]) == '.go'",
	"base":  "base(path)", "dir": "dir(path)",
	"dates":        "dates(from, to), YYYY-MM-DD strings",
	"days_between": "days_between(a, b), YYYY-MM-DD strings",
}

func init() {
	for _, h := range pathHelpers {
		arg := "pattern), as in " + h.name + "('**/.env*')"
		if h.under {
			arg = "dir), as in " + h.name + "('secrets')"
		}
		helperUse[h.name] = h.name + "(" + arg + ": it reads the call's paths itself"
	}
}

// hintFor says how to mend the kinds of mistake expr reports in its own
// terms: syntax, types, a helper's arguments. "" when none fits.
func hintFor(msg string) string {
	for _, prefix := range []string{"not enough arguments to call ", "too many arguments to call "} {
		if name, ok := strings.CutPrefix(msg, prefix); ok {
			if use, ok := helperUse[strings.TrimSpace(name)]; ok {
				return "call it as " + use
			}
		}
	}
	if i := strings.Index(msg, " to call "); i >= 0 && strings.HasPrefix(msg, "cannot use ") {
		name := strings.TrimSpace(msg[i+len(" to call "):])
		hint := ""
		if use, ok := helperUse[name]; ok {
			hint = "call it as " + use
		}
		if strings.HasPrefix(msg, "cannot use []") && helperNamed(name) == nil {
			hint = strings.TrimPrefix(hint+"; ", "; ") + "a list is tested one element at a time: any(paths, ...) with # for each"
		}
		return hint
	}
	switch {
	case strings.Contains(msg, `unexpected token Operator("=")`):
		return "compare with == (a condition compares; it cannot assign)"
	case strings.Contains(msg, "unexpected token EOF"):
		return "the condition ends too soon: an operator (&&, ||, ==, ...) needs something after it, and every ( and [ its closing one"
	case strings.HasPrefix(msg, "unexpected token"), strings.HasPrefix(msg, "unexpected character"):
		return "a condition is one expr expression: compare with == != < > <= >=, combine with && || and !, quote strings ('Read' or \"Read\"), test a list with any(list, ...) and # for each element; see expr-lang.org"
	case strings.Contains(msg, "mismatched types []"):
		return "a list is not compared whole: test its elements with any(paths, ...) and # for each, or count them with len(paths)"
	case strings.Contains(msg, "mismatched types"):
		return "both sides of an operator need one type: a number with a number (len(paths) > 3), a string with a quoted string (tool == 'Read')"
	}
	return ""
}

// envTypes names the environment's struct types as conditions see them.
var envTypes = map[string]struct {
	name  string
	value any
}{
	"guard.Session": {"session", Session{}},
	"guard.Task":    {"task", Task{}},
	"guard.Run":     {"run", Run{}},
	"guard.Result":  {"result", Result{}},
}

// Describe says what a hook's conditions can use, for error messages.
func Describe(h Hook) string {
	env, ok := envs[h]
	if !ok {
		return ""
	}
	names := fieldNames(env)
	sort.Strings(names)
	helpers := "glob, under, ext, base, dir, dates, days_between"
	if h == PreToolUse {
		helpers = "touches, reads, writes, names, touches_under, reads_under, writes_under, " + helpers
	}
	return fmt.Sprintf("a %s condition can use %s, and the helpers %s", h, strings.Join(names, ", "), helpers)
}

// didYouMean is " (did you mean x?)" for the closest of names to s, as
// guard messages have always written it, or "".
func didYouMean(s string, names []string) string {
	if best := text.Closest(s, names); best != "" {
		return " (did you mean " + best + "?)"
	}
	return ""
}
