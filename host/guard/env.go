package guard

import (
	"fmt"
	"path"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr"
)

// The environments guards see, one type per hook. Field names in
// conditions are the expr tags: snake_case, as in the config file.

// ToolUseEnv is what a pre_tool_use condition sees: a tool use an agent is
// about to make. Set.ToolUse builds its path part from the call; an
// environment built otherwise has its paths read the same way before
// any guard sees it (Set.First, Set.All).
type ToolUseEnv struct {
	Tool string `expr:"tool" json:"tool"`
	// Kind is what the agent says the tool does: read, write, list,
	// search, exec or other; empty when it does not say.
	Kind  string         `expr:"kind" json:"kind,omitempty"`
	Input map[string]any `expr:"input" json:"input"`
	// Paths are the call's paths, canonical: each as given (absolute,
	// clean) and where it leads through symbolic links.
	Paths []string `expr:"paths" json:"paths"`
	// Targets are the same paths with what the call does there.
	Targets []Target `expr:"targets" json:"targets,omitempty"`
	// Cwd is the directory the call's relative paths were read against.
	Cwd string `expr:"cwd" json:"cwd,omitempty"`
	// Unread says why part of the call could not be read (a command
	// that does not parse, say); empty when all of it was. The path
	// helpers refuse a call with an unread part.
	Unread  string    `expr:"unread" json:"unread,omitempty"`
	Session Session   `expr:"session" json:"session"`
	Task    Task      `expr:"task" json:"task"`
	Run     Run       `expr:"run" json:"run"`
	Now     time.Time `expr:"now" json:"now"`

	// read: Paths and Targets were read from the call.
	read bool
}

// AdmissionEnv is what a task_admission condition sees: a task about to be
// placed.
type AdmissionEnv struct {
	Task Task      `expr:"task" json:"task"`
	Run  Run       `expr:"run" json:"run"`
	Now  time.Time `expr:"now" json:"now"`
}

// TransitionEnv is what a transition condition sees: a run about to leave
// stage From for stage To.
type TransitionEnv struct {
	From  string         `expr:"from" json:"from"`
	To    string         `expr:"to" json:"to"`
	State map[string]any `expr:"state" json:"state"`
	Run   Run            `expr:"run" json:"run"`
	Now   time.Time      `expr:"now" json:"now"`
}

// ResultEnv is what a task_result condition sees: a task's result.
type ResultEnv struct {
	Result Result    `expr:"result" json:"result"`
	Task   Task      `expr:"task" json:"task"`
	Run    Run       `expr:"run" json:"run"`
	Now    time.Time `expr:"now" json:"now"`
}

// ReuseEnv is what a session_reuse condition sees: the session the matcher
// picked for a task, and its score.
type ReuseEnv struct {
	Session Session   `expr:"session" json:"session"`
	Score   float64   `expr:"score" json:"score"`
	Task    Task      `expr:"task" json:"task"`
	Now     time.Time `expr:"now" json:"now"`
}

// Session is a session's context: what its agent's tool-use reports have
// told the host so far. A task's reports travel on their own stream, so a
// pre_tool_use question can arrive before the reports the same task sent
// just before it; everything earlier tasks reported is there.
type Session struct {
	ID           string   `expr:"id" json:"id"`
	Agent        string   `expr:"agent" json:"agent"`
	Files        []string `expr:"files" json:"files"`
	Directories  []string `expr:"directories" json:"directories"`
	Technologies []string `expr:"technologies" json:"technologies"`
	Tasks        int      `expr:"tasks" json:"tasks"`
	ToolUses     int      `expr:"tool_uses" json:"tool_uses"`
	Load         int      `expr:"load" json:"load"`
	Capacity     int      `expr:"capacity" json:"capacity"`
	Dormant      bool     `expr:"dormant" json:"dormant"`
	// Age is how long ago the session was created; Idle, how long ago it
	// was last active.
	Age  time.Duration `expr:"age" json:"age"`
	Idle time.Duration `expr:"idle" json:"idle"`
}

// Task is a task.
type Task struct {
	ID           string            `expr:"id" json:"id"`
	Name         string            `expr:"name" json:"name"`
	Agent        string            `expr:"agent" json:"agent"`
	Prompt       string            `expr:"prompt" json:"prompt"`
	Files        []string          `expr:"files" json:"files"`
	Directories  []string          `expr:"directories" json:"directories"`
	Technologies []string          `expr:"technologies" json:"technologies"`
	Attempt      int               `expr:"attempt" json:"attempt"`
	Metadata     map[string]string `expr:"metadata" json:"metadata"`
}

// Run is the run a task belongs to; zero for a task submitted alone.
type Run struct {
	ID       string         `expr:"id" json:"id"`
	Pipeline string         `expr:"pipeline" json:"pipeline"`
	Stage    string         `expr:"stage" json:"stage"`
	Cost     float64        `expr:"cost" json:"cost"`
	Budget   float64        `expr:"budget" json:"budget"`
	State    map[string]any `expr:"state" json:"state"`
}

// Result is a task's result.
type Result struct {
	Output  string             `expr:"output" json:"output"`
	Metrics map[string]float64 `expr:"metrics" json:"metrics"`
	Cost    float64            `expr:"cost" json:"cost"`
}

