package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// What a tool call names. Each tool is read for what it is known to
// do (the table in the package documentation); a tool hearth does not
// know is read by its kind, when its agent says it, and for the input
// fields of PathPolicy.Fields and DefaultPathFields. Every path becomes
// a Target: where it is (absolute, clean), where it leads (through
// symbolic links), what the call does there, and, for a listing or a
// search, which names below it the call reaches.

// Access is what a tool call does at a path. It is a plain string, so
// that conditions compare it with one: .access == "read".
type Access = string

// Accesses.
const (
	// AccessRead reads a file's content.
	AccessRead Access = "read"
	// AccessWrite writes (creates, edits) a file.
	AccessWrite Access = "write"
	// AccessList lists names: a directory's entries, or the paths a
	// pattern matches.
	AccessList Access = "list"
	// AccessSearch reads the content of a file, or of the files below a
	// directory that its filter admits.
	AccessSearch Access = "search"
	// AccessAny may read or write: a word of a shell command, a field
	// of a tool hearth does not know.
	AccessAny Access = "any"
)

// Tool kinds an agent may declare for its tools (sdk.ToolCall.Kind).
const (
	KindRead   = "read"
	KindWrite  = "write"
	KindList   = "list"
	KindSearch = "search"
	KindExec   = "exec"
	KindOther  = "other"
)

// Call is a tool call an agent is about to make, as the host hears of
// it: what ToolUse needs to read its paths.
type Call struct {
	Tool string
	// Kind is what the agent says the tool does (KindRead, ...); empty
	// when it does not say.
	Kind string
	// Paths are the paths the agent says the call touches.
	Paths []string
	// Input is the tool's input, when decoded; RawInput the same as
	// JSON. RawInput is read when set: it keeps keys a decoded map
	// loses (one of two duplicates, say).
	Input    map[string]any
	RawInput json.RawMessage
	// Cwd is the directory the call's relative paths are relative to:
	// the agent's workspace, or the cwd a Claude Code hook reports.
	// Empty means "/".
	Cwd string
}

// Target is one path a tool call names, as a condition sees it (an
// element of targets).
type Target struct {
	// Path is the path as given, absolute and clean; Real, where it
	// leads through symbolic links (Path when no link is on the way).
	Path string `expr:"path" json:"path"`
	Real string `expr:"real" json:"real"`
	// Dir: Real is an existing directory.
	Dir    bool   `expr:"dir" json:"dir,omitempty"`
	Access Access `expr:"access" json:"access"`
	// Filter is, for a listing or a search, the names below Path the
	// call reaches, as a pattern relative to it ("**" for all, "*" for
	// a directory's entries); empty for Path alone.
	Filter string `expr:"filter" json:"filter,omitempty"`
	// From is where in the call the path came from: an input field
	// ("file_path", "command"), or "paths" for the agent's own list.
	From string `expr:"from" json:"from,omitempty"`

	// folded forms, and the compiled patterns of what a listing or a
	// search reaches below Path and Real.
	fpath, freal string
	reach        []*pattern
}

// rawTarget is a path as the call names it, before it is made
// canonical.
type rawTarget struct {
	p       string
	access  Access
	filters []string
	from    string
	// tilde: an input field may hold "~/x", which the tool may or may
	// not expand: both are read.
	tilde bool
	// cwds, for a shell word: the directories it may be relative to.
	cwds []string
	// hidden: the tool reaches hidden names below the path whatever the
	// PathPolicy says (Claude Code's Grep and Glob: see
	// PathPolicy.SearchesSkipHidden).
	hidden bool
}

// extraction is what reading a call found. Its slices are reused from
// call to call (extractions): what a call's targets keep are strings.
type extraction struct {
	raws   []rawTarget
	unread []string
	fields []field
}

var extractions = sync.Pool{New: func() any { return new(extraction) }}

// getExtraction returns an empty extraction; putExtraction takes it back
// once its targets are made.
func getExtraction() *extraction { return extractions.Get().(*extraction) }

func putExtraction(x *extraction) {
	if cap(x.raws) > 64 || cap(x.fields) > 64 {
		return
	}
	clear(x.raws[:cap(x.raws)])
	clear(x.fields[:cap(x.fields)])
	x.raws, x.unread, x.fields = x.raws[:0], nil, x.fields[:0]
	extractions.Put(x)
}

