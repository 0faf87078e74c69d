package guard

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// maxTargets bounds the targets of one call; a call that names more is
// not read whole.
const maxTargets = 1024

// read reads the paths of c: its targets, made canonical, and why part
// of it could not be read (nil when all of it was).
func (r *Resolver) read(c Call) ([]Target, []string) {
	cwd := absDir(c.Cwd)
	x := getExtraction()
	defer putExtraction(x)
	r.extract(x, c, cwd)
	out := make([]Target, 0, len(x.raws))
	var seen map[targetKey]bool // past a few targets
	add := func(t Target) bool {
		k := targetKey{t.Path, t.Real, t.Access, t.Filter}
		if seen == nil && len(out) < 16 {
			for i := range out {
				if (targetKey{out[i].Path, out[i].Real, out[i].Access, out[i].Filter}) == k {
					return true
				}
			}
		} else {
			if seen == nil {
				seen = make(map[targetKey]bool, 2*len(out))
				for i := range out {
					seen[targetKey{out[i].Path, out[i].Real, out[i].Access, out[i].Filter}] = true
				}
			}
			if seen[k] {
				return true
			}
			seen[k] = true
		}
		if len(out) >= maxTargets {
			x.failf("the call names more than %d paths", maxTargets)
			return false
		}
		out = append(out, t)
		return true
	}
	for _, raw := range x.raws {
		home := raw.tilde && (raw.p == "~" || strings.HasPrefix(raw.p, "~/"))
		for variant := range 2 {
			v := raw.p
			if variant == 1 {
				if !home {
					break
				}
				v = r.expandHome(raw.p)
			}
			cwds := raw.cwds
			if len(cwds) == 0 {
				one := [1]string{cwd}
				cwds = one[:]
			}
			for i, dir := range cwds {
				if i > 0 && path.IsAbs(v) {
					break
				}
				if !r.targets(v, dir, raw, add) {
					return out, x.unread
				}
			}
		}
	}
	for _, t := range out {
		if p := agentRelative(t.Path, t.Real); p != "" {
			x.failf("%s is resolved in the agent's own process (its /proc/self, its descriptors), not in hearth's", p)
			break
		}
	}
	return out, x.unread
}

// agentRelative returns the first of paths that means something
// different in the agent's process than in hearth's: /proc/self,
// /proc/thread-self, /proc/PID and /dev/fd (and /dev/stdin, which lead
// there), "" when none does. hearth would resolve them as its own: its
// working directory, its descriptors, its root.
func agentRelative(paths ...string) string {
	for _, p := range paths {
		switch {
		case p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/"),
			p == "/dev/stdin" || p == "/dev/stdout" || p == "/dev/stderr":
			return p
		case strings.HasPrefix(p, "/proc/"):
			first, _, _ := strings.Cut(strings.TrimPrefix(p, "/proc/"), "/")
			if first == "self" || first == "thread-self" || first != "" && strings.Trim(first, "0123456789") == "" {
				return p
			}
		}
	}
	return ""
}

type targetKey struct{ path, real, access, filter string }

