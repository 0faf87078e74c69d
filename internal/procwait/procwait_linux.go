package procwait

import (
	"errors"
	"os"
	"strconv"
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

// Alive reports whether pid exists and is not a zombie. A stat that
// cannot be read is a process that is gone; one that cannot be parsed
// (no kernel writes one) is of a process that exists.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	st, err := ParseStat(pid, string(b))
	return err != nil || st.State != 'Z'
}