func (x *extraction) add(t rawTarget) {
	if t.p == "" {
		return
	}
	x.raws = append(x.raws, t)
}

func (x *extraction) failf(format string, args ...any) {
	x.unread = append(x.unread, fmt.Sprintf(format, args...))
}

// input reads fields of a call's input: every value under a key equal
// to a name when case is folded, so that duplicate keys and keys that
// differ by case (which JSON decoders settle differently) all count.
// Strings count, and the strings of a list.
type input struct {
	raw json.RawMessage
	m   map[string]any
	// fields holds what was read, in order: the strings under every key,
	// at any depth (nested objects, objects in lists).
	fields []field
	done   bool
	depth  int
	// tooDeep: objects nested deeper than maxInputDepth were not read.
	tooDeep bool
}

// maxInputDepth bounds how deep an input's objects are read; what lies
// deeper is not read, and the call says so.
const maxInputDepth = 32

type field struct {
	key    string
	values []string
	list   bool
	// one holds a single value without a slice of its own.
	one [1]string
}

// get returns the strings under name (lower case). The slice is the
// input's own when one key holds them all: callers do not change it.
func (in *input) get(name string) []string {
	if !in.done {
		in.read()
	}
	var out []string
	shared := false
	for _, f := range in.fields {
		if !strings.EqualFold(f.key, name) {
			continue
		}
		switch {
		case out == nil:
			out, shared = f.values, true
		case shared:
			out = append(slices.Clip(out), f.values...)
			shared = false
		default:
			out = append(out, f.values...)
		}
	}
	return out
}

func (in *input) read() {
	in.done = true
	switch {
	case len(in.raw) > 0 && json.Valid(in.raw):
		scanObject(in.raw, in.putRaw)
	case len(in.raw) > 0:
		// Broken JSON: what the decoder reads before the break.
		d := json.NewDecoder(bytes.NewReader(in.raw))
		if t, err := d.Token(); err != nil || t != json.Delim('{') {
			return
		}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return
			}
			key, _ := k.(string)
			var v any
			if err := d.Decode(&v); err != nil {
				return
			}
			in.put(key, v)
		}
	default:
		for k, v := range in.m {
			in.put(k, v)
		}
	}
}

func (in *input) put(key string, v any) {
	switch t := v.(type) {
	case string:
		in.fields = append(in.fields, field{key: key, values: []string{t}})
	case []any:
		f := field{key: key, list: true}
		for _, e := range t {
			switch e := e.(type) {
			case string:
				f.values = append(f.values, e)
			case map[string]any, []any:
				in.nested(key, e)
			}
		}
		in.fields = append(in.fields, f)
	case []string:
		in.fields = append(in.fields, field{key: key, values: t, list: true})
	case map[string]any:
		in.nested(key, t)
	}
}

// nested reads an object (or a list) inside the input: its keys count
// as the top level's do (an MCP tool's {"options": {"path": ...}}).
func (in *input) nested(key string, v any) {
	if in.depth >= maxInputDepth {
		in.tooDeep = true
		return
	}
	in.depth++
	defer func() { in.depth-- }()
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			in.put(k, x)
		}
	case []any:
		in.put(key, t)
	}
}

// putRaw records a value of valid JSON.
func (in *input) putRaw(key string, v []byte) {
	switch v[0] {
	case '"':
		// The value lives in the field itself: one allocation less per
		// call. (A field moved by a later append keeps its values
		// readable where they were.)
		in.fields = append(in.fields, field{key: key})
		f := &in.fields[len(in.fields)-1]
		f.one[0] = unquote(v)
		f.values = f.one[:]
	case '[':
		var list []any
		if json.Unmarshal(v, &list) == nil {
			in.put(key, list)
		}
	case '{':
		if in.depth >= maxInputDepth {
			in.tooDeep = true
			return
		}
		in.depth++
		scanObject(v, in.putRaw)
		in.depth--
	}
}

// unquote decodes a JSON string token, as encoding/json does.
func unquote(tok []byte) string {
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return s
}

