package host

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
)

// fingerprint is a session's context: the files, directories and
// technologies it touched, each a bounded set that evicts its least
// recently used entry, so a long session's memory stays flat.
type fingerprint struct {
	files, dirs, techs *lruSet
}

func newFingerprint(limits config.Fingerprint) *fingerprint {
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

// dirTools are tools whose paths name directories. Every other tool's
// paths are files: telling them apart by looking at the disk would cost a
// system call per path on the hottest path in the host, and a path with a
// trailing slash is a directory whatever the tool.
var dirTools = map[string]bool{"ls": true, "list": true, "glob": true, "cd": true, "tree": true}

// extTechs names the technology of a file by its extension.
var extTechs = map[string]string{
	".go": "go", ".s": "asm", ".py": "python", ".ts": "typescript", ".tsx": "typescript",
	".js": "javascript", ".jsx": "javascript", ".rs": "rust", ".java": "java", ".kt": "kotlin",
	".rb": "ruby", ".c": "c", ".h": "c", ".cc": "c++", ".cpp": "c++", ".hpp": "c++",
	".cs": "csharp", ".swift": "swift", ".php": "php", ".sql": "sql", ".sh": "shell",
	".tf": "terraform", ".hcl": "hcl", ".proto": "protobuf", ".md": "markdown",
	".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml", ".html": "html", ".css": "css",
}

// observe records a tool use. Only tool uses that happened count: a denied
// or failed read taught the session nothing.
func (f *fingerprint) observe(u sdk.ToolUse, workspace string) change {
	var c change
	if u.Outcome != sdk.OutcomeOK {
		return c
	}
	isDir := dirTools[strings.ToLower(u.Tool)]
	for _, raw := range u.Paths {
		p := relPath(raw, workspace)
		if p == "." || p == "" {
			continue
		}
		dir := p
		if !isDir && !strings.HasSuffix(raw, "/") {
			f.files.touch(p, &c.addFiles, &c.dropFiles)
			if t, ok := extTechs[strings.ToLower(path.Ext(p))]; ok {
				f.techs.touch(t, &c.addTechs, &c.dropTechs)
			}
			dir = path.Dir(p)
		}
		// A session that worked in src/models also knows src: the matcher
		// gives partial credit for ancestors.
		for d := dir; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			f.dirs.touch(d, &c.addDirs, &c.dropDirs)
		}
	}
	for _, t := range u.Technologies {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			f.techs.touch(t, &c.addTechs, &c.dropTechs)
		}
	}
	return c
}

// relPath makes p relative to the workspace, normalized as the matcher
// does. A path outside the workspace stays absolute.
func relPath(p, workspace string) string {
	if filepath.IsAbs(p) && workspace != "" {
		if rel, err := filepath.Rel(workspace, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			p = rel
		}
	}
	return matcher.NormalizePath(filepath.ToSlash(p))
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
// anything it pushed out in dropped.
func (s *lruSet) touch(k string, added, dropped *[]string) {
	if s.lru.Contains(k) {
		s.lru.Get(k) // refresh its recency
		return
	}
	s.evicted = s.evicted[:0]
	s.lru.Add(k, struct{}{})
	*added = append(*added, k)
	*dropped = append(*dropped, s.evicted...)
}

// keys lists the members, least recently used first.
func (s *lruSet) keys() []string { return s.lru.Keys() }

// load restores members in recency order, least recent first.
func (s *lruSet) load(keys []string) {
	for _, k := range keys {
		s.lru.Add(k, struct{}{})
	}
}