// fieldNames lists an environment's top-level names.
func fieldNames(env any) []string {
	t := reflect.TypeOf(env)
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		// Fields a condition cannot name (unexported state) have no tag.
		if name := t.Field(i).Tag.Get("expr"); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// options are the compile options every condition shares: the helpers,
// and no builtin with a side effect. Paths and patterns are read under
// r's policy (case, home).
func options(r *Resolver) []expr.Option {
	fold := func(s string) string {
		if r.fold {
			return foldCase(s)
		}
		return s
	}
	// name is a path argument as the patterns read it: clean, folded
	// under the policy.
	name := func(s string) string {
		if plain(s, r.fold) {
			return s
		}
		return fold(cleanPath(s))
	}
	opts := []expr.Option{
		expr.DisableBuiltin("now"),
		expr.Patch(envPatcher{}),
		expr.Function("glob", func(args ...any) (any, error) {
			name, src := name(args[0].(string)), args[1].(string)
			p, err := r.globPattern(src, false)
			if err == nil && path.IsAbs(name) && !isAnchored(src) {
				// The paths guards see are absolute: a relative
				// pattern matches at any depth.
				p, err = r.pattern(src, false)
			}
			if err != nil {
				return false, fmt.Errorf("glob pattern %q: %w", src, err)
			}
			return p.match(name), nil
		}, new(func(path, pattern string) bool)),
		expr.Function("under", func(args ...any) (any, error) {
			p, d := name(args[0].(string)), fold(path.Clean(r.expandHome(args[1].(string))))
			if path.IsAbs(p) && !path.IsAbs(d) && d != "." {
				// A relative directory, for an absolute path: at any
				// depth.
				return strings.HasSuffix(p, "/"+d) || strings.Contains(p, "/"+d+"/"), nil
			}
			return p == d || d == "." || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/"), nil
		}, new(func(path, dir string) bool)),
		expr.Function("ext", func(args ...any) (any, error) { return path.Ext(args[0].(string)), nil }, new(func(string) string)),
		expr.Function("base", func(args ...any) (any, error) { return path.Base(args[0].(string)), nil }, new(func(string) string)),
		expr.Function("dir", func(args ...any) (any, error) { return path.Dir(args[0].(string)), nil }, new(func(string) string)),
		expr.Function("dates", func(args ...any) (any, error) {
			from, to, err := parseDates(args[0], args[1])
			if err != nil {
				return nil, err
			}
			if n := int(to.Sub(from).Hours()/24) + 1; n > 3660 {
				return nil, fmt.Errorf("dates(%s, %s) spans %d days, more than ten years", args[0], args[1], n)
			}
			var out []any
			for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
				out = append(out, d.Format(time.DateOnly))
			}
			return out, nil
		}, new(func(from, to any) []any)),
		expr.Function("days_between", func(args ...any) (any, error) {
			from, to, err := parseDates(args[0], args[1])
			if err != nil {
				return nil, err
			}
			return int(to.Sub(from).Hours() / 24), nil
		}, new(func(from, to any) int)),
	}
	for i := range pathHelpers {
		h := &pathHelpers[i]
		opts = append(opts, expr.Function(h.name, func(args ...any) (any, error) {
			e, ok := args[0].(ToolUseEnv)
			if !ok {
				return true, fmt.Errorf("%s is for pre_tool_use conditions", h.name)
			}
			if !e.read {
				// Never on a path prepare took: fail closed rather
				// than judge paths that are not canonical.
				return true, fmt.Errorf("%s: the call's paths were not read", h.name)
			}
			return h.eval(r, &e, args[1].(string))
		}, new(func(env any, pattern string) bool)))
	}
	return opts
}

// isAnchored reports whether a pattern says where it starts: at the
// root, at home, or at any depth already.
func isAnchored(src string) bool {
	return path.IsAbs(src) || src == "~" || strings.HasPrefix(src, "~/") || strings.HasPrefix(src, "**")
}

// plain reports whether p needs no work to be read as a pattern reads
// paths: it is clean (path.Clean would return it as it is; "" counts,
// as cleanPath keeps it) and, under fold, has nothing to lower-case.
// The paths Set.ToolUse reads are clean already, and most are lower
// case: one scan instead of path.Clean's and foldCase's. It may say no
// to a path that needs nothing (a relative "../x"); never yes to one
// that does.
func plain(p string, fold bool) bool {
	switch {
	case p == "" || p == "/" || p == ".":
		return true
	case p[len(p)-1] == '/':
		return false
	}
	elem := 0
	if p[0] == '/' {
		elem = 1
	}
	for i := elem; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			if c := p[i]; fold && (c >= utf8.RuneSelf || 'A' <= c && c <= 'Z') {
				return false
			}
			continue
		}
		// An element ends at i: not empty, not "." or "..".
		switch i - elem {
		case 0:
			return false
		case 1:
			if p[elem] == '.' {
				return false
			}
		case 2:
			if p[elem] == '.' && p[elem+1] == '.' {
				return false
			}
		}
		elem = i + 1
	}
	return true
}

// cleanPath cleans p as path.Clean does, keeping "" empty; a path
// clean already costs one scan.
func cleanPath(p string) string {
	if plain(p, false) {
		return p
	}
	return path.Clean(p)
}

// parseDates reads two YYYY-MM-DD dates, as strings from a state document.
func parseDates(a, b any) (time.Time, time.Time, error) {
	var out [2]time.Time
	for i, v := range []any{a, b} {
		s, ok := v.(string)
		if !ok {
			return out[0], out[1], fmt.Errorf("want a date as \"YYYY-MM-DD\", got %v (%T)", v, v)
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return out[0], out[1], fmt.Errorf("want a date as \"YYYY-MM-DD\", got %q", s)
		}
		out[i] = t
	}
	return out[0], out[1], nil
}
