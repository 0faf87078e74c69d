//go:build !unix

package guard

import (
	"io/fs"
	"os"
)

// readDir lists a directory for glob expansion; only a directory is
// opened.
func readDir(dir string) ([]fs.DirEntry, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fs.ErrNotExist
	}
	return os.ReadDir(dir)
}
