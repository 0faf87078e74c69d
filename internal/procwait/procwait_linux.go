// Package procwait tells when a process is gone, for the checks and tests
// that must see a plugin exit (an orphan after its host's SIGKILL, a
// plugin after shutdown) without polling on a timer where the kernel can
// say it.
package procwait

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Gone reports whether process pid has exited within d. It waits on a
// pidfd, so the answer comes the moment the process is gone; a zombie
// counts as gone (its parent has not reaped it yet, but it runs nothing).
func Gone(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		if err == unix.EINTR {
			continue
		}
		return n > 0 || !Alive(pid)
	}
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
