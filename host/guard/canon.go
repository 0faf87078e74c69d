package guard

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Canonical paths. Every path a guard sees went through a Resolver:
// made absolute (against the call's working directory: the agent's
// workspace, or the directory Claude Code reports as cwd), cleaned
// ("./", "..", "//" gone), and followed through symbolic links. The
// resolution walks the path as the kernel does, one component at a
// time, so that "link/../x" goes where the kernel would take it; the
// part that exists is resolved, and the rest, which does not exist
// yet, is cleaned on top of it. A guard's path helpers see both forms,
// the path as given and where it leads, and fire when either matches.
//
// Resolutions are cached for CacheTTL (DefaultCacheTTL, 1 s), keyed by
// the path as given: a symbolic link made or changed within that time
// may be seen late. That window is of the same kind as the one no
// pre-tool-use check can close — the tool runs after the guard has
// answered, and an agent with a shell can change the file in between —
// which is why plugins also run confined (Landlock) where the system
// allows it.

// DefaultCacheTTL is how long a symbolic link resolution is reused.
const DefaultCacheTTL = time.Second

// cacheSize bounds the resolutions kept.
const cacheSize = 4096

// maxLinks is how many symbolic links one path may go through, as the
// kernel allows (Linux: 40); past it the path cannot be opened.
const maxLinks = 40

// PathPolicy says how guards read the paths of tool calls. The zero
// value is the default.
type PathPolicy struct {
	// CaseSensitive makes path matching tell upper from lower case. By
	// default it does not, on every system: on a file system that folds
	// case (macOS and Windows by default, a Linux directory with the
	// casefold attribute, a vfat, exFAT or SMB mount) ".ENV" is ".env",
	// and a guard that told them apart would let it through; on one
	// that does not, folding only makes a guard refuse a file whose
	// name differs from a refused one by case alone. Set it where every
	// file system the agents reach tells case apart and such names
	// matter.
	CaseSensitive bool
	// Home is what ~ stands for in patterns and commands; empty means
	// the home directory of the user the host runs as.
	Home string
	// Fields names, for tools hearth does not know (MCP tools), the
	// top-level input fields that hold paths (a string, or a list of
	// strings), keyed by a pattern on the tool's name such as
	// "mcp__filesystem__*". Every tool hearth does not know is also read
	// for the fields in DefaultPathFields.
	Fields map[string][]string
	// SearchesSkipHidden takes a search or listing with no filter of
	// its own, by a tool hearth does not know (an agent's own tool of
	// kind search or list), to skip hidden files and directories below
	// its path, as ripgrep does unless told otherwise. Set it only where
	// every such tool of every agent does skip them. It never applies
	// to Claude Code's Grep and Glob, which reach hidden files: Grep
	// passes --hidden to ripgrep on every call, Glob unless
	// CLAUDE_CODE_GLOB_HIDDEN=false (read in Claude Code 2.1.332). By
	// default a guard assumes a search may read them: a guard on .env
	// then refuses every unfiltered search of a tree that may hold one.
	SearchesSkipHidden bool
	// Shell is the shell agents' commands run in: "bash" (the default;
	// sh, dash and the rest are read as bash) or "zsh", whose commands
	// are parsed as zsh, and refused as unread where they use zsh's own
	// expansions (=cmd, glob qualifiers, parameter flags), which are not
	// read.
	Shell string
	// CacheTTL bounds how long a symbolic link resolution is reused; 0
	// means DefaultCacheTTL, a negative value turns the cache off.
	CacheTTL time.Duration
	// Now is the cache's clock; nil means time.Now.
	Now func() time.Time
}

// DefaultPathFields are the input fields read as paths in the calls of
// tools hearth does not know.
var DefaultPathFields = []string{
	"path", "paths", "file", "files", "file_path", "filepath", "filename", "file_name",
	"notebook_path", "dir", "directory", "cwd", "source", "destination", "src", "dest",
}