// scanObject calls fn with each key and raw value of the top level of b,
// a valid JSON document; it does nothing when b is not an object.
func scanObject(b []byte, fn func(key string, value []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := stringEnd(b, i)
		key := unquote(b[i:end])
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // the colon
		vend := valueEnd(b, i)
		fn(key, b[i:vend])
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string token starting at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index just past the value starting at i.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[j])) {
		j++
	}
	return j
}

// extract reads what c names into x.
func (r *Resolver) extract(x *extraction, c Call, cwd string) {
	if x.raws == nil {
		x.raws = make([]rawTarget, 0, 2)
	}
	first := len(x.raws)
	in := &input{raw: c.RawInput, m: c.Input, fields: x.fields[:0]}
	defer func() { x.fields = in.fields }()
	field := func(name string, a Access, filters ...string) {
		for _, v := range in.get(name) {
			x.add(rawTarget{p: v, access: a, filters: filters, from: name, tilde: true})
		}
	}
	dirField := func(name string, a Access, filters ...string) {
		vs := in.get(name)
		if len(vs) == 0 {
			vs = []string{cwd}
		}
		for _, v := range vs {
			x.add(rawTarget{p: v, access: a, filters: filters, from: name, tilde: true})
		}
	}
	known := true
	switch c.Tool {
	case "Read":
		field("file_path", AccessRead)
	case "NotebookRead":
		field("notebook_path", AccessRead)
	case "Write", "Edit", "MultiEdit":
		field("file_path", AccessWrite)
	case "NotebookEdit":
		field("notebook_path", AccessWrite)
	case "LS":
		dirField("path", AccessList, "*")
	case "Glob":
		r.glob(x, in, cwd)
	case "Grep":
		dirField("path", AccessSearch, grepFilters(in)...)
	case "Bash":
		r.commands(x, in, cwd)
	default:
		known = false
	}
	if !known {
		if c.Kind == KindExec {
			r.commands(x, in, cwd)
		}
		// Its fields, read for what its kind does: a listing or search
		// tool names its directory in one of them.
		names := slices.Clone(DefaultPathFields)
		for _, tf := range r.fields {
			if tf.tool.match(c.Tool) {
				names = append(names, tf.fields...)
			}
		}
		a, filters := kindAccess(c.Kind)
		for _, n := range names {
			field(strings.ToLower(n), a, filters...)
		}
		r.anyPaths(x, in, names, a, filters)
	}
	a, filters := kindAccess(c.Kind)
	if known {
		a, filters = toolAccess(c.Tool)
	}
	for _, p := range c.Paths {
		x.add(rawTarget{p: p, access: a, filters: filters, from: "paths", tilde: true})
	}
	if known {
		// Claude Code's tools reach hidden names: its Grep passes
		// --hidden to ripgrep on every call, and its Glob does unless
		// CLAUDE_CODE_GLOB_HIDDEN=false.
		for i := first; i < len(x.raws); i++ {
			x.raws[i].hidden = true
		}
	}
}

// anyPaths reads the fields of a tool hearth does not know beyond the
// names it reads as paths (names): at any depth, a value is a path when
// its key says so (it holds "path", "file", "dir", "folder" or "uri",
// as sourcePath, target_file, rootUri do) or when it reads as one: a
// file:// URI, or a string that starts with /, ~/, ./ or ../ and holds
// no line break. Objects nested too deep to read make the call unread.
func (r *Resolver) anyPaths(x *extraction, in *input, names []string, a Access, filters []string) {
	if !in.done {
		in.read()
	}
	if in.tooDeep {
		x.failf("the input nests objects more than %d deep", maxInputDepth)
	}
	for _, f := range in.fields {
		named := false
		for _, n := range names {
			if strings.EqualFold(f.key, n) {
				named = true
				break
			}
		}
		if named {
			continue
		}
		k := strings.ToLower(f.key)
		byKey := strings.Contains(k, "path") || strings.Contains(k, "file") || strings.Contains(k, "dir") ||
			strings.Contains(k, "folder") || strings.Contains(k, "uri")
		for _, v := range f.values {
			if p, ok := fileURI(v); ok {
				x.add(rawTarget{p: p, access: a, filters: filters, from: f.key})
				continue
			}
			if byKey || looksLikePath(v) {
				x.add(rawTarget{p: v, access: a, filters: filters, from: f.key, tilde: true})
			}
		}
	}
}

