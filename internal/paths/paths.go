// Package paths holds the one path helper that the CLI, the daemon's
// client and runs share.
package paths

import "path/filepath"

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