// Resolver makes tool calls' paths canonical under a PathPolicy. Its
// methods are safe for concurrent use.
type Resolver struct {
	fold       bool
	skipHidden bool
	shellLang  string
	home       string
	fields     []toolFields
	ttl        time.Duration
	now        func() time.Time

	mu    sync.Mutex
	cache *simplelru.LRU[string, resolution]
	// The patterns conditions name, compiled: as the path helpers read
	// them, as glob() reads them, and as directories (with all below,
	// and strictly below).
	anchored, globs, under, below sync.Map
}

type toolFields struct {
	tool   *pattern
	fields []string
}

// resolution is where a path leads.
type resolution struct {
	real string
	// exists: real exists; dir: it is a directory.
	exists, dir bool
	at          time.Time
}

// NewResolver returns a Resolver for p. A tool pattern in p.Fields that
// does not compile is an error wrapping ErrPattern.
func NewResolver(p PathPolicy) (*Resolver, error) {
	r := &Resolver{fold: !p.CaseSensitive, skipHidden: p.SearchesSkipHidden, shellLang: p.Shell, home: p.Home, ttl: p.CacheTTL, now: p.Now}
	if r.home == "" {
		r.home = HomeDir()
	}
	r.home = path.Clean(filepath.ToSlash(r.home))
	if r.ttl == 0 {
		r.ttl = DefaultCacheTTL
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.ttl > 0 {
		r.cache, _ = simplelru.NewLRU[string, resolution](cacheSize, nil)
	}
	for tool, fields := range p.Fields {
		tp, err := compilePattern(tool, false)
		if err != nil {
			return nil, err
		}
		r.fields = append(r.fields, toolFields{tool: tp, fields: fields})
	}
	return r, nil
}

// HomeDir is the home directory of the user the process runs as: the
// user database's, else $HOME, else "/".
func HomeDir() string {
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

var defaultResolver = sync.OnceValue(func() *Resolver {
	r, _ := NewResolver(PathPolicy{})
	return r
})

// Home is what ~ stands for.
func (r *Resolver) Home() string { return r.home }

// CaseSensitive reports whether matching tells case apart.
func (r *Resolver) CaseSensitive() bool { return !r.fold }

// expandHome replaces a leading ~ (alone or before a slash) with the home
// directory.
func (r *Resolver) expandHome(p string) string {
	if p == "~" {
		return r.home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return r.home + "/" + rest
	}
	return p
}

// join makes p absolute against cwd, without cleaning it: the kernel
// reads ".." after a symbolic link from where the link led.
func join(cwd, p string) string {
	if path.IsAbs(p) {
		return p
	}
	return cwd + "/" + p
}

// absDir makes a working directory absolute and clean; empty means "/".
func absDir(cwd string) string {
	if cwd == "" {
		return "/"
	}
	cwd = filepath.ToSlash(cwd)
	if !path.IsAbs(cwd) {
		if a, err := filepath.Abs(cwd); err == nil {
			cwd = filepath.ToSlash(a)
		} else {
			cwd = "/" + cwd
		}
	}
	return cleanPath(cwd)
}

// resolve returns where the absolute path p leads: each component that
// exists followed through symbolic links, and the rest cleaned on top.
func (r *Resolver) resolve(p string) resolution {
	if r.cache != nil {
		now := r.now()
		r.mu.Lock()
		res, ok := r.cache.Get(p)
		r.mu.Unlock()
		if ok && now.Sub(res.at) < r.ttl {
			return res
		}
		res = walk(p)
		res.at = now
		r.mu.Lock()
		r.cache.Add(p, res)
		r.mu.Unlock()
		return res
	}
	return walk(p)
}

// walk resolves p through the file system. It never fails: a component
// that cannot be looked at (missing, not a directory, not permitted, a
// loop) ends the resolution, and what follows is taken as written.
func walk(p string) resolution {
	rest := p
	dest := "/"
	links := 0
	missing := false
	isDir := true
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			dest = path.Dir(dest)
			continue
		}
		next := path.Join(dest, c)
		if missing {
			dest = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			missing, isDir, dest = true, false, next
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			dest, isDir = next, fi.IsDir()
			continue
		}
		links++
		target, err := os.Readlink(next)
		if err != nil || links > maxLinks {
			missing, isDir, dest = true, false, next
			continue
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) {
			dest = "/"
		}
		if rest == "" {
			rest = target
		} else {
			rest = target + "/" + rest
		}
	}
	return resolution{real: dest, exists: !missing, dir: isDir && !missing}
}