// fileURI returns the path of a file:// URI (file:///x, file://localhost/x,
// file:/x), percent-decoded.
func fileURI(v string) (string, bool) {
	if len(v) < 6 || !strings.EqualFold(v[:5], "file:") {
		return "", false
	}
	u, err := url.Parse(v)
	if err != nil || (u.Host != "" && !strings.EqualFold(u.Host, "localhost")) {
		// Another host's file, or not a URI: read what follows as a path
		// all the same, so that it is not missed.
		return strings.TrimPrefix(strings.TrimPrefix(v[5:], "//"), "localhost"), true
	}
	return u.Path, true
}

// looksLikePath reports whether a value reads as a path whatever its key.
func looksLikePath(v string) bool {
	if strings.ContainsAny(v, "\n\r") || len(v) > 4096 {
		return false
	}
	return strings.HasPrefix(v, "/") || v == "~" || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")
}

// kindAccess is what a tool of kind does at the paths it names.
func kindAccess(kind string) (Access, []string) {
	switch kind {
	case KindRead:
		return AccessRead, nil
	case KindWrite:
		return AccessWrite, nil
	case KindList:
		return AccessList, []string{"*"}
	case KindSearch:
		return AccessSearch, []string{"**"}
	}
	return AccessAny, nil
}

// toolAccess is what a known tool does at the paths its agent lists.
func toolAccess(tool string) (Access, []string) {
	switch tool {
	case "Read", "NotebookRead":
		return AccessRead, nil
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return AccessWrite, nil
	case "LS":
		return AccessList, []string{"*"}
	case "Glob":
		return AccessList, []string{"**"}
	case "Grep":
		return AccessSearch, []string{"**"}
	}
	return AccessAny, nil
}

// glob reads a Glob call: the pattern's literal leading directories
// join its path, and the rest is the filter of a listing there.
func (r *Resolver) glob(x *extraction, in *input, cwd string) {
	bases := in.get("path")
	if len(bases) == 0 {
		bases = []string{cwd}
	}
	pats := in.get("pattern")
	if len(pats) == 0 {
		pats = []string{"*"}
	}
	for _, b := range bases {
		for _, p := range pats {
			dir, filter := splitPattern(p)
			if dir != "" {
				if path.IsAbs(dir) || strings.HasPrefix(dir, "~") {
					b = dir
				} else {
					b = b + "/" + dir
				}
			}
			x.add(rawTarget{p: b, access: AccessList, filters: []string{filter}, from: "pattern", tilde: true})
		}
	}
}