// targets makes one path of a call canonical. For a listing or a search
// whose filter names one entry (a Grep with glob "link-env"), the
// entry is a target too, resolved: a symbolic link there leads where
// the tool may follow it. (Links deeper below a searched directory are
// not followed; see the package documentation.)
func (r *Resolver) targets(p, cwd string, raw rawTarget, emit func(Target) bool) bool {
	t := r.target(p, cwd, raw)
	if !emit(t) {
		return false
	}
	for _, f := range raw.filters {
		name := strings.TrimPrefix(f, "**/")
		if name == "" || strings.ContainsAny(name, `*?[{\`) {
			continue
		}
		for _, base := range []string{t.Path, t.Real} {
			er := rawTarget{access: entryAccess(raw.access), from: raw.from}
			if r.resolve(base + "/" + name).dir {
				er.access, er.filters = raw.access, []string{"**"}
			}
			if entry := r.target(base+"/"+name, "/", er); entry.Real != entry.Path && !emit(entry) {
				return false
			}
		}
	}
	return true
}

// entryAccess is what a listing or search does to an entry it reaches.
func entryAccess(a Access) Access {
	if a == AccessSearch {
		return AccessRead
	}
	return a
}

// target makes one path of a call canonical.
func (r *Resolver) target(p, cwd string, raw rawTarget) Target {
	given, res := r.canonical(p, cwd)
	t := Target{Path: given, Real: res.real, Dir: res.dir, Access: raw.access, From: raw.from}
	t.Filter = strings.Join(raw.filters, " ")
	t.fpath, t.freal = t.Path, t.Real
	if r.fold {
		t.fpath, t.freal = foldCase(t.Path), t.fpath
		if t.Real != t.Path {
			t.freal = foldCase(t.Real)
		}
	}
	for _, base := range []string{t.Path, t.Real} {
		if base == t.Real && t.Real == t.Path && len(t.reach) > 0 {
			break
		}
		for _, f := range raw.filters {
			if f == "**" && r.skipHidden && !raw.hidden && (raw.access == AccessSearch || raw.access == AccessList) {
				t.reach = append(t.reach, compileVisibleBelow(strings.TrimSuffix(base, "/"), r.fold))
				continue
			}
			b := escapeGlob(base)
			if b == "/" {
				b = ""
			}
			rp, err := compilePattern(b+"/"+f, r.fold)
			if err != nil {
				// A filter that does not compile narrows nothing.
				rp, _ = compilePattern(b+"/**", r.fold)
			}
			t.reach = append(t.reach, rp)
		}
	}
	return t
}

// Named returns the paths a call names as it names them, for a
// session's fingerprint rather than a guard: absolute and clean, not
// followed through symbolic links, a shell command's words left out.
// Dir is set for a directory: what a listing lists, and a search's path
// when the file system says it is one (or, for a path that does not
// exist, when its name has no extension).
func Named(c Call) []Target {
	r := defaultResolver()
	cwd := absDir(c.Cwd)
	if c.Tool == "Bash" || c.Kind == KindExec {
		c.RawInput, c.Input = nil, nil
	}
	var out []Target
	var x extraction
	r.extract(&x, c, cwd)
	for _, raw := range x.raws {
		if raw.from == "command" {
			continue
		}
		p := path.Clean(join(cwd, raw.p))
		t := Target{Path: p, Real: p, Access: raw.access, From: raw.from}
		switch raw.access {
		case AccessList:
			t.Dir = true
		case AccessSearch:
			// What does not exist (yet, or here) is taken for a
			// directory unless its name has an extension.
			res := r.resolve(p)
			t.Dir = res.dir || (!res.exists && path.Ext(p) == "")
		}
		out = append(out, t)
	}
	return out
}

// fill reads the paths of e's call, unless they were read already.
func (r *Resolver) fill(e *ToolUseEnv) {
	if e.read {
		return
	}
	targets, unread := r.read(Call{Tool: e.Tool, Kind: e.Kind, Paths: e.Paths, Input: e.Input, Cwd: e.Cwd})
	r.setTargets(e, targets, unread)
}

func (r *Resolver) setTargets(e *ToolUseEnv, targets []Target, unread []string) {
	e.read = true
	e.Targets = targets
	e.Unread = strings.Join(unread, "; ")
	e.Paths = make([]string, 0, 2*len(targets))
	var seen map[string]bool // past a few paths
	for _, t := range targets {
		for _, p := range [2]string{t.Path, t.Real} {
			if seen == nil && len(e.Paths) < 16 {
				if slices.Contains(e.Paths, p) {
					continue
				}
			} else {
				if seen == nil {
					seen = make(map[string]bool, 2*len(targets))
					for _, q := range e.Paths {
						seen[q] = true
					}
				}
				if seen[p] {
					continue
				}
				seen[p] = true
			}
			e.Paths = append(e.Paths, p)
		}
	}
	if e.Cwd == "" {
		e.Cwd = "/"
	}
}

// ToolUse reads c's paths and returns the start of a pre_tool_use
// environment: tool, kind, input, cwd, paths (canonical) and targets.
// The caller adds the session, task, run and time.
func (s *Set) ToolUse(c Call) ToolUseEnv {
	r := s.resolver()
	e := ToolUseEnv{Tool: c.Tool, Kind: c.Kind, Input: c.Input, Cwd: absDir(c.Cwd)}
	targets, unread := r.read(c)
	r.setTargets(&e, targets, unread)
	return e
}

// ToolUseFor is ToolUse for the guards that apply to m: when none of
// them reads the call's paths (paths, targets, unread or a path
// helper), they are not read at all.
func (s *Set) ToolUseFor(m Match, c Call) ToolUseEnv {
	for _, name := range pathNames {
		if s.Uses(PreToolUse, m, name) {
			return s.ToolUse(c)
		}
	}
	return ToolUseEnv{Tool: c.Tool, Kind: c.Kind, Input: c.Input, Cwd: absDir(c.Cwd), read: true}
}

// pathNames are the names a condition reads a call's paths through.
var pathNames = func() []string {
	names := []string{"paths", "targets", "unread"}
	for _, h := range pathHelpers {
		names = append(names, h.name)
	}
	return names
}()

// Absolute makes relative paths (such as a session fingerprint's, which
// are relative to its agent's workspace) absolute against dir and
// clean, as the paths of a tool call are: a condition compares them
// with paths as they are. An empty dir leaves them as they are.
func Absolute(dir string, paths []string) []string {
	if dir == "" {
		return paths
	}
	dir = absDir(dir)
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = path.Clean(join(dir, p))
	}
	return out
}

// resolver is the Resolver the set's guards were compiled with.
func (s *Set) resolver() *Resolver {
	if s != nil {
		for _, r := range s.all {
			if r.resolver != nil {
				return r.resolver
			}
		}
	}
	return defaultResolver()
}

// accessSet says which accesses a helper counts.
type accessSet uint8

const (
	countRead accessSet = 1 << iota
	countWrite
	countList
	countSearch
	countAny
)

func (a accessSet) has(x Access) bool {
	switch x {
	case AccessRead:
		return a&countRead != 0
	case AccessWrite:
		return a&countWrite != 0
	case AccessList:
		return a&countList != 0
	case AccessSearch:
		return a&countSearch != 0
	}
	return a&countAny != 0
}

// pathHelper is a helper of pre_tool_use conditions that answers about
// the call's targets.
type pathHelper struct {
	name   string
	counts accessSet
	// under: the argument is a directory, which counts with everything
	// below it.
	under bool
	// names: only the paths the call names count, not what a listing or
	// search reaches below them.
	names bool
	doc   string
}

var pathHelpers = []pathHelper{
	{name: "touches", counts: countRead | countWrite | countList | countSearch | countAny,
		doc: "the call may read, write, list or search a path matching the pattern"},
	{name: "reads", counts: countRead | countSearch | countAny,
		doc: "the call may read the content of a path matching the pattern"},
	{name: "writes", counts: countWrite | countAny,
		doc: "the call may write a path matching the pattern"},
	{name: "names", counts: countRead | countWrite | countList | countSearch | countAny, names: true,
		doc: "the call names a path matching the pattern (not what a search or listing finds below it)"},
	{name: "touches_under", counts: countRead | countWrite | countList | countSearch | countAny, under: true,
		doc: "the call may read, write, list or search the directory or anything below it"},
	{name: "reads_under", counts: countRead | countSearch | countAny, under: true,
		doc: "the call may read the content of something in the directory or below it"},
	{name: "writes_under", counts: countWrite | countAny, under: true,
		doc: "the call may write in the directory or below it"},
}

func helperNamed(name string) *pathHelper {
	for i := range pathHelpers {
		if pathHelpers[i].name == name {
			return &pathHelpers[i]
		}
	}
	return nil
}

// eval answers the helper for the call in e, with the pattern (or
// directory) arg.
func (h *pathHelper) eval(r *Resolver, e *ToolUseEnv, arg string) (bool, error) {
	if e.Unread != "" {
		return true, fmt.Errorf("%s: %w (%s); a guard on paths refuses what it cannot read", h.name, errUnread, strings.ReplaceAll(e.Unread, unknown, "?"))
	}
	var p, strict *pattern
	var err error
	if h.under {
		if p, err = r.underPattern(arg, false, false); err == nil {
			strict, err = r.underPattern(arg, true, false)
		}
	} else {
		p, err = r.pattern(arg, false)
	}
	if err != nil {
		return true, fmt.Errorf("%s(%q): %w", h.name, arg, err)
	}
	for i := range e.Targets {
		t := &e.Targets[i]
		if !h.counts.has(t.Access) {
			continue
		}
		fpath, freal := t.fpath, t.freal
		if fpath == "" && t.Path != "" {
			// A target that did not come from a Resolver (built by
			// hand): fold it now.
			fpath, freal = t.Path, t.Real
			if r.fold {
				fpath, freal = foldCase(t.Path), foldCase(t.Real)
			}
		}
		if p.match(fpath) || p.match(freal) {
			return true, nil
		}
		if h.names || (t.Access == AccessList && !h.under) {
			// A listing shows names, it does not open files: it
			// touches the directory it lists, and what it shows below
			// counts for the _under helpers alone.
			continue
		}
		// What a listing or a search reaches below the path. A listing
		// of a directory's parent shows the directory's name, not what
		// is in it.
		below := p
		if t.Access == AccessList {
			below = strict
		}
		for _, rp := range t.reach {
			if overlap(below, rp) {
				return true, nil
			}
		}
	}
	return false, nil
}

// checkHelpers finds the path helpers a condition calls: each takes one
// argument, and a constant one is compiled now, so that a bad pattern
// is an error at load with its place (so is glob's). The path helpers
// are for pre_tool_use conditions only.
func checkHelpers(s Spec, r *Resolver) *CompileError {
	tree, err := parser.Parse(s.Condition)
	if err != nil {
		// expr.Compile reports it.
		return nil
	}
	var ce *CompileError
	ast.Walk(&tree.Node, visitor(func(n *ast.Node) {
		call, ok := (*n).(*ast.CallNode)
		if !ok || ce != nil {
			return
		}
		id, ok := call.Callee.(*ast.IdentifierNode)
		if !ok {
			return
		}
		if id.Value == "glob" && len(call.Arguments) == 2 {
			if str, ok := call.Arguments[1].(*ast.StringNode); ok {
				_, err := r.globPattern(str.Value, true)
				if err == nil && !isAnchored(str.Value) {
					_, err = r.pattern(str.Value, true)
				}
				if err != nil {
					ce = &CompileError{Guard: s.Name, Offset: str.Location().From, Msg: fmt.Sprintf("glob pattern: %v", err)}
				}
			}
			return
		}
		h := helperNamed(id.Value)
		if h == nil {
			return
		}
		at := call.Location().From
		switch {
		case s.Hook != PreToolUse:
			ce = &CompileError{Guard: s.Name, Offset: at, Msg: fmt.Sprintf("%s is for pre_tool_use conditions, which see a tool call's paths", h.name)}
		case len(call.Arguments) != 1:
			arg := "a pattern such as \"**/.env\""
			if h.under {
				arg = "a directory such as \"~/.ssh\""
			}
			ce = &CompileError{Guard: s.Name, Offset: at, Msg: fmt.Sprintf("%s takes one argument, %s; got %d", h.name, arg, len(call.Arguments))}
		default:
			str, ok := call.Arguments[0].(*ast.StringNode)
			if !ok {
				return
			}
			var err error
			if h.under {
				_, err = r.underPattern(str.Value, false, true)
				if err == nil {
					_, err = r.underPattern(str.Value, true, true)
				}
			} else {
				_, err = r.pattern(str.Value, true)
			}
			if err != nil {
				ce = &CompileError{Guard: s.Name, Offset: str.Location().From, Msg: err.Error()}
			}
		}
	}))
	return ce
}

// envPatcher passes the environment to the path helpers, as their first
// argument.
type envPatcher struct{}

func (envPatcher) Visit(n *ast.Node) {
	call, ok := (*n).(*ast.CallNode)
	if !ok {
		return
	}
	id, ok := call.Callee.(*ast.IdentifierNode)
	if !ok || helperNamed(id.Value) == nil || len(call.Arguments) != 1 {
		return
	}
	env := &ast.IdentifierNode{Value: "$env"}
	env.SetLocation(call.Location())
	call.Arguments = append([]ast.Node{env}, call.Arguments...)
}

// ToolPaths is what one tool call reads and writes, as the guards read
// it.
type ToolPaths struct {
	// Read and Write are the paths the call may read (a file's content,
	// a directory's listing, what a search reaches below it) and write:
	// absolute, clean, and also where each leads through symbolic
	// links. A path the call may read or write alike (a shell word, a
	// field of a tool hearth does not know, such as any MCP tool's) is
	// in both.
	Read, Write []string
	// Unread says what could not be read, if anything: a command that
	// does not parse, an input nested too deep, a path under /proc/self.
	// A caller that enforces paths refuses such a call, as the path
	// helpers of guards do.
	Unread []string
}

// ToolPaths reads the paths of one tool call before it runs: tool is its
// name (an MCP tool's as Claude Code names it, mcp__SERVER__TOOL), input
// its JSON input, cwd the directory its relative paths are relative to.
// It reads the call exactly as pre_tool_use guards do (the package
// documentation lists what each tool is read for): Claude Code's tools
// by what they do; a Bash command as the shell would run it; any other
// tool, an MCP tool's included, by every string in its input at any
// depth that holds a path, whatever its key: a key among
// DefaultPathFields or the PathPolicy's Fields for the tool, a key that
// says path, file, dir, folder or uri, a file:// URI, or a value that
// reads as a path (/..., ~/..., ./..., ../...).
func (r *Resolver) ToolPaths(tool string, input json.RawMessage, cwd string) ToolPaths {
	targets, unread := r.read(Call{Tool: tool, RawInput: input, Cwd: cwd})
	var out ToolPaths
	out.Unread = unread
	for _, t := range targets {
		for _, p := range []string{t.Path, t.Real} {
			if t.Access != AccessWrite && !slices.Contains(out.Read, p) {
				out.Read = append(out.Read, p)
			}
			if (t.Access == AccessWrite || t.Access == AccessAny) && !slices.Contains(out.Write, p) {
				out.Write = append(out.Write, p)
			}
		}
	}
	return out
}

// ToolPaths reads a tool call's paths as the set's guards read them
// (Resolver.ToolPaths, under the set's PathPolicy).
func (s *Set) ToolPaths(tool string, input json.RawMessage, cwd string) ToolPaths {
	return s.resolver().ToolPaths(tool, input, cwd)
}
