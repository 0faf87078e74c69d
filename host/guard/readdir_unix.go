//go:build unix

package guard

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDir lists a directory for glob expansion without blocking: it
// opens with O_DIRECTORY and O_NONBLOCK, so that a name that is a FIFO
// (or a link to one, such as /dev/stdin) fails at once instead of
// waiting for a writer — a shell command is read, never run, and reading
// it must not hang.
func readDir(dir string) ([]fs.DirEntry, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	return f.ReadDir(-1)
}
