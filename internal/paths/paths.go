// Package paths holds the path helpers that the CLI, the daemon's
// client, runs, the config and confinement share.
package paths

import (
	"path/filepath"
	"strings"
)

// Abs is p made absolute against the current directory, so that a path
// recorded or shown means the same from any directory; p itself when it
// is empty or cannot be made absolute.
func Abs(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Within reports whether path is dir or lies beneath it. Both are
// absolute and clean (Abs makes them so); "/" holds every path.
func Within(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}
