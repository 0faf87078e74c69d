package guard

import (
	"path"
	"strings"
)

// NamedByCommand returns the paths a shell command names that exist, as
// the guards' shell reading finds them (words, redirections, the
// directories a command changes to), for a session's fingerprint: a
// Bash `cat pkg/a.go` or `grep -rn X pkg` teaches what a Read or a
// search would. Each is absolute and clean (read against cwd, and the
// directories the command changes to), not followed through symbolic
// links; Dir is set for a directory. Words that name nothing on disk
// (flags, patterns, the program, a path that does not exist) are left
// out, and so are cwd itself, "/", and devices (/dev, /proc), which
// every command may be said to touch: naming them would make every
// session look alike.
func NamedByCommand(command, cwd string) []Target {
	r := defaultResolver()
	dir := absDir(cwd)
	var x extraction
	r.shell(&x, command, dir)
	var out []Target
	seen := make(map[string]bool)
	for _, raw := range x.raws {
		if strings.Contains(raw.p, unknown) {
			continue
		}
		cwds := raw.cwds
		if path.IsAbs(raw.p) || len(cwds) == 0 {
			cwds = []string{dir}
		}
		for _, c := range cwds {
			p := path.Clean(join(c, raw.p))
			if p == "/" || p == dir || seen[p] || strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/") {
				continue
			}
			res := r.resolve(p)
			if !res.exists {
				continue
			}
			seen[p] = true
			out = append(out, Target{Path: p, Real: p, Dir: res.dir, Access: raw.access, From: raw.from})
			break
		}
	}
	return out
}