// splitPattern splits a pattern into its leading directories without
// special characters and the rest. A rest that climbs ("..") is read as
// reaching anything below the root.
func splitPattern(p string) (dir, rest string) {
	segs := strings.Split(p, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], `*?[{\`) {
		i++
	}
	dir = strings.Join(segs[:i], "/")
	if dir == "" && strings.HasPrefix(p, "/") {
		dir = "/"
	}
	rest = strings.Join(segs[i:], "/")
	if slices.Contains(segs[i:], "..") {
		return "/", "**"
	}
	if rest == "" {
		rest = "*"
	}
	return dir, rest
}

// grepFilters are the names below its path a Grep reaches: its globs,
// read as ripgrep reads one (a glob without a slash matches a name at
// any depth), or the files of its type; everything when it has
// neither, or a glob that excludes ("!x") or a type hearth does not
// know. The glob field is split as Claude Code splits it before it
// hands the globs to ripgrep (2.1.332): at white space, and each part
// at commas unless it holds a brace ("*.go,.env" is two globs,
// "*.{go,env}" one).
func grepFilters(in *input) []string {
	var out []string
	for _, field := range in.get("glob") {
		var globs []string
		for _, part := range strings.Fields(field) {
			if strings.Contains(part, "{") && strings.Contains(part, "}") {
				globs = append(globs, part)
				continue
			}
			for _, g := range strings.Split(part, ",") {
				if g != "" {
					globs = append(globs, g)
				}
			}
		}
		if len(globs) == 0 {
			return []string{"**"}
		}
		for _, g := range globs {
			switch {
			case strings.HasPrefix(g, "!"):
				return []string{"**"}
			case strings.HasPrefix(g, "/"):
				out = append(out, strings.TrimPrefix(g, "/"), "**/"+strings.TrimPrefix(g, "/"))
			default:
				out = append(out, g, "**/"+g)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, t := range in.get("type") {
		globs, ok := ripgrepTypes[strings.TrimSpace(t)]
		if !ok {
			return []string{"**"}
		}
		for _, g := range globs {
			out = append(out, "**/"+g)
		}
	}
	if len(out) > 0 {
		return out
	}
	return []string{"**"}
}

// ripgrepTypes are the file types of ripgrep's built-in list that a
// Grep's type may name, with their globs. A type not here reaches
// every file.
var ripgrepTypes = map[string][]string{
	"c":        {"*.[chH]", "*.[chH].in", "*.cats"},
	"config":   {"*.cfg", "*.conf", "*.config", "*.ini"},
	"cpp":      {"*.[ChH]", "*.cc", "*.[ch]pp", "*.[ch]xx", "*.hh", "*.inl", "*.[ChH].in", "*.cc.in", "*.[ch]pp.in", "*.[ch]xx.in", "*.hh.in"},
	"cs":       {"*.cs"},
	"csharp":   {"*.cs"},
	"css":      {"*.css", "*.scss"},
	"go":       {"*.go"},
	"h":        {"*.h", "*.hh", "*.hpp"},
	"html":     {"*.htm", "*.html", "*.ejs"},
	"java":     {"*.java", "*.jsp", "*.jspx", "*.properties"},
	"js":       {"*.js", "*.jsx", "*.vue", "*.cjs", "*.mjs"},
	"json":     {"*.json", "composer.lock"},
	"kotlin":   {"*.kt", "*.kts"},
	"lua":      {"*.lua"},
	"markdown": {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn"},
	"md":       {"*.markdown", "*.md", "*.mdown", "*.mdwn", "*.mkd", "*.mkdn"},
	"php":      {"*.php", "*.php3", "*.php4", "*.php5", "*.php7", "*.php8", "*.pht", "*.phtml"},
	"protobuf": {"*.proto"},
	"py":       {"*.py"},
	"ruby":     {"config.ru", "Gemfile", ".irbrc", "Rakefile", "*.gemspec", "*.rb", "*.rbw"},
	"rust":     {"*.rs"},
	"scala":    {"*.scala", "*.sbt"},
	"sh": {".login", ".logout", ".profile", "profile", ".bash_login", "bash_login", ".bash_logout", "bash_logout",
		".bash_profile", "bash_profile", ".bashrc", "bashrc", "*.bashrc", ".cshrc", "*.cshrc", ".kshrc", "*.kshrc",
		".tcshrc", ".zshenv", "zshenv", ".zlogin", "zlogin", ".zlogout", "zlogout", ".zprofile", "zprofile",
		".zshrc", "zshrc", "*.bash", "*.csh", "*.ksh", "*.sh", "*.tcsh", "*.zsh"},
	"sql":   {"*.sql", "*.psql"},
	"swift": {"*.swift"},
	"toml":  {"*.toml", "Cargo.lock"},
	"ts":    {"*.ts", "*.tsx", "*.cts", "*.mts"},
	"txt":   {"*.txt"},
	"xml":   {"*.xml", "*.xml.dist", "*.dtd", "*.xsl", "*.xslt", "*.xsd", "*.xjb", "*.rng", "*.sch", "*.xhtml"},
	"yaml":  {"*.yaml", "*.yml"},
}

// commands reads the shell commands of a call: its command field, a
// string or a list of words.
func (r *Resolver) commands(x *extraction, in *input, cwd string) {
	if !in.done {
		in.read()
	}
	for _, f := range in.fields {
		if !strings.EqualFold(f.key, "command") {
			continue
		}
		if f.list {
			// A list of words: each is a word, and the list a command.
			words := make([]string, 0, len(f.values))
			for _, w := range f.values {
				x.add(rawTarget{p: w, access: AccessAny, from: "command", tilde: true})
				q, err := syntax.Quote(w, syntax.LangBash)
				if err != nil {
					q = w
				}
				words = append(words, q)
			}
			r.shell(x, strings.Join(words, " "), cwd)
			continue
		}
		for _, cmd := range f.values {
			r.shell(x, cmd, cwd)
		}
	}
}