// canonical returns p as given, made absolute against cwd and cleaned,
// and where it leads.
func (r *Resolver) canonical(p, cwd string) (given string, res resolution) {
	abs := join(cwd, filepath.ToSlash(p))
	return cleanPath(abs), r.resolve(abs)
}

// pattern compiles a pattern a path helper names: ~ expanded, and a
// relative pattern read at any depth, as "**/" before it. With keep,
// the compiled pattern is kept for the next call: conditions' constant
// patterns are kept when they are compiled, and patterns made at run
// time (from a tool's input, say) are not, so that what is kept stays
// bounded by the config.
func (r *Resolver) pattern(src string, keep bool) (*pattern, error) {
	return r.compiled(&r.anchored, src, keep, func() (*pattern, error) {
		// Errors point into the pattern as written.
		if _, err := compilePattern(src, r.fold); err != nil {
			return nil, err
		}
		return compilePattern(r.anchor(src), r.fold)
	})
}

// globPattern compiles glob()'s pattern: ~ expanded, read as written.
func (r *Resolver) globPattern(src string, keep bool) (*pattern, error) {
	return r.compiled(&r.globs, src, keep, func() (*pattern, error) {
		if src == "~" {
			src = escapeGlob(r.home)
		} else if rest, ok := strings.CutPrefix(src, "~/"); ok {
			src = escapeGlob(r.home) + "/" + rest
		}
		return compilePattern(src, r.fold)
	})
}

func (r *Resolver) compiled(cache *sync.Map, key string, keep bool, compile func() (*pattern, error)) (*pattern, error) {
	if p, ok := cache.Load(key); ok {
		return p.(*pattern), nil
	}
	p, err := compile()
	if err != nil {
		return nil, err
	}
	if keep {
		cache.Store(key, p)
	}
	return p, nil
}

// anchor makes a condition's pattern absolute: "~/x" is under the home
// directory, and a pattern that is neither absolute nor starts with **
// matches at any depth.
func (r *Resolver) anchor(src string) string {
	if src == "~" {
		src = escapeGlob(r.home)
	} else if rest, ok := strings.CutPrefix(src, "~/"); ok {
		src = escapeGlob(r.home) + "/" + rest
	}
	if path.IsAbs(src) || strings.HasPrefix(src, "**") {
		return src
	}
	return "**/" + strings.TrimPrefix(src, "./")
}

// underPattern is the pattern of dir and everything below it; with
// strict, only what is below it.
func (r *Resolver) underPattern(dir string, strict, keep bool) (*pattern, error) {
	cache := &r.under
	if strict {
		cache = &r.below
	}
	return r.compiled(cache, dir, keep, func() (*pattern, error) { return r.compileUnder(dir, strict) })
}

func (r *Resolver) compileUnder(dir string, strict bool) (*pattern, error) {
	if _, err := compilePattern(dir, r.fold); err != nil {
		return nil, err
	}
	d := strings.TrimSuffix(r.anchor(dir), "/")
	if d == "" {
		d = "/"
	}
	if d == "/" {
		d = ""
	}
	// Below d: a slash and at least a name, which a clean path has.
	src := d + "/**"
	if strict {
		src = d + "/*/**"
	}
	return compilePattern(src, r.fold)
}

// escapeGlob escapes the characters a pattern reads specially.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]{},\`) {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{},\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// errUnread is wrapped by the reasons a call could not be read whole.
var errUnread = errors.New("could not read every path of the tool call")
