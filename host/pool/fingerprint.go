package pool

import (
	"path/filepath"
	"strings"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
)

// fingerprint is a session's context: the files, directories and
// technologies it touched, each a bounded set that evicts its least
// recently used entry, so a long session's memory stays flat.
type fingerprint struct {
	files, dirs, techs *lruSet
}

func newFingerprint(limits Limits) *fingerprint {
	return &fingerprint{
		files: newLRUSet(limits.MaxFiles),
		dirs:  newLRUSet(limits.MaxDirectories),
		techs: newLRUSet(limits.MaxTechnologies),
	}
}

// change is what one observation did to a fingerprint: entries added and
// evicted, for the matcher's index.
type change struct {
	addFiles, dropFiles []string
	addDirs, dropDirs   []string
	addTechs, dropTechs []string
}

func (c *change) empty() bool {
	return len(c.addFiles)+len(c.dropFiles)+len(c.addDirs)+len(c.dropDirs)+len(c.addTechs)+len(c.dropTechs) == 0
}

// isDirTool reports whether a tool's paths name directories, for a tool
// use that does not say what it did (no sdk.ToolKind): LS, List, Glob, CD
// and Tree. Every other tool's paths are files: telling them apart by
// looking at the disk would cost a system call per path on the hottest
// path in the host, and a path with a trailing slash is a directory
// whatever the tool.
func isDirTool(tool string) bool {
	for _, t := range [...]string{"ls", "list", "glob", "cd", "tree"} {
		if strings.EqualFold(tool, t) {
			return true
		}
	}
	return false
}

// pathsAreDirs reports whether the paths of u without a trailing slash
// are directories, as sdk.ToolKind defines: a listing's are, a search's
// are unless one of its paths ends in "/" (it then names files too), and
// every other kind's are files. A tool use of no known kind is judged by
// its tool's name.
func pathsAreDirs(u *sdk.ToolUse) bool {
	switch u.Kind {
	case sdk.KindList:
		return true
	case sdk.KindSearch:
		for _, p := range u.Paths {
			if strings.HasSuffix(p, "/") {
				return false
			}
		}
		return true
	case sdk.KindRead, sdk.KindWrite, sdk.KindExec, sdk.KindOther:
		return false
	}
	return isDirTool(u.Tool)
}

// observe records a tool use. Only tool uses that happened count: a denied
// or failed read taught the session nothing.
func (f *fingerprint) observe(u sdk.ToolUse, workspace string) change {
	var c change
	// A command that ran and failed (a failing test, a build error)
	// still worked where it names; any other use that failed or was
	// denied taught nothing.
	if u.Outcome != sdk.OutcomeOK && (u.Outcome != sdk.OutcomeError || u.Kind != sdk.KindExec) {
		return c
	}
	isDir := pathsAreDirs(&u)
	for _, raw := range u.Paths {
		if raw == "" || raw == "/" && filepath.Clean(workspace) != "/" {
			continue // no path, or the file system's root, outside the workspace
		}
		p := relPath(raw, workspace)
		dir := p
		if !isDir && !strings.HasSuffix(raw, "/") && p != "." {
			// A file seen before has had its technology noted.
			if f.files.touch(p, &c.addFiles, &c.dropFiles) {
				if t := sdk.TechnologyOf(p); t != "" {
					f.techs.touch(t, &c.addTechs, &c.dropTechs)
				}
			}
			dir = parent(p)
		}
		// The directory the session worked in, the workspace root "." like
		// any other (a session that read main.go worked in "."), but not
		// its ancestors: the matcher derives those, and tells a session
		// that worked in src/models from one that worked in src. The root
		// of the file system is no directory of the workspace.
		if dir != "/" {
			f.dirs.touch(dir, &c.addDirs, &c.dropDirs)
		}
	}
	for _, t := range u.Technologies {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			f.techs.touch(t, &c.addTechs, &c.dropTechs)
		}
	}
	return c
}

// expect records the hints of a task placed on the session, normalized
// (normalizeHints), as if the session had used them: placement is how
// the session's next tool uses are predicted, and until they arrive the
// hints are the best account of what it works on. Without it, a task
// placed right after another on the same package, here or on another
// host (from the summary this host publishes), would not see the first
// one's session as knowing the package until the agent's tool uses
// came back.
func (f *fingerprint) expect(h matcher.Hints) change {
	var c change
	for _, p := range h.Files {
		if p == "" || p == "/" {
			continue
		}
		if f.files.touch(p, &c.addFiles, &c.dropFiles) {
			if t := sdk.TechnologyOf(p); t != "" {
				f.techs.touch(t, &c.addTechs, &c.dropTechs)
			}
		}
		if d := parent(p); d != "/" {
			f.dirs.touch(d, &c.addDirs, &c.dropDirs)
		}
	}
	for _, d := range h.Dirs {
		if d != "" && d != "/" {
			f.dirs.touch(d, &c.addDirs, &c.dropDirs)
		}
	}
	for _, t := range h.Techs {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			f.techs.touch(t, &c.addTechs, &c.dropTechs)
		}
	}
	return c
}

// parent is path.Dir for a normalized path, without cleaning it again.
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	}
	return p[:i]
}

// relPath makes p relative to the workspace, normalized as the matcher
// does. A path outside the workspace stays absolute.
func relPath(p, workspace string) string {
	if filepath.IsAbs(p) && workspace != "" {
		if rel, err := filepath.Rel(workspace, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			p = rel
		}
	}
	if clean(p) {
		return p
	}
	return matcher.NormalizePath(filepath.ToSlash(p))
}

// clean reports whether p is a relative slash path that normalizing would
// leave as it is, which agents' paths usually are: checking is cheaper
// than cleaning.
func clean(p string) bool {
	if p == "" || p[0] == '/' || p[len(p)-1] == '/' || filepath.Separator != '/' {
		return false
	}
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// normalizeHints puts a task's hints in the form the fingerprint uses.
func normalizeHints(h sdk.Hints, workspace string) matcher.Hints {
	var out matcher.Hints
	for _, f := range h.Files {
		out.Files = append(out.Files, relPath(f, workspace))
	}
	for _, d := range h.Directories {
		out.Dirs = append(out.Dirs, relPath(d, workspace))
	}
	out.Techs = h.Technologies
	return out
}

// lruSet is a bounded set that evicts its least recently touched member.
type lruSet struct {
	lru     *simplelru.LRU[string, struct{}]
	evicted []string
}

func newLRUSet(size int) *lruSet {
	s := &lruSet{}
	s.lru, _ = simplelru.NewLRU[string, struct{}](max(size, 1), func(k string, _ struct{}) {
		s.evicted = append(s.evicted, k)
	})
	return s
}

// touch marks k as just used, recording it in added if it is new and
// anything it pushed out in dropped. It reports whether k was new.
func (s *lruSet) touch(k string, added, dropped *[]string) bool {
	if _, ok := s.lru.Get(k); ok { // Get refreshes its recency
		return false
	}
	s.evicted = s.evicted[:0]
	s.lru.Add(k, struct{}{})
	*added = append(*added, k)
	*dropped = append(*dropped, s.evicted...)
	return true
}

// keys lists the members, least recently used first.
func (s *lruSet) keys() []string { return s.lru.Keys() }

// load restores members in recency order, least recent first.
func (s *lruSet) load(keys []string) {
	for _, k := range keys {
		s.lru.Add(k, struct{}{})
	}
}
